"""The explain handler takes an explain-tasks record in one pass when its group's state is here
and every task of it passes its checks; otherwise task by task. Both ways give the same
messages, states, checkpoints and counters."""

from __future__ import annotations

import pickle
import random

import orjson
import pytest
from helpers.arrivals import ARRIVALS, record_arrivals
from helpers.checkpoint_saves import Saves
from helpers.partition_log import PartitionLog
from streamxai.handlers import ExplainHandler, ModelHandler
from streamxai.schemas import FeatureEvent, Source, pack_tasks, unpack_tasks
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
    packed = {k: [(k, v, h) for v, h in pack_tasks(vs, max_bytes=1 << 20, max_tasks=PER_RECORD)]
              for k, vs in by_key.items()}
    return [rec for group in zip(*packed.values(), strict=True) for rec in group]


def _crafted(records: list) -> list:
    """``records`` as a consumer may meet them: a record delivered twice, one half taken and
    half ahead, one with a cut-short task, one with a task of another group, and a lone task."""
    out = []
    for i, (key, value, headers) in enumerate(records):
        out.append((key, value, headers))
        tasks = unpack_tasks(value, Source("explain-tasks", 0, i, headers=headers))
        if i == 12:
            out.append((key, value, headers))  # redelivered: every task a duplicate
        elif i == 17:
            j = next(j for j in range(i + 1, len(records)) if records[j][0] == key)  # the key's next record
            later = unpack_tasks(records[j][1], Source("explain-tasks", 0, j, headers=records[j][2]))
            out += [(key, v, h) for v, h in pack_tasks(tasks[-2:] + later[:3], max_bytes=1 << 20)]
        elif i == 22:
            out += [(key, v, h) for v, h in pack_tasks([tasks[0], tasks[1][:-9], *tasks[2:]], max_bytes=1 << 20)]
        elif i == 27:
            t = orjson.loads(tasks[0])
            other = orjson.dumps(dict(t, group=1 - t["group"]))  # not of the record's key
            out += [(key, v, h) for v, h in pack_tasks([other, *tasks[1:]], max_bytes=1 << 20)]
        elif i == 31:
            out.append((key, tasks[0], None))  # one task, as the model handler sends a lone one
    return out


def _take(s: Settings, records: list, one_pass: bool, monkeypatch) -> tuple:
    taken = []  # the records the one-pass path took
    if one_pass:
        real = ExplainHandler._take_tasks

        def counted(self, raw, key, src):
            out = real(self, raw, key, src)
            if out is not None:
                taken.append(src.offset)
            return out

        monkeypatch.setattr(ExplainHandler, "_take_tasks", counted)
    else:
        monkeypatch.setattr(ExplainHandler, "_take_tasks", lambda self, raw, key, src: None)
    store = Saves(every=15)
    h, outs = ExplainHandler(s, checkpoints=store, clock=lambda: 0.0), []
    for off, (key, value, headers) in enumerate(records):
        src = Source("explain-tasks", 0, off, headers=headers)
        outs += [(o.topic, o.key, o.value if o.topic != "dead-letters" else
                  {k: v for k, v in orjson.loads(o.value).items() if k != "ts"}) for o in h.on_message(value, key, src)]
    monkeypatch.undo()
    assert not one_pass or len(taken) >= len(records) // 2  # the path compared is the one taken
    counters = {k: v for k, v in h.metrics.snapshot()["counters"].items() if not k.startswith("recovery_seconds")}
    return outs, {k: pickle.dumps(v) for k, v in h.groups.items()}, store.saved, counters  # times aside


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
    real = ExplainHandler._process
    raised = []

    def process(self, task, st, raw, key, src):
        if src.offset == 21 and task.position % PER_RECORD == 3 and not raised:
            raised.append(task)
            raise RuntimeError("the stand-in failure")
        return real(self, task, st, raw, key, src)

    monkeypatch.setattr(ExplainHandler, "_process", process)
    one = _take(s, records, True, monkeypatch)
    monkeypatch.setattr(ExplainHandler, "_process", process)
    raised.clear()
    each = _take(s, records, False, monkeypatch)
    assert raised and one == each
    assert [o["reason"] for t, _, o in one[0] if t == "dead-letters"] == ["explain_error"]
