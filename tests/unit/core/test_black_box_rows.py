"""The black-box path's many-row evaluations make the same calls, in the same order, with the same values and
types as calling the model row by row."""

from __future__ import annotations

import numpy as np
import pytest
from river import linear_model
from streamxai.core.model import ModelFunction, chain_rows

X = {"a": 0.5, "b": -1.0, "c": 2.0}
ROWS = [X, {"a": 1.5, "b": 0.0, "c": 1.0}, {"a": -0.5, "b": 3.0, "c": 0.25}]


def trained(output: str):
    """A logistic regression (a linear regression for ``value``) after 30 events."""
    model = linear_model.LinearRegression() if output == "value" else linear_model.LogisticRegression()
    for i in range(30):
        x = {"a": i % 5 / 2.0, "b": (i % 3) - 1.0, "c": i % 7 / 3.0}
        model.learn_one(x, float(i % 4) if output == "value" else i % 5 > 1)
    return model


def one_by_one(fn: ModelFunction, rows: list[dict]) -> list:
    return [fn(r) for r in rows]


@pytest.mark.parametrize("output", ["label", "value", "proba", "proba_of"])
def test_rows_of_a_river_model_as_calls_one_by_one(output):
    fn = ModelFunction(trained(output), output=output, target_class=True if output == "proba_of" else None, fast_path="off")
    many = fn.many(ROWS)
    single = one_by_one(fn, ROWS)
    assert many == single
    assert [type(p) for p in many] == [type(p) for p in single]
    pairs = [("a", 3.0), ("c", -2.0)]
    expected = [fn(X), *(fn({**X, f: v}) for f, v in pairs)]
    assert fn.replaced(X, pairs, with_x=True) == expected
    assert fn.coalitions(X, ["b", "a", "c"], ROWS[1:]) == one_by_one(fn, [X, *chain_rows(X, ["b", "a", "c"], ROWS[1:])])


@pytest.mark.parametrize("output", ["value", "proba_of"])
def test_curves_of_a_river_model_as_calls_one_by_one(output):
    fn = ModelFunction(trained(output), output=output, target_class=True if output == "proba_of" else None,
                       fast_path="off")
    grids = np.array([[0.0, 1.0, 2.0], [-1.0, 0.5, 4.0]])
    out = fn.curves(X, ["a", "c"], grids)
    expected = [[fn({**X, f: v}) for v in row] for f, row in zip(["a", "c"], grids.tolist(), strict=True)]
    assert out.dtype == float and out.tolist() == expected
    assert fn.n_evaluations == 6 + 6


def test_curves_of_a_plain_callable_convert_each_output_to_float():
    calls = []

    def f(x):
        calls.append(dict(x))
        return int(x["a"] > 0.5)  # an int: the curve holds its float

    fn = ModelFunction(f, output="value")
    out = fn.curves(X, ["a"], np.array([[0.0, 1.0]]))
    assert out.tolist() == [[0.0, 1.0]] and out.dtype == float
    assert calls == [{**X, "a": 0.0}, {**X, "a": 1.0}]
    with pytest.raises(TypeError):  # None is no number (numpy alone would read it as nan)
        ModelFunction(lambda x: None, output="value").curves(X, ["a"], np.array([[0.0, 1.0]]))


def test_a_model_function_pickled_before_the_rows_function_restores_and_evaluates_rows():
    """Its pickled state leaves the rows function out (it is rebuilt on restore, never
    written): a state without it, as older checkpoints hold, restores and evaluates rows."""
    fn = ModelFunction(trained("proba_of"), output="proba_of", target_class=True, fast_path="off")
    state = fn.__getstate__()
    assert not {"_rows_fn", "_rows_floats", "_fn", "_fast"} & set(state)
    old = ModelFunction.__new__(ModelFunction)
    old.__setstate__(dict(state))
    assert old.many(ROWS) == one_by_one(fn, ROWS)
    assert old.curves(X, ["a"], np.array([[0.0, 1.0]])).tolist() == [[fn({**X, "a": 0.0}), fn({**X, "a": 1.0})]]
