"""With ``local`` on, every sampled explained prediction gets one local explanation of its model version,
summing to prediction minus base, equal to the reference; off by default."""

from __future__ import annotations

import pytest
from helpers.handler_inputs import run_handlers, settings
from streamxai.core.attribution import attribute
from streamxai.core.explainers import ISAGE
from streamxai.local.demo_stream import agrawal_events
from streamxai.plan import stream_explainer
from streamxai.schemas import ConfigError


def reference(s, events):
    """Each event's local attribution in process: the stream's model and iSAGE's reservoir as
    they are before the event is explained and learned."""
    out = {}
    se = stream_explainer(s, events[0].stream_id)
    isage = next(e for e in se.explainers if isinstance(e, ISAGE))
    for ev in events:
        background = isage.removal_state.reservoir.items
        out[ev.seq] = attribute(se.current_model, ev.x, background or [ev.x], s.features)
        se.process_one(ev.x, ev.y)
    return out


@pytest.mark.parametrize("groups", [1, 3])
def test_every_prediction_is_explained_by_the_model_that_made_it(groups):
    s = settings(local=True, explain_groups=groups)
    events = list(agrawal_events("a", 150, seed=4))
    got = run_handlers(s, events)
    local = {m["seq"]: m for m in got["local-explanations"]}
    assert sorted(local) == [ev.seq for ev in events]
    predictions = {m["seq"]: m for m in got["predictions"] if m["schema"] == "prediction/v2"}
    want = reference(s, events)
    for seq, m in local.items():
        assert m["schema"] == "local_explanation/v1" and m["exact"] and m["method"] == "tree"
        assert m["model_version"] == predictions[seq]["model_version"]
        assert m["target"] == predictions[seq]["y_pred"]  # the predicted class's probability
        assert abs(sum(m["values"].values()) - (m["prediction"] - m["base"])) < 1e-9
        assert m["values"] == want[seq].values and m["base"] == want[seq].base
    assert max(m["n_background"] for m in local.values()) == s.storage_size


def test_a_profile_explains_target_class_whatever_the_prediction():
    """``local_class = "target_class"`` explains P(target_class | x) whichever class is predicted (base value its
    background mean); a stream outside the profile keeps the predicted class."""
    s = settings(local=True, explain_groups=1,
                 streams={"t-*": {"local_class": "target_class", "target_class": 0}})
    chosen, predicted = list(agrawal_events("t-1", 150, seed=4)), list(agrawal_events("p-1", 150, seed=4))
    got = run_handlers(s, chosen + predicted)
    y_pred = {(m["stream_id"], m["seq"]): m["y_pred"] for m in got["predictions"] if m["schema"] == "prediction/v2"}
    local = {(m["stream_id"], m["seq"]): m for m in got["local-explanations"]}
    assert sorted(local) == sorted(y_pred)
    p = s.for_stream("t-1")
    se = stream_explainer(p, "t-1")
    isage = next(e for e in se.explainers if isinstance(e, ISAGE))
    for ev in chosen:
        m = local["t-1", ev.seq]
        background = isage.removal_state.reservoir.items or [ev.x]
        want = se.current_model.predict_proba_one(ev.x).get(0, 0.0)
        want_base = sum(se.current_model.predict_proba_one(z).get(0, 0.0) for z in background) / len(background)
        assert m["target"] == 0 and m["prediction"] == pytest.approx(want, abs=1e-12)
        assert m["base"] == pytest.approx(want_base, abs=1e-12)
        assert abs(sum(m["values"].values()) - (m["prediction"] - m["base"])) < 1e-9
        se.process_one(ev.x, ev.y)
    assert {0, 1} <= {y_pred["t-1", ev.seq] for ev in chosen}  # the class explained is not always the prediction
    assert all(local["p-1", ev.seq]["target"] == y_pred["p-1", ev.seq] for ev in predicted)
    with pytest.raises(ConfigError, match="local_class"):
        settings(local=True, local_class="most_likely")


def test_off_by_default_and_sampled_by_stream_and_seq():
    events = list(agrawal_events("a", 80, seed=5))
    assert "local-explanations" not in run_handlers(settings(), events)
    half = [m["seq"] for m in run_handlers(settings(local=True, local_sample_rate=0.5), events)["local-explanations"]]
    again = [m["seq"] for m in run_handlers(settings(local=True, local_sample_rate=0.5), events)["local-explanations"]]
    assert half == again and 20 <= len(half) <= 60


def test_top_k_lists_the_largest_values_with_the_event_s_values_and_sums_the_rest():
    """``local_top_k = 2`` lists the two largest values with the event's values and sums the rest as ``rest``."""
    events = list(agrawal_events("a", 300, seed=6))
    s = settings(local=True, local_top_k=2)
    full = {m["seq"]: m for m in run_handlers(settings(local=True), events)["local-explanations"]}
    top = {m["seq"]: m for m in run_handlers(s, events)["local-explanations"]}
    assert sorted(top) == sorted(full)
    x = {ev.seq: ev.x for ev in events}
    for seq, m in top.items():
        every = full[seq]["values"]
        assert len(every) == len(s.features) and full[seq]["rest"] == 0 and full[seq]["n_features"] == len(every)
        assert full[seq]["x"] == x[seq]
        largest = sorted((abs(v) for v in every.values()), reverse=True)[:2]
        assert len(m["values"]) == 2 and sorted((abs(v) for v in m["values"].values()), reverse=True) == largest
        assert all(every[f] == v for f, v in m["values"].items())
        assert m["x"] == {f: x[seq][f] for f in m["values"]} and m["n_features"] == len(s.features)
        assert m["rest"] == pytest.approx(sum(v for f, v in every.items() if f not in m["values"]), abs=1e-12)
        assert m["base"] + sum(m["values"].values()) + m["rest"] == pytest.approx(m["prediction"], abs=1e-9)
    assert any(abs(m["rest"]) > 1e-6 for m in top.values())  # the features left out did count
    with pytest.raises(ConfigError, match="local_top_k"):
        settings(local=True, local_top_k=-1)


def test_local_needs_isage_s_reservoir():
    with pytest.raises(ConfigError, match="needs isage"):
        settings(local=True, explainers=["ipfi"])
    with pytest.raises(ConfigError, match="isage_removal=interventional"):
        settings(local=True, isage_removal="observational")
    with pytest.raises(ConfigError, match="local_sample_rate"):
        settings(local=True, local_sample_rate=0.0)


def test_with_labels_later_the_prediction_is_explained_at_its_arrival():
    """With labels 12 events later each prediction is explained once, by the model version that made it."""
    from helpers.arrivals import record_arrivals
    from helpers.arrivals import run_handlers as run_arrivals
    from helpers.handler_inputs import delayed_settings
    from helpers.partition_log import PartitionLog
    from helpers.streams import threshold_events
    from streamxai.local.demo_stream import labels_later

    log = PartitionLog()
    record_arrivals(log, labels_later(threshold_events("a", 150, drift_at=None, seed=2), 12))
    run = run_arrivals(delayed_settings(local=True), log)
    predictions = {m["seq"]: m for m in run.of("predictions") if m["schema"] == "prediction/v2"}
    local = run.of("local-explanations")
    assert sorted(m["seq"] for m in local) == sorted(predictions)
    for m in local:
        assert m["model_version"] == predictions[m["seq"]]["model_version"]
        assert m["position"] == predictions[m["seq"]]["position"]
        assert abs(sum(m["values"].values()) - (m["prediction"] - m["base"])) < 1e-9
    assert any(m["model_version"] < m["seq"] for m in local)  # labels later: the model had learned fewer
