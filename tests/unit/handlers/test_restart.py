"""Restarts: the keys of a partition share one pass over its history, and a message
that rebuilds state runs off the event loop."""

from __future__ import annotations

import asyncio
import random

import orjson
import pytest
from streamxai.handlers import ChangeHandler, Source
from streamxai.metrics import Metrics
from streamxai.schemas import Explanation, dumps
from streamxai.settings import AGRAWAL_FEATURES, Settings


class ScanLog:
    """A partition in memory that can be read per key or scanned once; counts both."""

    def __init__(self):
        self.items: list[tuple[bytes, bytes]] = []
        self.per_key_reads = 0
        self.scans = 0

    def __call__(self, topic, partition, before_offset, key, from_offset=0):
        self.per_key_reads += 1
        for k, v in self.items[from_offset:before_offset]:
            if key is None or k == key:
                yield v

    def scan(self, topic, partition, before_offset, from_offset=0):
        self.scans += 1
        for off in range(from_offset, len(self.items) if before_offset is None else before_offset):
            yield off, *self.items[off]


def series_log(n_series=30, n_points=240, emit_every=5):
    """30 streams with one series each, keyed by stream; a third step up at point 120."""
    rng, log = random.Random(3), ScanLog()
    for i in range(n_points):
        seq = (i + 1) * emit_every - 1
        for j in range(n_series):
            jump = 0.4 if i >= 120 and j % 3 == 0 else 0.0
            xs = [0.1 + jump + rng.gauss(0, 0.2) for _ in range(emit_every)]
            mean = sum(xs) / emit_every
            block = {"n": emit_every, "mean": mean, "m2": sum((x - mean) ** 2 for x in xs)}
            msg = Explanation(f"s{j}", "ipfi", "age", mean, seq, (i + 1) * emit_every, seq + 1, seq, block=block)
            log.items.append((f"s{j}".encode(), dumps(msg)))
    return log


def events(handler_for, log):
    got = []
    for off, (key, value) in enumerate(log.items):
        for out in handler_for(off).on_message(value, key, Source("explanations", 0, off)):
            m = orjson.loads(out.value)
            if out.topic == "drift-events":
                got.append((m["series"], m["seq"]))
    return got


def test_a_restart_reads_the_partition_once_for_all_its_series():
    # one Kafka pass for all the series, not one per series
    s = Settings(features=list(AGRAWAL_FEATURES), emit_every=5, change_warmup=10)
    log = series_log()
    uninterrupted = ChangeHandler(s)
    whole = events(lambda off: uninterrupted, log)
    assert len({series for series, _ in whole}) == 10  # the series that step up are detected
    first, second = ChangeHandler(s), ChangeHandler(s, history=log)
    resume = 30 * 100  # point 100 of every series, before the step
    assert events(lambda off: first if off < resume else second, log) == whole
    assert (log.scans, log.per_key_reads) == (1, 0)
    assert second.metrics.get("history_scans") == 1
    assert second.metrics.get("replayed_explanations") == resume


def test_a_message_that_rebuilds_state_runs_off_the_event_loop():
    # the rebuild blocks until the event loop has turned: off the loop it does at once, on it never
    import threading

    from streamxai.agents._forward import forward

    started, turned, met = threading.Event(), threading.Event(), []

    class SlowToRebuild:
        settings, metrics = Settings(features=list(AGRAWAL_FEATURES)), Metrics()

        def needs_recovery(self, key, src=None):
            return True

        def on_message(self, raw, key, src):
            started.set()
            met.append(turned.wait(10))  # a replay: blocking work (10 s: only a bound if it blocks the loop)
            return []

    class Msg:
        topic, partition, offset = "t", 0, 5

    class Event:
        value, key, message = b"", b"k", Msg()

    class Stream:
        async def events(self):
            yield Event()

    async def loop_turns():
        while not started.is_set():
            await asyncio.sleep(0.001)
        turned.set()  # the loop ran while the rebuild was blocking

    async def main():
        turns = asyncio.create_task(loop_turns())
        await forward(Stream(), SlowToRebuild(), None, "change")
        turned.set()  # (on the loop: let a failed run's task end)
        await turns

    asyncio.run(main())
    assert met == [True]


def test_with_checkpoints_the_pass_starts_at_the_oldest_checkpoint_needed(tmp_path):
    from streamxai.kafka.checkpoints import FileCheckpointStore

    s = Settings(features=list(AGRAWAL_FEATURES), emit_every=5, change_warmup=10, checkpoint_every=40)
    log = series_log()
    uninterrupted = ChangeHandler(s)
    whole = events(lambda off: uninterrupted, log)
    store = FileCheckpointStore(tmp_path, every=40, secret=b"k" * 32)
    first = ChangeHandler(s, checkpoints=store)
    second = ChangeHandler(s, history=log, checkpoints=store)
    resume = 30 * 100 + 7  # every series checkpointed after its point 79; 20 more points to replay
    assert events(lambda off: first if off < resume else second, log) == whole
    assert second.metrics.get("checkpoints_restored") == 30
    # the first series met (s7) reads from its checkpoint on; s0..s6, checkpointed a few
    # offsets earlier, extend that pass back once: no message is read twice, and none from
    # before the oldest checkpoint
    assert (log.scans, log.per_key_reads) == (2, 0)
    assert second.metrics.get("history_messages_scanned") == resume - (79 * 30 + 1)



def test_a_partition_given_back_after_a_gap_is_read_again():
    """The worker held the partition, lost it to another worker for a while, and got it back:
    its one-pass cache does not cover what the other worker processed, so it is dropped."""
    s = Settings(features=list(AGRAWAL_FEATURES), emit_every=5, change_warmup=10)
    log, n_b = ScanLog(), 0
    for off in range(400):
        if off < 50 and off % 2 or off >= 220 and off % 2:  # series b: only in these two stretches
            sid, n_b, i = "b", n_b + 1, n_b
        else:
            sid, i = "a", off
        msg = Explanation(sid, "ipfi", "age", 0.1, (i + 1) * 5 - 1, (i + 1) * 5, (i + 1) * 5, (i + 1) * 5 - 1)
        log.items.append((sid.encode(), dumps(msg)))  # explanations are keyed by stream
    handler = ChangeHandler(s, history=log)

    def via_agent_loop(offsets):  # what agents/_forward.py does with each message
        for off in offsets:
            key, value = log.items[off]
            handler.needs_recovery(key, Source("explanations", 0, off))
            handler.on_message(value, key, Source("explanations", 0, off))

    via_agent_loop(range(100, 200))  # restarted at 100: meets a (one pass caches [0, 100))
    assert handler.metrics.get("replayed_explanations") == 75  # a's messages before 100
    via_agent_loop(range(300, 400))  # the partition was away from 200 to 300; b is met at 301
    b_before_301 = sum(1 for k, _ in log.items[:301] if k == b"b")
    assert handler.metrics.get("replayed_explanations") == 75 + b_before_301
    n_b_all = sum(1 for k, _ in log.items if k == b"b")
    assert handler.streams["b"].detector.last_seq("ipfi", "age") == n_b_all * 5 - 1  # none skipped, none twice


def test_a_partition_back_from_another_worker_rebuilds_its_stale_states():
    """A stream model kept here while another worker learned events 100..149 is rebuilt, so it
    does not go on at 150 as if they had never happened (its predictions would silently diverge)."""
    from streamxai.handlers import ModelHandler
    from streamxai.local.demo_stream import agrawal_events

    s = Settings(features=list(AGRAWAL_FEATURES), model="river.tree.HoeffdingTreeClassifier", model_params={"grace_period": 20})
    items = [(b"m", dumps(e)) for e in agrawal_events("m", 200, seed=7)]

    class Log:
        def __call__(self, topic, partition, before, key, from_offset=0):
            for k, v in items[from_offset:before]:
                if k == key:
                    yield v

    def loop(handler, offsets):  # what agents/_forward.py does with each message
        out = {}
        for off in offsets:
            src = Source("features", 0, off)
            handler.needs_recovery(items[off][0], src)
            for o in handler.on_message(items[off][1], items[off][0], src):
                if o.topic == "predictions":
                    m = orjson.loads(o.value)
                    out[m["seq"]] = m["y_pred"]
        return out

    whole = loop(ModelHandler(s), range(200))
    here = ModelHandler(s, history=Log())
    loop(here, range(100))
    here.partitions_revoked({("features", 0)})
    loop(ModelHandler(s, history=Log()), range(100, 150))  # the other worker, meanwhile
    assert loop(here, range(150, 200)) == {q: whole[q] for q in range(150, 200)}
    assert here.metrics.get("states_dropped_after_rebalance") == 1
    # given back with nothing processed elsewhere (it resumes where it stopped): states kept
    again = ModelHandler(s, history=Log())
    loop(again, range(100))
    again.partitions_revoked({("features", 0)})
    assert loop(again, range(100, 200)) == {q: whole[q] for q in range(100, 200)}
    assert again.metrics.get("states_dropped_after_rebalance") == 0


def _via_agent_loop(handler, log, topic, offsets, replace=None):
    """Each message as agents/_forward.py hands it over (``needs_recovery``, then ``on_message``);
    ``replace`` maps offsets to the value handed over instead of the logged one. The outputs."""
    outs = []
    for off in offsets:
        key, value = log.items[off]
        src = Source(topic, 0, off)
        handler.needs_recovery(key, src)
        outs += handler.on_message((replace or {}).get(off, value), key, src)
    return outs


def _two_streams(n_a=300, n_b=40):
    """Stream a alone for ``n_a`` events, then b's first events alternating with a's."""
    from streamxai.local.demo_stream import agrawal_events

    a, b = list(agrawal_events("a", n_a + n_b, seed=7)), list(agrawal_events("b", n_b, seed=8))
    log = ScanLog()
    for ev in a[:n_a] + [e for pair in zip(a[n_a:], b, strict=True) for e in pair]:
        log.items.append((ev.stream_id.encode(), dumps(ev)))
    return log


def _predictions(outs):
    msgs = (orjson.loads(o.value) for o in outs if o.topic == "predictions")
    return {(m["stream_id"], m["seq"]): m["y_pred"] for m in msgs}


def test_a_stream_first_met_mid_partition_reads_no_history():
    """A stream first met mid-partition by a handler that saw the partition from offset 0 scans no history."""
    from streamxai.handlers import ModelHandler

    s = Settings(features=list(AGRAWAL_FEATURES), model="river.tree.HoeffdingTreeClassifier")
    log = _two_streams()
    reference = _predictions(_via_agent_loop(ModelHandler(s), log, "features", range(len(log.items))))
    h = ModelHandler(s, history=log)
    assert _predictions(_via_agent_loop(h, log, "features", range(len(log.items)))) == reference
    assert (log.scans, log.per_key_reads) == (0, 0)
    assert not h.metrics.get("history_messages_scanned")
    # restarted at offset 150 (no checkpoints): a is rebuilt from the one pass over 0..149, and b,
    # met at 300, needs no further pass
    log.scans = 0
    again = ModelHandler(s, history=log)
    assert _predictions(_via_agent_loop(again, log, "features", range(150, len(log.items)))) == {
        k: v for k, v in reference.items() if k[0] == "b" or k[1] >= 150}
    assert (log.scans, log.per_key_reads) == (1, 0)
    assert again.metrics.get("history_messages_scanned") == 150
    assert again.metrics.get("replayed_events") == 150


def test_a_state_opened_after_a_restart_and_dropped_is_rebuilt_from_all_its_messages(monkeypatch):
    """A state opened after a restart's one pass and dropped after an error is rebuilt from all its messages."""
    from helpers.handler_inputs import settings
    from streamxai.handlers import ExplainHandler, ModelHandler

    s = settings(explain_groups=1, partitions=1)
    events_log, tasks = _two_streams(60, 30), ScanLog()
    model = ModelHandler(s)
    for out in _via_agent_loop(model, events_log, "features", range(len(events_log.items))):
        if out.topic == "explain-tasks":
            tasks.items.append((out.key, out.value))
    first_b = next(off for off, (k, _) in enumerate(tasks.items) if k == b"b/0")

    def values(outs):
        msgs = (orjson.loads(o.value) for o in outs if o.topic == "explanations")
        return [(m["stream_id"], m["position"], m["feature"], m["value"], m["n_explained"]) for m in msgs]

    whole = values(_via_agent_loop(ExplainHandler(s), tasks, "explain-tasks", range(len(tasks.items))))
    broken_at = first_b + 20  # one of b's tasks, its replica raises on it
    assert tasks.items[broken_at][0] == b"b/0"
    broken = orjson.loads(tasks.items[broken_at][1])
    broken["x"]["age"] = -12345.0  # delivered so, its replica raises on it (the history has the task as sent)
    from streamxai.core.stream import StreamExplainer

    real_step = StreamExplainer.step

    def step(self, kind, x, *a, **kw):
        if x["age"] == -12345.0:
            raise RuntimeError("an explainer error")
        return real_step(self, kind, x, *a, **kw)

    monkeypatch.setattr(StreamExplainer, "step", step)
    restart = first_b - 10  # the restarted handler meets a first (one pass over 0..restart-1), then b opens
    h = ExplainHandler(s, history=tasks)
    got = values(_via_agent_loop(h, tasks, "explain-tasks", range(restart, len(tasks.items)),
                                 replace={broken_at: orjson.dumps(broken)}))
    after = [v for v in whole if v[0] == "b" and v[1] > orjson.loads(tasks.items[broken_at][1])["position"]]
    assert after and [v for v in got if v[0] == "b" and v[1] > broken["position"]] == after


@pytest.mark.parametrize("commits_known, resume, kept_before, restored, replayed", [
    (False, 85, None, 0, 85),  # two newest kept, both past the commit: rebuilt from the whole history
    (True, 75, 69, 1, 5),  # the newest a commit covers kept beside the newest: restored, offsets 70..74 replayed
], ids=["two-newest-kept", "committed-kept"])
def test_a_change_state_restarted_after_two_checkpoints_past_the_commit_is_exact(
        tmp_path, commits_known, resume, kept_before, restored, replayed):
    """A change state writes two checkpoints after the feed's last commit before a SIGKILL: without the
    commits known it keeps its two newest and is rebuilt from its history; a worker knowing its commits
    keeps the committed one too and replays only the tail. Either way exactly the uninterrupted events."""
    from streamxai.kafka.checkpoints import FileCheckpointStore
    from streamxai.kafka.committed_offsets import CommittedOffsets

    s = Settings(features=list(AGRAWAL_FEATURES), emit_every=5, change_warmup=10, checkpoint_every=10)
    log = series_log(n_series=1)
    uninterrupted = ChangeHandler(s)
    whole = events(lambda off: uninterrupted, log)
    commits = CommittedOffsets() if commits_known else None
    store = FileCheckpointStore(tmp_path, every=10, secret=b"k" * 32,
                                **({"commits": commits} if commits_known else {}))
    first = ChangeHandler(s, checkpoints=store)

    def taken(handler, offsets):
        def committed_every_25(off):
            if commits_known and handler is first and (off + 1) % 25 == 0 and off < resume:
                commits.record({("explanations", 0): off + 1})
        return change_events_taken(handler, log, offsets, after=committed_every_25)

    sent = taken(first, range(resume))
    taken(first, range(resume, 100))  # taken, not committed
    assert first.metrics.get("checkpoints_written") == 10
    assert store.load("change", b"s0", "explanations", 0)[1] == 99  # the newest
    kept = store.load("change", b"s0", "explanations", 0, before_offset=resume)
    assert (kept and kept[1]) == kept_before
    second = ChangeHandler(s, history=log, checkpoints=store)
    assert sent + taken(second, range(resume, len(log.items))) == whole and whole
    assert second.metrics.get("checkpoints_restored{stage=change}") == restored
    assert second.metrics.get("replayed_explanations") == replayed


def change_events_taken(handler, log, offsets, after=None) -> list[tuple[str, int]]:
    """``(series, seq)`` of the change events ``handler`` sends for the messages of ``log`` at
    ``offsets`` (an explanations partition); ``after(offset)`` runs after each message."""
    got = []
    for off in offsets:
        key, value = log.items[off]
        for out in handler.on_message(value, key, Source("explanations", 0, off)):
            if out.topic == "drift-events":
                m = orjson.loads(out.value)
                got.append((m["series"], m["seq"]))
        if after is not None:
            after(off)
    return got
