"""ExplainerSpec carries typed, checked parameters whose defaults are the explainers' own."""

import inspect

import pytest
from streamxai.core.explainers import IPDP, IPFI, ISAGE
from streamxai.core.stream import ExplainerSpec

EXPLAINERS = {"ipfi": IPFI, "isage": ISAGE, "ipdp": IPDP}


@pytest.mark.parametrize("name", sorted(EXPLAINERS))
def test_defaults_are_the_explainers_defaults(name):
    signature = inspect.signature(EXPLAINERS[name])
    spec = ExplainerSpec(name)
    for param, value in spec.params.items():
        assert signature.parameters[param].default == value, f"{name}.{param}"


@pytest.mark.parametrize("bad", [{"alpha": 0.0}, {"alpha": 1.5}, {"alpha": True}, {"storage_size": 0},
                                 {"n_inner_samples": 2.0}, {"grid_size": True}])
def test_bad_values_are_refused_when_the_spec_is_made(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        ExplainerSpec("isage" if "grid_size" not in bad else "ipdp", **bad)


def test_a_parameter_of_another_explainer_is_refused():
    with pytest.raises(ValueError, match="n_inner_samples=4 applies to isage, not to ipdp"):
        ExplainerSpec("ipdp", n_inner_samples=4)


def test_categorical_becomes_a_tuple():
    assert ExplainerSpec("ipdp", categorical=["car"]).categorical == ("car",)
    with pytest.raises(TypeError, match="sequence of feature names"):
        ExplainerSpec("ipdp", categorical="car")
