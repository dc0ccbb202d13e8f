"""Build a stream's model from settings: an import path, keyword arguments and a seed, so
replicas built from the same spec and fed the same events stay identical.

>>> m = build_model("river.linear_model.LogisticRegression", {})
>>> type(m).__name__
'LogisticRegression'
>>> build_model("river.nope.Model", {})
Traceback (most recent call last):
...
streamxai.schemas.errors.ConfigError: model 'river.nope.Model' cannot be imported: No module named 'river.nope'; give a full import path such as river.forest.ARFClassifier
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from streamxai.schemas import ConfigError
from streamxai.schemas.features import shown

__all__ = ["build_model", "check_takes_strings", "check_task", "model_task",
           "default_model_params", "DEFAULT_MODEL", "DEFAULT_MODEL_PARAMS", "LOSS_TASKS"]

#: the default model and its keyword arguments
DEFAULT_MODEL = "river.tree.HoeffdingAdaptiveTreeClassifier"
DEFAULT_MODEL_PARAMS = {"grace_period": 50}


def _resolve(path: str) -> Any:
    module, _, name = path.rpartition(".")
    if not module:
        raise ConfigError(f"model {path!r} is not an import path such as river.forest.ARFClassifier")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        top = path.partition(".")[0]
        if isinstance(e, ModuleNotFoundError) and e.name == top and top != "river":
            # a module of the user's own: a console script's path holds its bin folder, not the current one
            raise ConfigError(
                f"model {path!r} cannot be imported: {e}; a module of your own must be importable by every "
                f"worker: set PYTHONPATH to the folder that holds {top} (PYTHONPATH=/path/to/folder streamxai "
                "worker ...) or install it into the worker's virtualenv"
            ) from None
        raise ConfigError(
            f"model {path!r} cannot be imported: {e}; give a full import path such as "
            "river.forest.ARFClassifier"
        ) from None


def default_model_params(path: str) -> dict[str, Any]:
    """The ``model_params`` of a model given without them: :data:`DEFAULT_MODEL_PARAMS` for a
    model that takes ``grace_period``, ``{}`` for any other (and for a path that does not import).

    >>> default_model_params("river.tree.HoeffdingTreeClassifier"), default_model_params("river.linear_model.LinearRegression")
    ({'grace_period': 50}, {})
    """
    if path == DEFAULT_MODEL:  # known without importing river (commands that build no model start faster)
        return dict(DEFAULT_MODEL_PARAMS)
    try:
        params = inspect.signature(_resolve(path)).parameters
    except Exception:  # a model that does not import or has no signature: building it says what is wrong
        return {}
    return dict(DEFAULT_MODEL_PARAMS) if all(k in params for k in DEFAULT_MODEL_PARAMS) else {}


#: the task each loss of the settings scores
LOSS_TASKS = {"zero_one": "classification", "brier": "classification", "cross_entropy": "classification",
              "squared": "regression", "absolute": "regression"}


def model_task(path: str) -> str | None:
    """``"classification"`` for a river classifier class, ``"regression"`` for a river regressor
    class; ``None`` when the path does not say: a function of one's own that builds the model, a
    class that is neither or both, or a path that does not import (building it says why).

    >>> model_task("river.linear_model.LinearRegression"), model_task("river.forest.ARFClassifier")
    ('regression', 'classification')
    """
    if path == DEFAULT_MODEL:  # known without importing river
        return "classification"
    try:
        found = _resolve(path)
        from river import base
    except Exception:
        return None
    if not isinstance(found, type):
        return None
    classifier, regressor = issubclass(found, base.Classifier), issubclass(found, base.Regressor)
    if classifier == regressor:
        return None
    return "classification" if classifier else "regression"


def check_task(task: str, model: str, loss: str, output: str) -> None:
    """Refuse a ``model``, ``output`` or ``loss`` (a name of :data:`LOSS_TASKS`) that cannot serve
    ``task``, naming the settings to change. A loss of another name and a model whose task its
    path does not say (:func:`model_task`) are not judged here.

    >>> check_task("classification", "river.linear_model.LinearRegression", "squared", "label")
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: task is "classification" (its default), which model river.linear_model.LinearRegression (a regressor) and loss = "squared" (it scores numbers) do not fit: set task = "regression" with output = "value" for a regression, or model to a classifier and loss = "zero_one"
    """
    regression = task == "regression"
    wrong, fixes = [], []
    found = model_task(model)
    if found is not None and found != task:
        default = ", the default model" if model == DEFAULT_MODEL else ""
        wrong.append(f"model {model} (a {'classifier' if regression else 'regressor'}{default})")
        fixes.append("model to a regressor such as river.linear_model.LinearRegression" if regression
                     else "model to a classifier")
    if regression and output != "value":
        wrong.append(f'output = "{output}" (a class label)')
        fixes.append('output = "value"')
    found = LOSS_TASKS.get(loss) if isinstance(loss, str) else None
    if found is not None and found != task:
        wrong.append(f'loss = "{loss}" (it scores {"class labels" if regression else "numbers"})')
        fixes.append('loss = "squared" or "absolute"' if regression else 'loss = "zero_one"')
    if not wrong:
        return
    which = " and ".join([", ".join(wrong[:-1]), wrong[-1]] if len(wrong) > 1 else wrong)
    fix = " and ".join([", ".join(fixes[:-1]), fixes[-1]] if len(fixes) > 1 else fixes)
    if regression:
        raise ConfigError(f'task = "regression" does not fit {which}: set {fix}, or task = "classification"')
    raise ConfigError(f'task is "{task}" (its default), which {which} do{"es" if len(wrong) == 1 else ""} not fit: '
                      f'set task = "regression" with output = "value" for a regression, or {fix}')


def build_model(path: str, params: dict[str, Any], seed: int | None = None) -> Any:
    """``path(**params)``, with ``seed=seed`` added when the constructor takes a seed."""
    cls = _resolve(path)
    kwargs = dict(params)
    if seed is not None and "seed" not in kwargs:
        try:
            if "seed" in inspect.signature(cls).parameters:
                kwargs["seed"] = seed
        except (TypeError, ValueError):
            pass
    try:
        model = cls(**kwargs)
    except TypeError as e:
        unknown, takes = _unknown_params(cls, params)
        what = (f"takes no parameter {', '.join(map(repr, unknown))} of model_params {shown(params)} (it takes "
                f"{', '.join(takes) or 'none'})" if unknown else f"rejected its parameters {sorted(kwargs)}: {e}")
        raise ConfigError(f"model {path} {what}; set model_params to keyword arguments it takes (model_params = {{}} "
                          "for its own defaults)") from None
    if not hasattr(model, "learn_one"):
        raise ConfigError(f"model {path} has no learn_one; streamxai explains online (river) models")
    return model


def _unknown_params(cls: Any, params: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The names of ``params`` the constructor ``cls`` does not take, and the names it takes; ``([], [])``
    when its signature does not say (none, or ``**kwargs``).

    >>> from river import linear_model
    >>> unknown, takes = _unknown_params(linear_model.LinearRegression, {"grace_period": 50, "l2": 0.1})
    >>> unknown, "l2" in takes
    (['grace_period'], True)
    """
    try:
        found = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return [], []
    if any(p.kind is p.VAR_KEYWORD for p in found):
        return [], []
    takes = [p.name for p in found if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return sorted(k for k in params if k not in takes), takes


#: the dry run's events: two of each class (a regression's targets 0 and 1), features 0/1 or "a"/"b"
_DRY_EVENTS = 4


def check_takes_strings(path: str, params: dict[str, Any], seed: int | None, features: list[str],
                        categorical: list[str], task: str) -> None:
    """Refuse a model that cannot learn or predict an event whose ``categorical`` features are
    strings, found by a dry run of a few events on fresh copies (river's models do not declare
    what they accept). A model that fails on numbers as well is not judged here.

    >>> check_takes_strings("river.tree.HoeffdingTreeClassifier", {}, 1, ["a", "c"], ["c"], "classification")
    >>> check_takes_strings("river.linear_model.LogisticRegression", {}, 1, ["a", "c"], ["c"], "classification")
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: river.linear_model.LogisticRegression cannot take the string value of categorical feature 'c' (a dry run of 4 events raised TypeError: VectorDict values must be real numbers): use a model that takes strings (river.tree.HoeffdingTreeClassifier, HoeffdingAdaptiveTreeClassifier, river.forest.ARFClassifier; for regression river.tree.HoeffdingTreeRegressor with model_params = {leaf_prediction = "mean"}), or an import path of your own function returning a pipeline with river.preprocessing.OneHotEncoder before the model; or, if the feature's values are integer codes the model may take as numbers, leave it out of categorical
    """
    if not categorical:
        return

    def dry(strings: bool) -> Exception | None:
        model = build_model(path, params, seed)
        try:
            for i in range(_DRY_EVENTS):
                x = {f: (("a", "b")[i % 2] if strings else i % 2) if f in categorical else float(i % 2)
                     for f in features}
                model.learn_one(x, bool(i % 2) if task == "classification" else float(i % 2))
                model.predict_one(x)
        except Exception as e:  # any error: a model may raise what it likes on a value it cannot take
            return e
        return None

    if dry(strings=False) is not None:
        return
    err = dry(strings=True)
    if err is None:
        return
    names = ", ".join(repr(c) for c in categorical)
    plural = "s" if len(categorical) > 1 else ""
    raise ConfigError(
        f"{path} cannot take the string value of categorical feature{plural} {names} (a dry run of {_DRY_EVENTS} "
        f"events raised {type(err).__name__}: {str(err)[:200]}): use a model that takes strings "
        "(river.tree.HoeffdingTreeClassifier, HoeffdingAdaptiveTreeClassifier, river.forest.ARFClassifier; for "
        "regression river.tree.HoeffdingTreeRegressor with model_params = {leaf_prediction = \"mean\"}), or an "
        "import path of your own function returning a pipeline with river.preprocessing.OneHotEncoder before the "
        "model; or, if the feature's values are integer codes the model may take as numbers, leave it out of "
        "categorical")
