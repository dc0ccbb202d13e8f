"""A label of the wrong type is a dead letter of reason ``label_type`` whether inline or on the labels topic."""

from __future__ import annotations

import orjson
import pytest
from helpers.arrivals import Run, record_arrivals, run_handlers
from helpers.partition_log import PartitionLog
from streamxai.handlers import ModelHandler
from streamxai.settings import Settings

_BAD = {"classification": [{"a": 1}, [1, 2], 1.5], "regression": ["high", True, {"a": 1}]}


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_a_label_of_the_wrong_type_is_a_label_type_dead_letter_in_a_feature_event_and_on_the_labels_topic(task):
    classification = task == "classification"
    s = Settings(features=["a"], task=task, output="label" if classification else "value",
                 loss="zero_one" if classification else "squared",
                 model="river.tree.HoeffdingTreeClassifier" if classification else "river.tree.HoeffdingTreeRegressor",
                 model_params={}, explainers=["ipfi"], change_explainers=["ipfi"], emit_every=5, partitions=1,
                 max_label_delay=100)

    def message(topic: str, seq: int, y, **fields) -> tuple[str, bytes, bytes]:
        kind = "feature_event/v1" if topic == "features" else "label_event/v1"
        return topic, b"s", orjson.dumps({"schema": kind, "stream_id": "s", "seq": seq, "ts": 0.0, "y": y, **fields})

    messages = [message("features", 0, 1, x={"a": 0.5}), message("features", 1, None, x={"a": 0.7})]
    for i, y in enumerate(_BAD[task]):
        messages += [message("features", 2 + i, y, x={"a": 1.0}), message("labels", 1, y)]
    log, run = PartitionLog(), Run()
    record_arrivals(log, messages)
    run_handlers(s, log, model=lambda off: ModelHandler(s), run=run)
    dead = run.of("dead-letters")
    by_topic = sorted((d["source"]["topic"].split(".")[-1], d["reason"]) for d in dead)
    n = len(_BAD[task])
    assert by_topic == [("features", "label_type")] * n + [("labels", "label_type")] * n, dead
    for d in dead:  # each names what is wrong: the label, its stream and seq, and what the task takes
        assert "stream 's' seq" in d["error"] and f"the task is {task}" in d["error"], d["error"]
