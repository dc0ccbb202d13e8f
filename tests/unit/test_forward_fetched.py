"""The bulk hand-over of fetched records, in batches or one at a time: in order, counted once per topic,
each partition's last offset reported for lag."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import namedtuple
from types import SimpleNamespace

from streamxai.agents._forward import Outbox, forward_each, forward_fetched
from streamxai.handlers import IntakeHandler, Out, Source
from streamxai.metrics import Metrics
from streamxai.schemas import unpack_arrivals
from streamxai.settings import Settings

Record = namedtuple("Record", "topic partition offset key value timestamp headers")


class _Producer:
    def __init__(self):
        self.sent = []

    async def send(self, topic, key, value, partition, timestamp, headers):
        self.sent.append((topic, key, value, headers))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def test_a_fetch_is_counted_once_per_topic_and_its_last_offsets_reported():
    fetched = [(None, Record("x.features", p, o, b"s", b"v%d" % o, 1_700_000_000_000 + o, []))
               for p, o in [(0, 5), (1, 9), (0, 6), (1, 10), (0, 7)]]
    fetched.append((None, Record("x.labels", 2, 3, b"s", b"l3", None, [("h", b"1")])))

    async def run():
        settings = Settings(topic_prefix="x.")
        metrics = Metrics()
        producer = _Producer()
        await forward_fetched(fetched, handler=IntakeHandler(settings, metrics), outbox=Outbox(producer, settings, metrics),
                              stage="intake", batch=4)
        return metrics, producer.sent

    metrics, sent = asyncio.run(run())
    counters = metrics.snapshot()["counters"]
    assert counters["messages_in{topic=x.features}"] == 5 and counters["messages_in{topic=x.labels}"] == 1
    assert metrics._offsets == {("x.features", 0): 7, ("x.features", 1): 10, ("x.labels", 2): 3}
    # two batches (4 and 2 records), each one arrivals record of stream s, the records in their order
    taken = []
    for topic, key, value, headers in sent:
        assert topic == "x.arrivals" and key == b"s"
        taken += [(str(o), raw) for raw, o in unpack_arrivals(value, Source("x.arrivals", 0, 0, headers=tuple(headers)))]
    assert taken == [("x.features[0]@5", b"v5"), ("x.features[1]@9", b"v9"), ("x.features[0]@6", b"v6"),
                     ("x.features[1]@10", b"v10"), ("x.features[0]@7", b"v7"), ("x.labels[2]@3", b"l3")]


class _Handler:
    """A handler that keeps state, as the agents see one: it notes each message, the thread it
    ran on, and ``after(n)`` once it has taken ``n`` messages."""

    def __init__(self, settings, metrics, new_keys=(), after=lambda n: None):
        self.settings, self.metrics = settings, metrics
        self.taken: list[tuple[bytes, str, bool]] = []
        self.new_keys, self.after = set(new_keys), after

    def needs_recovery(self, key, src):
        return key in self.new_keys

    def on_message(self, raw, key, src):
        self.new_keys.discard(key)
        self.taken.append((raw, str(src), threading.current_thread() is threading.main_thread()))
        self.after(len(self.taken))
        return [Out("predictions", key, raw + b"!")]


class _App:
    """What :func:`forward_each` looks at of the worker's app: its consumer's flow, a rebalance, the generation."""

    def __init__(self):
        self.consumer = SimpleNamespace(flow_active=True, should_stop=False)
        self.rebalancing, self.consumer_generation_id = False, 4
        self.monitor = SimpleNamespace(stream_inbound_time={})


def _fetched(*offsets, topic="x.arrivals", partition=0):
    return [((topic, partition), Record(topic, partition, o, b"s", b"v%d" % o, 1_700_000_000_000 + o, [("h", b"1")]))
            for o in offsets]


def _forward_each(fetched, handler, app):
    async def run():
        producer = _Producer()
        await forward_each(fetched, handler=handler, outbox=Outbox(producer, handler.settings, handler.metrics),
                           stage="model", app=app)
        return producer.sent

    return asyncio.run(run())


def test_a_stateful_handler_takes_a_fetch_one_record_at_a_time_in_order_and_counts_what_it_took():
    settings, metrics = Settings(topic_prefix="x."), Metrics()
    handler, app = _Handler(settings, metrics, new_keys={b"s"}), _App()
    sent = _forward_each(_fetched(5, 6, 7), handler, app)
    assert [(raw, where) for raw, where, _ in handler.taken] == [(b"v5", "x.arrivals[0]@5"), (b"v6", "x.arrivals[0]@6"),
                                                                (b"v7", "x.arrivals[0]@7")]
    # the first message of a key without state may rebuild it from history: off the event loop, as forward does
    assert [on_loop for _, _, on_loop in handler.taken] == [False, True, True]
    assert [(topic, value) for topic, _, value, _ in sent] == [("x.predictions", b"v5!"), ("x.predictions", b"v6!"),
                                                              ("x.predictions", b"v7!")]
    assert metrics.snapshot()["counters"]["messages_in{topic=x.arrivals}"] == 3
    assert metrics._offsets == {("x.arrivals", 0): 7} and ("x.arrivals", 0) in app.monitor.stream_inbound_time


def test_a_rebalance_or_a_stopped_flow_stops_a_fetch_before_its_next_record():
    """The consumer acknowledges none of a fetch across a rebalance, and its records come again;
    the records after it are left to that."""

    def stop(app, what):
        def after(n):
            if n == 2:
                if what == "flow":
                    app.consumer.flow_active = False
                elif what == "rebalance":
                    app.rebalancing = True
                else:
                    app.consumer_generation_id += 1
        return after

    for what in ("flow", "rebalance", "generation"):
        settings, metrics, app = Settings(topic_prefix="x."), Metrics(), _App()
        handler = _Handler(settings, metrics, after=stop(app, what))
        sent = _forward_each(_fetched(5, 6, 7, 8), handler, app)
        assert [raw for raw, _, _ in handler.taken] == [b"v5", b"v6"] and len(sent) == 2, what
        assert metrics.snapshot()["counters"]["messages_in{topic=x.arrivals}"] == 2
        assert metrics._offsets == {("x.arrivals", 0): 6}


def test_a_stop_during_a_record_waits_for_it_whole_and_takes_no_other():
    """A stop during a record's off-loop rebuild waits until it is taken and its outputs handed over; no later
    record is taken."""
    settings, metrics, app = Settings(topic_prefix="x."), Metrics(), _App()
    handler = _Handler(settings, metrics, new_keys={b"s"}, after=lambda n: time.sleep(0.05))

    async def run():
        producer = _Producer()
        task = asyncio.ensure_future(forward_each(_fetched(5, 6), handler=handler,
                                                  outbox=Outbox(producer, settings, metrics), stage="model", app=app))
        await asyncio.sleep(0.01)  # the first record is in its thread
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return producer.sent, "cancelled"
        return producer.sent, "not cancelled"

    sent, outcome = asyncio.run(run())
    assert outcome == "cancelled"
    assert [raw for raw, _, _ in handler.taken] == [b"v5"] and [value for _, _, value, _ in sent] == [b"v5!"]
    assert metrics.snapshot()["counters"]["messages_in{topic=x.arrivals}"] == 1
