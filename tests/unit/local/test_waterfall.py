"""A local explanation's waterfall, ``tail local-explanations`` lines and ``plot --local`` PNG carry the
message's numbers, the bars adding up from the base value to the prediction."""

from __future__ import annotations

import math

import pytest
from helpers.handler_inputs import run_handlers, settings
from streamxai.local.demo_stream import agrawal_events
from streamxai.local.waterfall import find_local, local_text, parse_local, value_text, waterfall


@pytest.fixture(scope="module")
def messages():
    """A worker's local explanations of 300 agrawal events (every feature, and the largest 3)."""
    events = list(agrawal_events("w", 300, seed=6))
    every = run_handlers(settings(local=True), events)["local-explanations"]
    top = run_handlers(settings(local=True, local_top_k=3), events)["local-explanations"]
    return every, top


def _chained(w, msg):
    rows = w["rows"]
    assert rows[-1]["start"] == msg["base"] == w["base"]  # the lowest bar starts at the base value
    for upper, lower in zip(rows, rows[1:], strict=False):
        assert upper["start"] == lower["end"]  # each bar starts where the one below it ends
    for r in rows:
        assert r["end"] - r["start"] == pytest.approx(r["value"], abs=1e-12)
    assert rows[0]["end"] == pytest.approx(msg["prediction"], abs=1e-9)  # the top one ends at the prediction
    assert w["prediction"] == msg["prediction"]


def test_the_bars_are_the_message_s_values_from_the_base_value_to_the_prediction(messages):
    every, top = messages
    used = 0
    for msg in every + top:
        w = waterfall(parse_local(msg))
        _chained(w, msg)
        shown = {r["feature"]: r for r in w["rows"] if "others" not in r}
        assert {f: r["value"] for f, r in shown.items()} == msg["values"]  # as they came, not rounded
        assert all(r["x"] == msg["x"][f] for f, r in shown.items())
        values = [abs(r["value"]) for r in shown.values()]
        assert values == sorted(values, reverse=True)  # the largest on top
        others = [r for r in w["rows"] if "others" in r]
        if msg["rest"]:
            assert len(others) == 1 and others[0]["value"] == msg["rest"]
            assert others[0]["others"] == msg["n_features"] - len(msg["values"])
            used += 1
    assert used  # some messages left features out


def test_past_max_rows_the_smaller_features_share_one_bar(messages):
    every, _ = messages
    msg = max(every, key=lambda m: sum(1 for v in m["values"].values() if v))
    w = waterfall(parse_local(msg), max_rows=2)
    assert len(w["rows"]) == 3 and w["rows"][2]["others"] == len(msg["values"]) - 2
    ordered = sorted(msg["values"], key=lambda f: -abs(msg["values"][f]))
    assert [r["feature"] for r in w["rows"][:2]] == ordered[:2]
    assert w["rows"][2]["value"] == pytest.approx(sum(msg["values"][f] for f in ordered[2:]), abs=1e-12)
    _chained(w, msg)


def test_tail_s_lines_name_the_prediction_the_base_value_and_the_largest_features_with_their_values(messages):
    every, _ = messages
    msg = max(every, key=lambda m: abs(m["prediction"] - m["base"]))
    text = local_text(parse_local(msg), top=3)
    lines = text.splitlines()
    assert lines[0].startswith(f"stream w  seq {msg['seq']}  model version {msg['model_version']}  exact (tree)")
    assert f"prediction {msg['prediction']:.4f} (probability of {msg['target']})" in lines[1]
    assert f"base value {msg['base']:.4f} (mean over {msg['n_background']} recent events)" in lines[1]
    ordered = sorted(msg["values"], key=lambda f: -abs(msg["values"][f]))
    rows = lines[3:]
    assert len(rows) == 4 and rows[3].strip().startswith(f"{len(msg['values']) - 3} other features")
    for f, line in zip(ordered[:3], rows, strict=False):
        name, value, attribution = line.split()[:3]
        assert name == f and value == value_text(msg["x"][f])
        assert float(attribution) == pytest.approx(msg["values"][f], abs=5e-5)


def test_a_message_that_is_not_a_sum_of_numbers_is_not_shown():
    good = {"schema": "local_explanation/v1", "stream_id": "s", "seq": 1, "prediction": 0.5, "base": 0.25,
            "values": {"a": 0.25}, "method": "tree", "exact": True}
    assert parse_local(good)["values"] == {"a": 0.25}
    for bad in ({"values": {"a": "0.25"}}, {"values": {"a": math.nan}}, {"base": None}, {"prediction": "1"},
                {"seq": "1"}, {"rest": "x"}, {"schema": "local_explanation/v9"}, {"values": []}):
        assert parse_local({**good, **bad}) is None, bad
    # a long value is cut, a feature's value of another type is not carried into the page
    shown = parse_local({**good, "x": {"a": "y" * 500}})
    assert len(shown["x"]["a"]) == 40 and shown["x"]["a"].endswith("…")
    assert parse_local({**good, "x": {"a": {"nested": 1}}})["x"]["a"] is None


def test_an_event_is_found_by_its_event_id_or_its_seq():
    kept = [{"seq": 3, "event_id": "12"}, {"seq": 12, "event_id": None}, {"seq": 20, "event_id": "t-20"}]
    assert find_local(kept, None)["seq"] == 20
    assert find_local(kept, "12")["seq"] == 3  # an event_id first
    assert find_local(kept, "t-20")["seq"] == 20 and find_local(kept, "20")["seq"] == 20
    assert find_local(kept, "nope") is None and find_local([], None) is None


def test_the_plot_draws_the_waterfall_s_numbers(messages, tmp_path):
    from matplotlib import image as mpimg
    from streamxai.local.plot_local import bars, draw_waterfall, plot_local

    _, top = messages
    msg = max(top, key=lambda m: abs(m["rest"]))
    local = parse_local(msg)
    fig = draw_waterfall(local)
    rows = waterfall(local)["rows"]
    drawn = bars(fig)
    assert len(drawn) == len(rows) == 4
    for bar, r in zip(drawn, rows, strict=True):
        assert bar.get_x() == r["start"] and bar.get_x() + bar.get_width() == pytest.approx(r["end"], abs=1e-12)
    assert drawn[0].get_x() + drawn[0].get_width() == pytest.approx(msg["prediction"], abs=1e-9)
    assert drawn[-1].get_x() == msg["base"]
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    f = rows[0]["feature"]
    assert labels[0] == f"{f} = {value_text(msg['x'][f])}" and labels[-1] == f"{msg['n_features'] - 3} other features"
    import matplotlib.pyplot as plt

    plt.close(fig)
    png = plot_local(local, tmp_path / "w.png")
    assert mpimg.imread(png).shape[0] > 200


def test_the_docs_show_what_tail_prints():
    """The block of the explainers page is what ``local_text`` prints for the message it describes."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs/pages/concepts/explainers.md").read_text()
    shown = page.split("```text\n", 1)[1].split("```", 1)[0].rstrip("\n")
    msg = {"schema": "local_explanation/v1", "stream_id": "cards-eu", "seq": 4120, "position": 4120,
           "model_version": 4120, "target": 1, "prediction": 0.912, "base": 0.084, "method": "forest", "exact": True,
           "n_background": 100, "event_id": "txn-88121", "rest": 0.016, "n_features": 8,
           "values": {"amount": 0.513, "merchant": 0.201, "hour": 0.14, "country": -0.042},
           "x": {"amount": 4999, "merchant": "m-771", "hour": 3, "country": "NZ"}}
    assert shown == local_text(parse_local(msg))
    from streamxai.local.dashboard.state import LISTED_LOCALS
    from streamxai.local.output_reader import MAX_LOCALS

    assert f"newest {MAX_LOCALS} local explanations" in page and f"(the\nnewest {LISTED_LOCALS})" in page


def test_a_notebook_s_explanation_is_shown_as_a_worker_s(tmp_path):
    """``local_of`` turns ``LocalShapley``'s last explanation into the views' shape: the same
    values, base value and prediction, the event's values, bars from the base to the prediction."""
    import random

    import streamxai
    from river import tree
    from streamxai.local.plot_local import bars, draw_waterfall
    from streamxai.local.waterfall import local_of

    model = tree.HoeffdingTreeClassifier(grace_period=30)
    local = streamxai.LocalShapley(model, ["a", "b", "c"], storage_size=50, seed=1)
    gen = random.Random(0)
    for _ in range(800):
        x = {"a": gen.random(), "b": gen.random(), "c": gen.random()}
        local.learn_one(x)
        model.learn_one(x, x["a"] + 0.3 * x["b"] > 0.7)
    x = {"a": 0.9, "b": 0.2, "c": 0.5}
    values = local.explain_one(x)
    shown = local_of(local, x, event_id="order-1")
    assert shown["values"] == values and shown["x"] == x and shown["event_id"] == "order-1"
    assert (shown["base"], shown["prediction"]) == (local.base_value, local.prediction)
    assert any(abs(v) > 0.01 for v in values.values())
    msg = {"base": local.base_value, "prediction": local.prediction}
    _chained(waterfall(shown), msg)
    drawn = bars(draw_waterfall(shown))
    assert drawn[-1].get_x() == local.base_value
    assert drawn[0].get_x() + drawn[0].get_width() == pytest.approx(local.prediction, abs=1e-9)
    with pytest.raises(ValueError, match="explain_one"):
        local_of(streamxai.LocalShapley(model, ["a", "b", "c"]), x)
