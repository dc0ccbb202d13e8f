"""An explain-tasks record taken in one pass or task by task gives the same messages, states, checkpoints and
counters."""

from __future__ import annotations

import random

import orjson
import pytest
from helpers.arrivals import ARRIVALS, record_arrivals
from helpers.one_pass import crafted, take_records
from helpers.partition_log import PartitionLog
from streamxai.handlers import ExplainHandler, ModelHandler
from streamxai.schemas import FeatureEvent, pack_tasks, unpack_tasks
from streamxai.settings import Settings

#: tasks per record, as the model handler packs a batch's tasks of one group
PER_RECORD = 6


def _settings() -> Settings:
    return Settings(features=["a", "b"], task="regression", output="value", loss="squared",
                    model="river.linear_model.LinearRegression", model_params={}, explainers=["ipfi", "isage", "ipdp"],
                    emit_every=5, storage_size=20, partitions=1, explain_groups=2)


def _records(s: Settings) -> list:
    """The explain-tasks records of two streams, two groups each: each key's tasks packed
    ``PER_RECORD`` to a record, the keys' records interleaved as on one partition."""
    r, events = random.Random(7), []
    for q in range(120):
        a, b = r.gauss(0, 1), r.gauss(0, 1)
        for sid in ("s", "t"):
            events.append(FeatureEvent(sid, q, float(q), {"a": a, "b": b}, 3 * a - 0.5 * b + r.gauss(0, 0.1)))
    log = PartitionLog()
    record_arrivals(log, events)
    model = ModelHandler(s)
    by_key: dict[bytes, list[bytes]] = {}
    for off in range(len(log.parts[(ARRIVALS, 0)])):
        key, value, _, _ = log.parts[(ARRIVALS, 0)][off]
        for out in model.on_message(value, key, log.source(ARRIVALS, 0, off)):
            if out.topic == "explain-tasks":
                by_key.setdefault(out.key, []).append(out.value)
    packed = {k: [(k, v, None, h) for v, h in pack_tasks(vs, max_bytes=1 << 20, max_tasks=PER_RECORD)]
              for k, vs in by_key.items()}
    return [rec for group in zip(*packed.values(), strict=True) for rec in group]


def _crafted(records: list) -> list:
    """``records`` as a consumer may meet them (:func:`helpers.one_pass.crafted`)."""

    def other(task: bytes) -> bytes:
        t = orjson.loads(task)
        return orjson.dumps(dict(t, group=1 - t["group"]))  # not of the record's key

    return crafted(records, "explain-tasks", unpack_tasks, lambda tasks: pack_tasks(tasks, max_bytes=1 << 20), other,
                   at=(12, 17, 22, 27, 31))


def _take(s: Settings, records: list, one_pass: bool, monkeypatch, fail=None) -> tuple:
    return take_records(lambda store: ExplainHandler(s, checkpoints=store, clock=lambda: 0.0), records, "explain-tasks", one_pass, monkeypatch,
                        every=15, fail=fail)


@pytest.mark.parametrize("crafted", [False, True])
def test_a_record_taken_in_one_pass_gives_what_it_gives_task_by_task(monkeypatch, crafted):
    s = _settings()
    records = _records(s)
    if crafted:
        records = _crafted(records)
    one = _take(s, records, True, monkeypatch)
    each = _take(s, records, False, monkeypatch)
    outs, states, saved, counters = one
    assert outs == each[0] and states == each[1] and saved == each[2] and counters == each[3]
    # what the comparison covers: explanations of every group, checkpoints written, and, with
    # the crafted records, duplicates and dead letters of tasks inside a record
    assert {k for t, k, _ in outs if t == "explanations"} == {b"s", b"t"} and len(states) == 4 and len(saved) >= 10
    reasons = sorted(o["reason"] for t, _, o in outs if t == "dead-letters")
    assert reasons == (["malformed", "schema"] if crafted else [])
    assert (counters.get("duplicate_tasks_dropped", 0) > PER_RECORD) == crafted


def test_a_task_that_raises_hands_the_rest_of_its_record_to_the_skeleton(monkeypatch):
    s = _settings()
    records = _records(s)
    fail = lambda task, src: src.offset == 21 and task.position % PER_RECORD == 3  # noqa: E731
    one = _take(s, records, True, monkeypatch, fail)
    assert one == _take(s, records, False, monkeypatch, fail)
    assert [o["reason"] for t, _, o in one[0] if t == "dead-letters"] == ["explain_error"]
