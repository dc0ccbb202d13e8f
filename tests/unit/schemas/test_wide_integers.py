"""Integers beyond 64 bits (1e21, 2**64 - 1) as categories or labels are one dead letter at the edge (``bad_value``
for a feature, ``label_type`` for a label), naming the value, the range and the fix (a string)."""

from __future__ import annotations

import orjson
import pytest
from helpers.arrivals import Run, record_arrivals, run_handlers
from helpers.partition_log import PartitionLog
from streamxai.handlers import ModelHandler
from streamxai.schemas import FeatureSpec, parse_feature_event
from streamxai.schemas.errors import BadValue, LabelTypeMismatch
from streamxai.schemas.features import check_label
from streamxai.settings import Settings


def _message(topic: str, raw: str) -> tuple[str, bytes, bytes]:
    return topic, b"s", raw.encode()


def _event(seq: int, c: str = "1", y: str = "1") -> tuple[str, bytes, bytes]:
    return _message("features", f'{{"schema": "feature_event/v1", "stream_id": "s", "seq": {seq}, "ts": 0.0, '
                    f'"x": {{"a": {0.1 * seq}, "c": {c}}}, "y": {y}}}')


@pytest.mark.parametrize("where, wide, reason", [
    ("c", "1e21", "bad_value"), ("c", "18446744073709551615", "bad_value"), ("c", "-1e19", "bad_value"),
    ("y", "1e21", "label_type"), ("y", "9223372036854775808", "label_type"),
    ("label event", "1e21", "label_type"),
])
def test_an_integer_beyond_64_bits_is_one_dead_letter_at_the_edge_and_the_stream_goes_on(where, wide, reason):
    s = Settings(features=["a", "c"], categorical=["c"], task="classification", output="label", loss="zero_one",
                 model="river.tree.HoeffdingTreeClassifier", model_params={}, explainers=["ipfi"],
                 change_explainers=["ipfi"], emit_every=5, partitions=1)
    messages = [_event(i, c=str(i % 3), y=str(i % 2)) for i in range(3)]
    if where == "label event":
        messages += [_event(3, y="null"), _message("labels", '{"schema": "label_event/v1", "stream_id": "s", '
                                                             f'"seq": 3, "ts": 0.0, "y": {wide}}}')]
    else:
        messages.append(_event(3, **{where: wide}))
    messages += [_event(i, c=str(i % 3), y=str(i % 2)) for i in range(4, 12)]
    log, run = PartitionLog(), Run()
    record_arrivals(log, messages)
    mh = ModelHandler(s)
    run_handlers(s, log, model=lambda off: mh, run=run)
    dead = run.of("dead-letters")
    assert [(d["stage"], d["reason"]) for d in dead] == [("model", reason)], dead
    err = dead[0]["error"]
    assert "64-bit" in err and "as a string" in err and "seq 3" in err, err
    assert mh.metrics.get("replayed_events") == 0  # refused before the model took anything: no rebuild
    preds = [p["seq"] for p in run.of("predictions") if p["schema"].startswith("prediction/")]
    assert preds == [s for s in range(12) if where == "label event" or s != 3]


def test_the_edge_takes_the_64_bit_extremes_and_refuses_one_past_them():
    spec = FeatureSpec(("c",), categorical=frozenset({"c"}))
    raw = b'{"schema": "feature_event/v1", "stream_id": "s", "seq": 0, "ts": 0, "x": {"c": %s}, "y": %s}'
    for ok in (b"9223372036854775807", b"-9223372036854775808", b"9.2e18"):
        assert isinstance(parse_feature_event(raw % (ok, ok), spec, where="f[0]@0").x["c"], int)
    for bad in (b"9223372036854775808", b"-1e19", b"9.3e18"):  # orjson reads -2**63 - 1 as a float, -2.0**63
        with pytest.raises(BadValue, match="64-bit"):
            parse_feature_event(raw % (bad, b"1"), spec, where="f[0]@0")
        with pytest.raises(LabelTypeMismatch, match="64-bit"):
            parse_feature_event(raw % (b"1", bad), spec, where="f[0]@0")
    assert check_label(2.0**62, "classification", "y") == 2**62 and check_label(2.0**70, "regression", "y") == 2.0**70
    assert orjson.dumps(check_label(-(2**63), "classification", "y"))  # the extremes serialise
