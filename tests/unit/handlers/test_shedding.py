"""Load shedding under a burst: every stream keeps a share of its explanations, and a restarted explainer
reproduces the decisions from the explain-decisions topic (a simulated clock: ``EXPLAIN_S`` an explained
task, ``LEARN_S`` a shed one)."""

from __future__ import annotations

import orjson
from streamxai.handlers import ExplainHandler, ModelHandler, Source
from streamxai.local.demo_stream import agrawal_events
from streamxai.metrics import Metrics
from streamxai.schemas import dumps
from streamxai.settings import Settings

EXPLAIN_S, LEARN_S = 0.05, 0.002
N_STREAMS, N_EVENTS = 6, 120


def settings(**over):
    base = dict(model="river.tree.HoeffdingTreeClassifier", model_params={"grace_period": 50}, alpha=0.02,
                emit_every=2, explain_groups=1, storage_size=10, grid_size=3, partitions=1,
                explainers=["ipfi"], features=["salary", "age", "elevel"], max_lag_s=1.0)
    base.update(over)
    return Settings(**base)


def burst(s):
    """Explain tasks of N_STREAMS streams, one stream after another (the order that starved all
    but the first streams), all sent at t = 0."""
    mh = ModelHandler(s)
    tasks = []
    for i in range(N_STREAMS):
        sid = f"b{i}"
        for off, ev in enumerate(agrawal_events(sid, N_EVENTS, seed=i)):
            x = {k: ev.x[k] for k in s.features}
            raw = dumps(ev.__class__(sid, ev.seq, ev.ts, x, ev.y))
            for o in mh.on_message(raw, sid.encode(), Source("features", 0, off)):
                if o.topic == "explain-tasks":
                    t = orjson.loads(o.value)
                    t["sent_at"] = 0.0
                    tasks.append((o.key, orjson.dumps(t)))
    return tasks


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Log:
    def __init__(self):
        self.parts = {}

    def history(self, topic, partition, before_offset, key, from_offset=0):
        for k, v in self.parts.get((topic, partition), [])[from_offset:before_offset]:
            if key is None or k == key:
                yield v


def run(handler, clock, tasks, offsets, log):
    """Feed tasks at ``offsets``; advance the clock by each task's cost; explanations by offset."""
    log.parts[("explain-tasks", 0)] = tasks
    out = {}
    for off in offsets:
        key, value = tasks[off]
        before = handler.metrics.get("events_explained")
        for o in handler.on_message(value, key, Source("explain-tasks", 0, off)):
            if o.topic == "explain-decisions":
                log.parts.setdefault((s_decisions(handler), o.partition), []).append((o.key, o.value))
            elif o.topic == "explanations":
                out.setdefault(off, []).append(o.value)
        clock.t += EXPLAIN_S if handler.metrics.get("events_explained") > before else LEARN_S
    return out


def s_decisions(handler):
    return handler.settings.topic("explain-decisions")


def explained_streams(out):
    return {orjson.loads(v)["stream_id"] for vs in out.values() for v in vs}


def test_every_stream_keeps_a_share_of_its_explanations_in_a_burst():
    s = settings()
    tasks = burst(s)
    clock = Clock()
    eh = ExplainHandler(s, clock=clock)
    out = run(eh, clock, tasks, range(len(tasks)), Log())
    assert explained_streams(out) == {f"b{i}" for i in range(N_STREAMS)}
    assert eh.metrics.get("shed_events") > len(tasks) // 2  # it was overloaded, and shed
    # a plain rule (shed whatever waited too long) explains only what comes before the lag passes
    # max_lag_s: the first stream's first ~20 events, none of the other streams
    old = settings()
    old_clock = Clock()
    old_handler = ExplainHandler(old, clock=old_clock)
    old_handler._decide = lambda st, task, waited: task.explain and waited <= old.max_lag_s
    assert explained_streams(run(old_handler, old_clock, tasks, range(len(tasks)), Log())) == {"b0"}


def test_a_restarted_explainer_reproduces_the_recorded_decisions():
    s = settings()
    tasks = burst(s)
    log, clock = Log(), Clock()
    first = ExplainHandler(s, clock=clock)
    whole = run(first, clock, tasks, range(len(tasks)), log)
    # the first run's worker died after task 500, having committed up to 400: a new one
    # replays tasks 0..399 and processes 400.. again, with a clock that would never shed
    crashed_log, crashed_clock = Log(), Clock()
    crashed = ExplainHandler(s, clock=crashed_clock)
    run(crashed, crashed_clock, tasks, range(501), crashed_log)
    resumed = ExplainHandler(s, clock=lambda: 0.0, history=crashed_log.history)
    again = run(resumed, Clock(), tasks, range(400, 501), crashed_log)
    assert again == {off: v for off, v in whole.items() if 400 <= off <= 500}
    assert resumed.metrics.get("replayed_tasks") > 0 and resumed.metrics.get("shed_events") > 0


def test_agents_of_one_worker_take_turns():
    """Two agent loops over inputs that are always ready (as under a backlog) interleave, so
    the explainer is not starved while the model agent runs thousands of events ahead."""
    import asyncio

    from streamxai.agents._forward import forward

    order = []

    class Handler:
        def __init__(self, name):
            self.name, self.settings, self.metrics = name, Settings(), Metrics()

        def on_message(self, raw, key, src):
            order.append(self.name)
            return []

        def needs_recovery(self, key, src=None):
            return False

    class Msg:
        topic, partition = "t", 0

        def __init__(self, off):
            self.offset = off

    class Event:
        def __init__(self, off):
            self.value, self.key, self.message = b"", b"k", Msg(off)

    class Stream:
        async def events(self):
            for off in range(200):
                yield Event(off)  # never waits: the data is already there

    async def both():
        await asyncio.gather(forward(Stream(), Handler("model"), None, "model"),
                             forward(Stream(), Handler("explain"), None, "explain"))

    asyncio.run(both())
    assert order.index("explain") < 5 and order[:20].count("model") <= 11
