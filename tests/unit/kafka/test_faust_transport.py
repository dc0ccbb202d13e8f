"""The worker's changes to Faust's driver keep what Faust hands the agents."""

from __future__ import annotations

import asyncio
import inspect
import time
from contextlib import contextmanager

import faust
import pytest
from faust.types import TP, Message
from streamxai.kafka.faust_transport import (
    FETCH_BUSY_WAIT_MS,
    FETCH_MAX_WAIT_MS,
    FETCH_MIN_BYTES,
    QuietMonitor,
    RawSchema,
    pace_fetches,
    use_bounded_fetch_wait,
)
from streamxai.kafka.fetch_pace import FetchPace


@pytest.mark.parametrize(("key", "value"), [(b"s1", b'{"x": 1}'), (None, b"\xff\x00"), (b"s1", None), (b"", b"")])
def test_raw_schema_decodes_as_faust_raw_codec(key, value):
    """The agents' topics once used Faust's "raw" codec; the raw schema must give the same key and
    value for every record (bytes, empty, absent), or handlers would see other input."""
    app = faust.App("raw-schema-test", broker="kafka://127.0.0.1:9")
    codec = faust.Schema(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
    msg = Message("t", 0, 7, 0.0, 0, [("origin", b"f")], key, value, None)
    ours, faust_s = (asyncio.run(schema.decode(app, msg, propagate=True)) for schema in (RawSchema(), codec))
    assert (ours.key, ours.value, ours.headers) == (faust_s.key, faust_s.value, faust_s.headers)
    assert (ours.key, ours.value) == (key, value)


@contextmanager
def _consumer():
    """The worker's consumer, never started (no broker): its hand-over needs none."""
    app = faust.App("handover-test", broker="kafka://127.0.0.1:9", loop=asyncio.get_running_loop())
    use_bounded_fetch_wait(app)
    consumer = app.consumer
    try:
        yield consumer
    finally:
        consumer._thread.thread_loop.close()  # the loop its (never started) fetch thread made


def test_handover_runs_the_callback_and_a_paused_flow_interrupts_a_blocked_one():
    """The fetcher's hand-over hands the record over in one task, and a paused flow ends a blocked one without it."""

    async def run():
        with _consumer() as consumer:
            return await hand_over(consumer)

    async def hand_over(consumer):
        handed = []

        async def callback(record):
            handed.append(record)

        assert await consumer.wait_first(callback("r1"), consumer.suspend_flow.wait()) is None
        blocked, cancelled = asyncio.Event(), []

        async def blocking(record):
            try:
                await blocked.wait()  # a stream buffer that stays full
                handed.append(record)
            except asyncio.CancelledError:
                cancelled.append(record)
                raise

        waiting = asyncio.ensure_future(consumer.wait_first(blocking("r2"), consumer.suspend_flow.wait()))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        consumer.stop_flow()
        assert await asyncio.wait_for(waiting, 5) is None  # a bound on the wait, not a measurement
        ready = asyncio.Event()
        ready.set()
        other = await consumer.wait_first(ready.wait(), timeout=1)  # not a hand-over: mode's race
        return handed, cancelled, other.stopped

    assert asyncio.run(run()) == (["r1"], ["r2"], False)


def test_cancelling_the_fetcher_cancels_the_handover_and_propagates():
    async def run():
        with _consumer() as consumer:
            return await cancel(consumer)

    async def cancel(consumer):
        blocked = asyncio.Event()

        async def blocking(record):
            await blocked.wait()

        waiting = asyncio.ensure_future(consumer.wait_first(blocking("r"), consumer.suspend_flow.wait()))
        await asyncio.sleep(0.01)
        handover = consumer._handover
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return handover.cancelled(), consumer._handover

    assert asyncio.run(run()) == (True, None)


def test_a_handover_that_does_not_wait_runs_at_once_and_one_that_waits_is_finished_by_a_task():
    """A hand-over into a buffer with room runs to its end inside the fetcher's call (no task, no loop turn);
    one that waits on a full buffer goes on in a task until it has handed the record over."""

    async def run():
        with _consumer() as consumer:
            return await hand_over(consumer)

    async def hand_over(consumer):
        handed, turns = [], []
        asyncio.get_running_loop().call_soon(turns.append, "turn")

        async def callback(record):
            handed.append(record)

        await consumer.wait_first(callback("r1"), consumer.suspend_flow.wait())
        at_once = (list(handed), list(turns))
        room = asyncio.Event()

        async def waiting_for_room(record):
            await asyncio.sleep(0)
            await room.wait()
            handed.append(record)
            return "not for the fetcher"

        waiting = asyncio.ensure_future(consumer.wait_first(waiting_for_room("r2"), consumer.suspend_flow.wait()))
        await asyncio.sleep(0.01)
        blocked = (waiting.done(), consumer._handover is not None)
        room.set()
        assert await asyncio.wait_for(waiting, 5) is None  # a bound on the wait, not a measurement
        return at_once, blocked, handed, consumer._handover

    assert asyncio.run(run()) == ((["r1"], []), (False, True), ["r1", "r2"], None)


def test_a_partition_resumed_after_a_full_buffer_wakes_the_fetch_waiting_on_the_others():
    """Resuming a partition paused on a full buffer wakes the fetch in flight, which looks again at the
    partitions it may return (the resumed one included)."""
    app = faust.App("resume-test", broker="kafka://127.0.0.1:9", loop=asyncio.new_event_loop())
    use_bounded_fetch_wait(app)
    consumer = app.consumer
    thread_loop = consumer._thread.thread_loop
    try:
        tp, other = faust.types.TP("t", 0), faust.types.TP("t", 1)
        consumer._active_partitions = {tp, other}
        consumer.on_buffer_full(tp)
        assert consumer._get_active_partitions() == {other}
        waiter = thread_loop.create_future()  # aiokafka's fetched_records waiting for data
        consumer._thread._consumer = type("C", (), {"_fetcher": type("F", (), {"_fetch_waiters": {waiter}})()})()
        consumer.on_buffer_drop(other)  # never paused: nothing to wake
        thread_loop.run_until_complete(asyncio.sleep(0))
        assert not waiter.done()
        consumer.on_buffer_drop(tp)
        thread_loop.run_until_complete(asyncio.sleep(0))
        assert waiter.done() and consumer._get_active_partitions() == {tp, other}
    finally:
        consumer._thread._consumer = None
        thread_loop.close()
        app.loop.close()


def test_the_workers_fetches_wait_for_data_up_to_the_bounded_wait():
    """The worker's aiokafka consumer asks the broker to wait for FETCH_MIN_BYTES, at most FETCH_MAX_WAIT_MS."""
    from aiokafka import AIOKafkaConsumer

    async def made() -> tuple[int, int]:
        with _consumer() as consumer:
            client = consumer._thread._create_worker_consumer(consumer.transport)
            await client.stop()  # never started: closes its (unconnected) client
            return client._fetch_min_bytes, client._fetch_max_wait_ms

    assert asyncio.run(made()) == (FETCH_MIN_BYTES, FETCH_MAX_WAIT_MS)
    assert FETCH_MIN_BYTES > 1 and FETCH_MAX_WAIT_MS <= 100  # data waited for; with room, a record waits 100 ms at most
    # an idle worker's CPU is mostly its empty fetches (bench_streams.py measures idle CPU): 10 a
    # second at most
    assert 1000 / FETCH_MAX_WAIT_MS <= 10
    start = inspect.getsource(AIOKafkaConsumer.start)
    assert "fetch_min_bytes=self._fetch_min_bytes" in start and "fetch_max_wait_ms=self._fetch_max_wait_ms" in start


def test_the_consumer_records_the_commits_the_broker_accepted_and_no_other():
    """The checkpoint stores learn only commits the broker accepted, not refused ones."""
    from streamxai.kafka.committed_offsets import CommittedOffsets

    async def run():
        app = faust.App("commit-test", broker="kafka://127.0.0.1:9", loop=asyncio.get_running_loop())
        commits = CommittedOffsets()
        use_bounded_fetch_wait(app, commits)
        consumer = app.consumer
        tp, gone = faust.types.TP("t", 0), faust.types.TP("t", 1)
        outcome = []

        async def commit(offsets):
            return outcome.pop(0)

        consumer._thread.commit = commit
        consumer.assignment = lambda: {tp}
        try:
            outcome.append(True)
            assert await consumer._commit({tp: 40, gone: 9}) is True
            outcome.append(False)
            assert await consumer._commit({tp: 90}) is False
        finally:
            consumer._thread.thread_loop.close()
        return commits.committed("t", 0), commits.committed("t", 1)

    assert asyncio.run(run()) == (40, None)


async def _commit_with(outputs, offset: int, order: list) -> bool:
    """The worker's consumer committing ``offset`` of ``t[0]`` with ``outputs`` as the agents'
    producer; each commit that reaches the broker's side is noted in ``order``."""
    app = faust.App("commit-test", broker="kafka://127.0.0.1:9", loop=asyncio.get_running_loop())
    use_bounded_fetch_wait(app, None, outputs)
    consumer = app.consumer
    tp = faust.types.TP("t", 0)

    async def commit(offsets):
        order.append(("committed", offsets[tp]))
        return True

    consumer._thread.commit = commit
    consumer.assignment = lambda: {tp}
    try:
        return await consumer._commit({tp: offset})
    finally:
        consumer._thread.thread_loop.close()


def test_the_consumer_flushes_the_agents_output_producer_before_it_commits():
    """The consumer flushes the agents' OutputProducer before it commits."""
    order = []

    class Outputs:
        async def flush(self):
            await asyncio.sleep(0)  # a flush that waits: the commit must wait for it
            order.append("flushed")

    assert asyncio.run(_commit_with(Outputs(), 40, order)) is True
    assert order == ["flushed", ("committed", 40)]


def test_no_commit_follows_a_failed_flush_of_the_agents_outputs():
    """After a fatal error of the output producer its messages since are lost: the commit must
    not go past them (the worker stops; its restart sends them again)."""
    from streamxai.kafka.output_producer import SendFailed

    order = []

    class Outputs:
        async def flush(self):
            raise SendFailed("the output producer failed (out of order)")

    with pytest.raises(SendFailed):
        asyncio.run(_commit_with(Outputs(), 40, order))
    assert order == []


def test_the_quiet_monitor_keeps_only_when_each_partitions_stream_last_took_a_record():
    """The quiet monitor keeps ``stream_inbound_time`` (for Faust's stall check) and no per-message statistics."""
    monitor = QuietMonitor()
    tp = TP("t", 3)
    before = time.monotonic()
    monitor.on_stream_event_in(tp, 7, stream=object(), event=object())
    assert set(monitor.stream_inbound_time) == {tp}
    assert before <= monitor.stream_inbound_time[tp] <= time.monotonic()
    assert monitor.events_total == 0 and not monitor.events_by_stream


def test_a_busy_worker_has_its_running_fetcher_wait_longer_and_shorter_again_once_it_has_room():
    """A busy worker's running fetcher waits up to FETCH_BUSY_WAIT_MS, and FETCH_MAX_WAIT_MS with room again."""
    told = []
    cpu, clock = iter([0.0, 0.9, 1.1]), iter([0.0, 1.0, 2.0])
    pace = FetchPace(FETCH_MAX_WAIT_MS, FETCH_BUSY_WAIT_MS, cpu=cpu.__next__, clock=clock.__next__)

    async def paced() -> list[int]:
        with _consumer() as consumer:
            fetcher = type("Fetcher", (), {"_fetch_max_wait_ms": FETCH_MAX_WAIT_MS})()
            consumer._thread._consumer = type("AIOKafkaConsumer", (), {"_fetcher": fetcher})()
            app = type("App", (), {"consumer": consumer})()
            waits = []
            for _ in range(3):
                pace_fetches(app, pace, told.append)
                waits.append(fetcher._fetch_max_wait_ms)
            consumer._thread._consumer = None
            return waits

    assert asyncio.run(paced()) == told == [FETCH_MAX_WAIT_MS, FETCH_BUSY_WAIT_MS, FETCH_MAX_WAIT_MS]
    assert FETCH_BUSY_WAIT_MS > FETCH_MAX_WAIT_MS
