"""Restarts (defect 5): the keys of a partition share one pass over its history, and a message
that rebuilds state runs off the event loop."""

from __future__ import annotations

import asyncio
import random
import time

import orjson

from pipeline.handlers import DriftHandler, Source
from pipeline.metrics import Metrics
from pipeline.settings import AGRAWAL_FEATURES, Settings
from schemas import Explanation, dumps


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
    # before: each of the 270 series of the restart replayed in its own Kafka pass
    s = Settings(features=list(AGRAWAL_FEATURES), emit_every=5, drift_warmup=10)
    log = series_log()
    uninterrupted = DriftHandler(s)
    whole = events(lambda off: uninterrupted, log)
    assert len({series for series, _ in whole}) == 10  # the series that step up are detected
    first, second = DriftHandler(s), DriftHandler(s, history=log)
    resume = 30 * 100  # point 100 of every series, before the step
    assert events(lambda off: first if off < resume else second, log) == whole
    assert (log.scans, log.per_key_reads) == (1, 0)
    assert second.metrics.get("history_scans") == 1
    assert second.metrics.get("replayed_explanations") == resume


def test_a_message_that_rebuilds_state_runs_off_the_event_loop():
    from agents._forward import forward

    class SlowToRebuild:
        settings, metrics = Settings(features=list(AGRAWAL_FEATURES)), Metrics()

        def needs_recovery(self, key, src=None):
            return True

        def on_message(self, raw, key, src):
            time.sleep(0.3)  # a replay: blocking work
            return []

    class Msg:
        topic, partition, offset = "t", 0, 5

    class Event:
        value, key, message = b"", b"k", Msg()

    class Stream:
        async def events(self):
            yield Event()

    ticks = []

    async def heartbeat(done):
        while not done.is_set():
            ticks.append(1)
            await asyncio.sleep(0.01)

    async def main():
        done = asyncio.Event()
        beat = asyncio.create_task(heartbeat(done))
        await asyncio.sleep(0)
        n0 = len(ticks)
        await forward(Stream(), SlowToRebuild(), None, "drift")
        n1 = len(ticks)
        done.set()
        await beat
        return n1 - n0

    # the loop kept running while the rebuild blocked its thread (on the loop: 0 ticks)
    assert asyncio.run(main()) > 1


def test_with_checkpoints_the_pass_starts_at_the_oldest_checkpoint_needed(tmp_path):
    from pipeline.kafka.checkpoints import FileCheckpointStore

    s = Settings(features=list(AGRAWAL_FEATURES), emit_every=5, drift_warmup=10, checkpoint_every=40)
    log = series_log()
    uninterrupted = DriftHandler(s)
    whole = events(lambda off: uninterrupted, log)
    store = FileCheckpointStore(tmp_path, every=40, secret=b"k" * 32)
    first = DriftHandler(s, checkpoints=store)
    second = DriftHandler(s, history=log, checkpoints=store)
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
    s = Settings(features=list(AGRAWAL_FEATURES), emit_every=5, drift_warmup=10)
    log, n_b = ScanLog(), 0
    for off in range(400):
        if off < 50 and off % 2 or off >= 220 and off % 2:  # series b: only in these two stretches
            sid, n_b, i = "b", n_b + 1, n_b
        else:
            sid, i = "a", off
        msg = Explanation(sid, "ipfi", "age", 0.1, (i + 1) * 5 - 1, (i + 1) * 5, (i + 1) * 5, (i + 1) * 5 - 1)
        log.items.append((sid.encode(), dumps(msg)))  # explanations are keyed by stream
    handler = DriftHandler(s, history=log)

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
    """Before, a stream model kept here while another worker learned events 100..149 went on
    at 150 as if they had never happened: its predictions silently diverged."""
    from pipeline.handlers import ModelHandler
    from pipeline.local.demo_stream import agrawal_events

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
