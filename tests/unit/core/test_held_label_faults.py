"""A held label the model cannot take (``"yes"`` for a tree of integer classes, before its event) is the
label's fault: one dead letter, the event predicted and waiting, and the right label that follows learned."""

from __future__ import annotations

import base64

import orjson
import pytest
from helpers.arrivals import run_model
from helpers.streams import threshold_events
from streamxai.core.labels import LabelJoin
from streamxai.core.prequential import PrequentialModel
from streamxai.local.demo_stream import labels_later
from streamxai.schemas import FeatureEvent, LabelEvent
from streamxai.settings import Settings


def _settings(model: str) -> Settings:
    return Settings(features=["a", "b", "c"], task="classification", output="label", loss="zero_one", model=model,
                    model_params={}, explainers=["ipfi"], change_explainers=["ipfi"], emit_every=5, partitions=1)


def _run(s: Settings, messages):
    return run_model(s, messages)


@pytest.mark.parametrize("model, bad, reason", [
    ("river.tree.HoeffdingTreeClassifier", "yes", "model_error"),      # a class name among integer classes
    ("river.linear_model.LogisticRegression", 2, "label_type"),        # a binary model's third class
])
def test_a_held_label_the_model_cannot_take_is_one_dead_letter_and_its_event_waits_for_a_right_one(model, bad, reason):
    s = _settings(model)
    clean = labels_later(threshold_events("s", 40, seed=4), delay=3)  # every label 3 events after its event
    dirty = []
    for m in clean:
        if isinstance(m, FeatureEvent) and m.seq == 20:
            dirty.append(LabelEvent("s", 20, bad, 0.0))  # overtakes event 20; its right label comes later
        dirty.append(m)
    clean_run, _, _ = _run(s, clean)
    run, mh, ref = _run(s, dirty)
    dead = run.of("dead-letters")
    assert len(dead) == 1, [(d["reason"], d["source"]) for d in dead]
    d = dead[0]
    assert d["source"]["topic"].endswith("labels") and d["reason"] == reason and d["stage"] == "model", d
    assert orjson.loads(base64.b64decode(d["original"]))["y"] == bad
    assert "seq 20" in d["error"] and repr(bad) in d["error"], d["error"]
    # nothing of the bad label learned, nothing else lost: as without it (arrival times aside)
    assert [p for p in run.predictions()] == [p for p in clean_run.predictions()]
    assert run.explanation_values() == clean_run.explanation_values() and run.explanation_values()
    assert ref.predictions == run.predictions()  # the in-process reference decides the same
    c = mh.metrics
    assert c.get("labels_learned") == 40 and c.get("labels_dead_lettered") == 1
    assert c.get("labels_learned") + c.get("labels_dead_lettered") == c.get("labels_received")


def test_the_join_refuses_the_held_label_and_keeps_the_event_waiting():
    from river import tree

    join = LabelJoin(PrequentialModel(tree.HoeffdingTreeClassifier(), output="label", loss="zero_one"), ["a"])
    assert join.on_features(0, {"a": 0.1}, 1, ts=0.0).error is None
    assert join.on_label(1, "yes", ref="bad").held  # overtakes event 1
    r = join.on_features(1, {"a": 0.2}, None, ts=1.0)
    assert r.error is None and not r.joined_held and [s.kind for s in r.steps] == ["predict"]
    assert [(f.seq, f.ref) for f in r.refused] == [(1, "bad")] and "cannot be compared" in r.refused[0].message
    assert r.refused[0].error is not None
    assert join.waiting == 1 and join.held == 0 and join.model_version == 1
    r = join.on_label(1, 0)  # the right label: learned
    assert [o.outcome for o in r.outcomes] == ["learned"] and join.model_version == 2
