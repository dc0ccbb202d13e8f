"""A model, output or loss made for the other task is refused when the settings load."""

from __future__ import annotations

import pytest
from streamxai.cli import main
from streamxai.schemas import ConfigError
from streamxai.settings import load_settings

LR = "river.linear_model.LinearRegression"


@pytest.mark.parametrize("given, fragment", [
    ({"model": LR, "loss": "squared"},
     f'task is "classification" (its default), which model {LR} (a regressor) and loss = "squared" (it scores '
     'numbers) do not fit: set task = "regression" with output = "value" for a regression, or model to a '
     'classifier and loss = "zero_one"'),
    ({"loss": "absolute"}, 'which loss = "absolute" (it scores numbers) does not fit'),
    ({"model": LR}, f"which model {LR} (a regressor) does not fit"),
    ({"task": "regression", "output": "value", "loss": "squared", "model": "river.forest.ARFClassifier"},
     'task = "regression" does not fit model river.forest.ARFClassifier (a classifier): set model to a regressor '
     'such as river.linear_model.LinearRegression, or task = "classification"'),
    ({"task": "regression", "output": "value", "model": LR},
     'task = "regression" does not fit loss = "zero_one" (it scores class labels): set loss = "squared" or '
     '"absolute", or task = "classification"'),
    ({"task": "regression", "output": "value", "model": LR, "loss": "cross_entropy"}, 'loss = "cross_entropy"'),
    ({"task": "regression", "loss": "squared", "model": LR}, 'does not fit output = "label" (a class label): set '
                                                             'output = "value"'),
    ({"task": "regression"}, "(a classifier, the default model)"),
])
def test_settings_made_for_the_other_task_are_refused_at_load(given, fragment):
    with pytest.raises(ConfigError) as e:
        load_settings(None, features="a", **given)
    assert str(e.value).startswith("setting ") and fragment in str(e.value), e.value


@pytest.mark.parametrize("given", [
    {},
    {"task": "regression", "output": "value", "loss": "squared", "model": LR},
    {"task": "regression", "output": "value", "loss": "absolute", "model": "river.tree.HoeffdingTreeRegressor"},
    {"loss": "cross_entropy", "model": "river.linear_model.LogisticRegression"},
    {"model": "tests.helpers.onehot_models.OneHotLogisticRegression"},  # a function: not judged by its path
])
def test_settings_that_fit_their_task_load(given):
    load_settings(None, features="a", **given)


def test_an_old_regression_profile_without_task_is_refused_by_config_naming_its_table(tmp_path, capsys):
    # the form before `task` existed: a regression said by its target, model and loss alone
    f = tmp_path / "old.toml"
    f.write_text(f'features = ["a"]\n\n[streams."reg-*"]\ntarget = "number"\nmodel = "{LR}"\nloss = "squared"\n')
    assert main(["config", "--settings", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f'streamxai: error: settings file {f}: [streams."reg-*"]: setting task is "classification"')
    assert 'set task = "regression"' in err and err.count("\n") == 1, err
