"""A binary classifier takes only true/false or 0/1 as labels: 2, 3 or -1 are each one dead letter (reason
``label_type``), inline or on the labels topic, and nothing is learned; multiclass models take them."""

from __future__ import annotations

import base64

import orjson
import pytest
from helpers.arrivals import run_model
from helpers.streams import threshold_events
from river import forest, linear_model, preprocessing, tree
from streamxai.core.labels import LabelJoin
from streamxai.core.prequential import PrequentialModel
from streamxai.local.demo_stream import labels_later
from streamxai.schemas import FeatureEvent, LabelEvent
from streamxai.settings import Settings


def _binary_models():
    return [linear_model.LogisticRegression(), preprocessing.StandardScaler() | linear_model.LogisticRegression()]


@pytest.mark.parametrize("y", [2, 3, -1])
def test_a_binary_classifier_learns_nothing_from_a_label_it_cannot_tell_apart(y):
    for model in _binary_models():
        m = PrequentialModel(model, output="label", loss="zero_one")
        with pytest.raises(ValueError) as info:
            m.process_one({"a": 1.0}, y)
        err = str(info.value)
        assert f"the label {y} (int)" in err and "binary" in err, err
        assert "true/false or 0 and 1" in err and "HoeffdingTreeClassifier" in err, err
        assert m.version == 0  # not learned
        join = LabelJoin(PrequentialModel(model, output="label", loss="zero_one"), ["a"])
        assert join.on_features(0, {"a": 1.0}, None, ts=0.0).error is None
        assert join.on_label(0, y).error is not None and join.model_version == 0 and join.waiting == 1
        assert join.on_label(5, y).error is not None and join.held == 0  # one that overtook its event: not held


def test_a_binary_classifier_takes_0_1_true_false_and_multiclass_models_take_any_integer():
    for model in _binary_models():
        m = PrequentialModel(model, output="label", loss="zero_one")
        for y in (0, 1, True, False):
            m.process_one({"a": float(y)}, y)
        assert m.version == 4
    for model in (tree.HoeffdingTreeClassifier(), forest.ARFClassifier(n_models=2, seed=1)):
        m = PrequentialModel(model, output="label", loss="zero_one")
        for i, y in enumerate((0, 1, 2, 3, -1, 2)):
            m.process_one({"a": float(i)}, y)
        assert m.version == 6


def _settings() -> Settings:
    return Settings(features=["a", "b", "c"], task="classification", output="label", loss="zero_one",
                    model="river.linear_model.LogisticRegression", model_params={}, explainers=["ipfi"],
                    change_explainers=["ipfi"], emit_every=5, partitions=1)


def _run(s: Settings, messages):
    return run_model(s, messages)


def test_labels_a_binary_model_cannot_tell_apart_are_one_label_type_dead_letter_each_and_nothing_is_learned():
    s = _settings()
    events = list(threshold_events("s", 70, seed=4))
    clean = labels_later([e for e in events if e.seq != 25], delay=5)
    bad_in_line = FeatureEvent("s", 25, events[25].ts, events[25].x, 2)
    insert_after = {12: [LabelEvent("s", 10, 2, 0.0)],    # its event waits for its label
                    24: [bad_in_line],                     # the label in the feature event
                    39: [LabelEvent("s", 40, 3, 0.0)],     # it overtakes its event
                    52: [LabelEvent("s", 50, -1, 0.0)],
                    60: [LabelEvent("s", 57, "yes", 0.0)]}  # a class name: a model_error before
    dirty = []
    for m in clean:
        dirty.append(m)
        if isinstance(m, FeatureEvent):
            dirty += insert_after.get(m.seq, [])
    clean_run, _, _ = _run(s, clean)
    run, mh, ref = _run(s, dirty)

    def timeless(msgs):  # the arrival times differ: the dirty run has more messages in between
        return [{k: v for k, v in m.items() if k != "delay_s"} for m in msgs]

    # nothing learned from them: every prediction, outcome and explanation as without them
    assert timeless(run.of("predictions")) == timeless(clean_run.of("predictions"))
    assert run.explanation_values() == clean_run.explanation_values() and run.explanation_values()
    assert run.predictions() == ref.predictions  # the in-process reference refuses the same
    dead = run.of("dead-letters")
    bad, want, n = [b for bs in insert_after.values() for b in bs], [], {"labels": 0, "features": 0}
    for m in dirty:  # where each bad message is on its input topic
        topic = "labels" if isinstance(m, LabelEvent) else "features"
        if any(m is b for b in bad):
            want.append((topic, n[topic]))
        n[topic] += 1
    assert sorted((d["source"]["topic"].split(".")[-1], d["source"]["offset"]) for d in dead) == sorted(want), dead
    assert {(d["stage"], d["reason"]) for d in dead} == {("model", "label_type")}, dead
    assert sorted(repr(orjson.loads(base64.b64decode(d["original"]))["y"]) for d in dead) == \
        ["'yes'", "-1", "2", "2", "3"]
    for d in dead:
        err, y = d["error"], orjson.loads(base64.b64decode(d["original"]))["y"]
        assert f"the label {y!r} ({type(y).__name__})" in err, err
        seq = orjson.loads(base64.b64decode(d["original"]))["seq"]
        assert f"stream 's' seq {seq}: " in err, err
        assert "binary" in err and "true/false or 0 and 1" in err and "HoeffdingTreeClassifier" in err, err
    c = mh.metrics
    assert c.get("labels_dead_lettered") == 4
    assert c.get("labels_learned") + c.get("labels_dead_lettered") == c.get("labels_received")


def test_labels_sent_as_1_0_and_0_0_on_the_labels_topic_are_taken_as_1_and_0():
    # JSON writers differ on 1 and 1.0: a feature event's label 1.0 was taken as 1, a label
    # event's was a label_type dead letter
    s = _settings()
    clean = labels_later(threshold_events("s", 40, seed=4), delay=3)
    floats = [("labels", b"s", orjson.dumps({"schema": "label_event/v1", "stream_id": "s", "seq": m.seq,
                                              "y": float(m.y), "ts": m.ts}))
              if isinstance(m, LabelEvent) else m for m in clean]
    clean_run, _, _ = _run(s, clean)
    run, mh, _ = _run(s, floats)
    assert run.of("dead-letters") == []
    assert run.of("predictions") == clean_run.of("predictions") and mh.metrics.get("labels_learned") == 40
