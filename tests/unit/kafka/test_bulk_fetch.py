"""The consumer hands fetched intake records to one sink and acknowledges them only after it returned, never
across a stopped flow or a new generation (a stub stands for aiokafka's ``_getmany``)."""

from __future__ import annotations

import asyncio
from collections import namedtuple
from contextlib import asynccontextmanager

import faust
from faust.types import TP
from streamxai.kafka.bulk_fetch import take_in_bulk
from streamxai.kafka.faust_transport import use_bounded_fetch_wait

Record = namedtuple("Record", "topic partition offset key value timestamp headers")
F0, F1, L0, A0 = TP("f", 0), TP("f", 1), TP("l", 0), TP("a", 0)


def recs(tp: TP, *offsets: int) -> list[Record]:
    return [Record(tp.topic, tp.partition, o, b"s", b"v%d" % o, 1_700_000_000_000 + o, []) for o in offsets]


@asynccontextmanager
async def consumer_with(sink, fetches: list[dict], bulk=("f", "l")):
    """The worker's consumer, its fetches the ``fetches`` given in turn, ``bulk`` taken by ``sink``."""
    app = faust.App("bulk-test", broker="kafka://127.0.0.1:9", loop=asyncio.get_running_loop())
    use_bounded_fetch_wait(app)
    assert take_in_bulk(app, bulk, sink)
    consumer = app.consumer
    consumer.assignment = lambda: {F0, F1, L0, A0}
    consumer._set_active_tps(consumer.assignment())  # as on_partitions_assigned sets them
    app.topics.acking_topics.update({"f", "l", "a"})  # as the conductor marks the agents' topics

    async def getmany(active_partitions, timeout):
        return fetches.pop(0)

    consumer._getmany = getmany
    try:
        yield consumer
    finally:
        consumer._thread.thread_loop.close()


def committable(consumer, tp: TP):
    """The offset a commit would now take ``tp`` to (None: nothing acknowledged)."""
    return consumer._new_offset(tp)


def test_the_bulk_topics_records_go_to_the_sink_in_one_call_the_rest_stay_for_faust():
    got = []

    async def sink(fetched):
        got.append([(tp, r.offset) for tp, r in fetched])

    async def run():
        fetch = {F0: recs(F0, 0, 1, 2), L0: recs(L0, 5), A0: recs(A0, 9), F1: recs(F1, 3)}
        async with consumer_with(sink, [fetch]) as c:
            records, _ = await c._wait_next_records(1.0)
            return records, committable(c, F0), committable(c, F1), committable(c, L0), committable(c, A0)

    records, f0, f1, l0, a0 = asyncio.run(run())
    assert list(records) == [A0]  # Faust's per-record way: everything else
    assert len(got) == 1  # one call for the fetch
    # Faust's round-robin over topics and partitions, each partition in order
    assert sorted(got[0]) == sorted([(F0, 0), (F0, 1), (F0, 2), (L0, 5), (F1, 3)])
    assert [o for tp, o in got[0] if tp == F0] == [0, 1, 2]
    assert (f0, f1, l0, a0) == (3, 4, 6, None)  # acknowledged after the sink; the arrivals record is not ours


def test_nothing_is_acknowledged_before_the_sink_returns():
    """At least once: a record's offset may be committed only once its outputs are with the
    producer, i.e. after the sink returned."""
    seen = []

    async def run():
        async def sink(fetched):
            seen.append(committable(c, F0))  # what a commit during the sink would take
            await asyncio.sleep(0)

        async with consumer_with(sink, [{F0: recs(F0, 0, 1)}]) as c:
            await c._wait_next_records(1.0)
            return committable(c, F0)

    assert asyncio.run(run()) == 2
    assert seen == [None]


def test_a_flow_stopped_or_a_new_generation_during_the_sink_acknowledges_nothing():
    """A rebalance during the sink acknowledges nothing (the records come again after Faust seeks back)."""

    async def run(what):
        async def sink(fetched):
            if what == "stop":
                c.stop_flow()
            elif what == "rebalance":
                c.app.rebalancing = True
            else:
                c.app.consumer_generation_id += 1

        async with consumer_with(sink, [{F0: recs(F0, 0, 1)}]) as c:
            await c._wait_next_records(1.0)
            return committable(c, F0)

    assert [asyncio.run(run(w)) for w in ("stop", "rebalance", "generation")] == [None, None, None]


def test_records_fetched_again_after_a_rebalance_during_the_sink_are_handed_over_again():
    """Records sought back to by a rebalance during the sink come again (not dropped as already read)."""
    got = []

    async def run():
        async def sink(fetched):
            got.extend(r.offset for _, r in fetched)
            if len(got) == 3:  # the first fetch: a rebalance meanwhile, the partition kept, sought back
                c.app.consumer_generation_id += 1
                c._read_offset[F0] = 0

        async with consumer_with(sink, [{F0: recs(F0, 0, 1, 2)}, {F0: recs(F0, 0, 1, 2)}]) as c:
            await c._wait_next_records(1.0)
            await c._wait_next_records(1.0)
            return committable(c, F0)

    assert asyncio.run(run()) == 3
    assert got == [0, 1, 2, 0, 1, 2]


def test_a_stopped_flow_hands_nothing_over():
    called = []

    async def sink(fetched):
        called.append(fetched)

    async def run_resumed():
        async with consumer_with(sink, [{F0: recs(F0, 0, 1)}]) as c:
            c.stop_flow()
            task = asyncio.ensure_future(c._wait_next_records(1.0))
            await asyncio.sleep(0)
            c.resume_flow()
            c.flow_active = False  # stopped again while the fetch was out: Faust seeks back, we take nothing
            records, _ = await task
            return records

    assert asyncio.run(run_resumed()) == {}
    assert called == []


def test_records_before_the_read_offset_are_skipped_and_a_gap_is_passed_by_commits():
    """Records fetched again below the read offset are skipped, and offset gaps do not hold commits back."""
    got = []

    async def sink(fetched):
        got.extend(r.offset for _, r in fetched)

    async def run():
        async with consumer_with(sink, [{F0: recs(F0, 0, 1, 2)}, {F0: recs(F0, 1, 2, 5, 6, 9)}]) as c:
            await c._wait_next_records(1.0)
            first = committable(c, F0)
            await c._wait_next_records(1.0)
            return first, committable(c, F0)

    first, second = asyncio.run(run())
    # Faust hands over a record at the read offset itself again (its test is >=): 2 twice
    assert got == [0, 1, 2, 2, 5, 6, 9]
    assert (first, second) == (3, 10)


def test_a_paused_partition_is_left_as_faust_leaves_it():
    got = []

    async def sink(fetched):
        got.extend((tp, r.offset) for tp, r in fetched)

    async def run():
        async with consumer_with(sink, [{F0: recs(F0, 0), F1: recs(F1, 0)}]) as c:
            c.pause_partitions([F1])
            await c._wait_next_records(1.0)
            return committable(c, F1)

    assert asyncio.run(run()) is None
    assert got == [(F0, 0)]


def test_broker_commit_every_is_honoured():
    """Faust commits once ``broker_commit_every`` messages were acknowledged; so does the bulk way."""
    commits = []

    async def sink(fetched):
        pass

    async def run():
        async with consumer_with(sink, [{F0: recs(F0, *range(5))}, {F0: recs(F0, *range(5, 12))}]) as c:
            c._commit_every = 10

            async def commit(*args, **kwargs):
                commits.append(c._n_acked)
                return True

            c.commit = commit
            await c._wait_next_records(1.0)
            await c._wait_next_records(1.0)
            return c._n_acked

    assert asyncio.run(run()) == 0
    assert commits == [0]  # one commit, after the 12th (the count reset before it, as Faust resets it)


def test_without_the_workers_transport_nothing_is_taken_in_bulk():
    app = faust.App("plain", broker="kafka://127.0.0.1:9")

    async def sink(fetched):
        pass

    assert take_in_bulk(app, ["f"], sink) is False


def test_a_worker_takes_each_of_its_agents_topics_in_bulk_each_to_its_own_handler(tmp_path):
    """The worker's app hands its intake's topics to the intake and each agent's input topic to
    that agent's handler, in bulk; a role it does not run takes nothing."""
    from streamxai.app import create_app
    from streamxai.settings import Settings

    s = Settings(bootstrap_servers="127.0.0.1:9", state_dir=str(tmp_path), checkpoint_every=0)

    async def made(roles):
        app = create_app(s, roles=roles)
        try:
            sinks = app.transport.bulk_sinks
            return app.transport.bulk_topics, {t: sink.keywords.get("stage") for t, sink in sinks.items()}
        finally:
            app.consumer._thread.thread_loop.close()

    topics, stages = asyncio.run(made(("model", "explain", "change")))
    assert stages == {s.topic("features"): "intake", s.topic("labels"): "intake", s.topic("arrivals"): "model",
                      s.topic("explain-tasks"): "explain", s.topic("drift-feed"): "change"}
    assert topics == set(stages)
    topics, stages = asyncio.run(made(("explain",)))
    assert stages == {s.topic("explain-tasks"): "explain"} and topics == {s.topic("explain-tasks")}


def test_the_records_of_one_fetch_go_to_each_topics_sink_in_the_order_they_came():
    got = []

    def sink(name):
        async def take(fetched):
            got.append((name, [(tp.topic, r.offset) for tp, r in fetched]))
        return take

    async def run():
        fetch = {F0: recs(F0, 0, 1), L0: recs(L0, 5), A0: recs(A0, 9, 10), F1: recs(F1, 3)}
        async with consumer_with(sink("intake"), [fetch]) as c:
            assert take_in_bulk(c.app, ["a"], sink("model"))
            records, _ = await c._wait_next_records(1.0)
            return records, committable(c, A0)

    records, a0 = asyncio.run(run())
    assert records == {} and a0 == 11  # nothing left for Faust; the arrivals acknowledged after their sink
    assert [name for name, _ in got] == ["intake", "model"]  # one call per sink
    intake, model = got[0][1], got[1][1]
    assert sorted(intake) == [("f", 0), ("f", 1), ("f", 3), ("l", 5)] and model == [("a", 9), ("a", 10)]
    assert [o for t, o in intake if t == "f" and o != 3] == [0, 1]


def test_the_partitions_handed_to_the_sink_count_as_started_for_fausts_stall_check():
    """The partitions handed to the sink get ``Monitor.stream_inbound_time`` set before the sink runs, they only."""
    seen = {}

    async def run():
        async with consumer_with(None, [{F0: recs(F0, 0), F1: recs(F1, 0), A0: recs(A0, 0)}]) as c:
            inbound = c.app.monitor.stream_inbound_time

            async def sink(fetched):
                seen.update(inbound)

            c.transport.bulk_sink = sink
            c.pause_partitions([F1])
            await c._wait_next_records(1.0)
            return dict(inbound)

    after = asyncio.run(run())
    assert set(seen) == set(after) == {F0}  # not the paused F1, nor A0 (Faust's way: its stream records it)
