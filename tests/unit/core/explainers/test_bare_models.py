"""Every explainer takes a bare river model as IPFI does, and refuses anything else alike."""

from __future__ import annotations

import itertools

import pytest
import streamxai
from river import datasets, linear_model, tree
from streamxai.core.losses import BrierOf
from streamxai.core.model import ModelFunction

PHISHING = ["empty_server_form_handler", "popup_window", "https", "request_from_other_domain",
            "anchor_from_other_domain", "is_popular", "long_url", "age_of_domain", "ip_in_url"]
REFUSAL = "has neither predict_one/predict_proba_one nor __call__; pass a river model or a callable"


def _trained(model, n=200):
    for x, y in itertools.islice(datasets.Phishing(), n):
        model.learn_one(x, y)
    return model


def _run(explainer, n=60):
    values = None
    for x, y in itertools.islice(datasets.Phishing(), 200, 200 + n):
        values = explainer.explain_one(x, float(y))
    return values


def _regression_explainers(model_fn):
    return [
        streamxai.IPFI(model_fn, "squared", PHISHING, alpha=0.1, seed=1),
        streamxai.ISAGE(model_fn, "squared", PHISHING, alpha=0.1, seed=1),
        streamxai.IPDP(model_fn, PHISHING, alpha=0.1, grid_size=3, seed=1),
    ]


def test_a_bare_regressor_explains_as_its_value_in_every_explainer():
    model = _trained(linear_model.LinearRegression())
    bare = _regression_explainers(model)
    wrapped = _regression_explainers(ModelFunction(model, output="value"))
    for b, w in zip(bare, wrapped, strict=True):
        assert b.model_fn.model is model and b.model_fn.output == "value"
        assert _run(b) == _run(w), b.name
        assert any(v != 0.0 for v in b.values.values()), b.name


def test_a_bare_classifier_explains_what_the_loss_scores():
    model = _trained(tree.HoeffdingTreeClassifier(grace_period=50))
    ipfi = streamxai.IPFI(model, "zero_one", PHISHING, alpha=0.1, seed=1)
    assert ipfi.model_fn.output == "label"
    isage = streamxai.ISAGE(model, "cross_entropy", PHISHING, alpha=0.1, seed=1)
    assert isage.model_fn.output == "proba"
    of_one = streamxai.ISAGE(model, BrierOf(True), PHISHING, alpha=0.1, seed=1)
    assert (of_one.model_fn.output, of_one.model_fn.target_class) == ("proba_of", True)
    wrapped = streamxai.ISAGE(ModelFunction(model, output="proba"), "cross_entropy", PHISHING, alpha=0.1, seed=1)
    for x, y in itertools.islice(datasets.Phishing(), 200, 260):
        assert isage.explain_one(x, y) == wrapped.explain_one(x, y)


def test_a_bare_classifier_that_cannot_be_averaged_is_refused_with_the_way_to_wrap_it():
    model = tree.HoeffdingTreeClassifier()
    with pytest.raises(ValueError, match=r"mean of labels is undefined.*loss='brier' or 'cross_entropy'"):
        streamxai.ISAGE(model, "zero_one", PHISHING)


def test_a_bare_classifier_in_ipdp_shows_the_probability_of_the_positive_class_or_names_its_classes():
    """Phishing's labels are booleans: class 1 is True. A model of other classes is refused at its
    first explanation with the classes it predicts."""
    model = _trained(tree.HoeffdingTreeClassifier(grace_period=50))
    bare = streamxai.IPDP(model, PHISHING, alpha=0.1, grid_size=3, seed=1)
    wrapped = streamxai.IPDP(ModelFunction(model, output="proba_of", target_class=True), PHISHING, alpha=0.1,
                             grid_size=3, seed=1)
    assert (bare.model_fn.output, bare.model_fn.target_class) == ("proba_of", 1)
    assert _run(bare) == _run(wrapped) and any(v != 0.0 for v in bare.values.values())
    named = tree.HoeffdingTreeClassifier()
    ipdp = streamxai.IPDP(named, ["a"])
    ipdp.explain_one({"a": 0.0})  # nothing learned yet: nothing to check
    named.learn_one({"a": 0.0}, "DOWN")
    named.learn_one({"a": 1.0}, "UP")
    with pytest.raises(ValueError, match=r"class 1, which the model does not predict \(its classes: 'DOWN', 'UP'\); "
                                         r"pass target_class="):
        ipdp.explain_one({"a": 0.5})
    assert streamxai.IPDP(named, ["a"], target_class="UP").explain_one({"a": 0.5}) == {"a": 0.0}


@pytest.mark.parametrize("make", [
    lambda m: streamxai.IPFI(m, "zero_one", PHISHING),
    lambda m: streamxai.ISAGE(m, "zero_one", PHISHING),
    lambda m: streamxai.IPDP(m, PHISHING),
    lambda m: streamxai.LocalShapley(m, PHISHING),
], ids=["ipfi", "isage", "ipdp", "local"])
@pytest.mark.parametrize("thing", [42, "river.tree.HoeffdingTreeClassifier"], ids=["int", "import path"])
def test_anything_else_is_refused_with_the_same_help(make, thing):
    with pytest.raises(TypeError, match=REFUSAL):
        make(thing)
