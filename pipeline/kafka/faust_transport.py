"""What a worker's Faust app changes in Faust's Kafka driver (aiokafka) and its bookkeeping, and why.

- **The consumer's fetch wait** (:data:`FETCH_MAX_WAIT_MS`). Faust creates its consumer with
  ``fetch_max_wait_ms=1500``. aiokafka keeps one fetch request in flight per broker, for the
  partitions it holds no records of; the broker answers it when one of *those* partitions gets
  data, or after the wait. A worker consumes what it produces (arrivals, explain tasks,
  explanations), so the partition that gets data next is often not in the request in flight:
  one worker then sat idle for up to 1.5 s at a time: from the first prediction to the last
  explanation of 2,000 events (logistic regression, issue 17) took it 2.6-3.0 s of wall time
  for 1.4-1.6 s of CPU; with the wait bounded, 1.0-1.2 s. (Until its change agent had taken up
  every explanation, 5.4-6.3 s against 6.6-8.0 s: the change agent's backlog is another story,
  see README.)
- **How much a fetch waits for** (:data:`FETCH_MIN_BYTES`). A worker consumes a trickle of
  its own records (``arrivals``, ``explain-tasks``, ``drift-feed``: 0.15 per event) beside
  ``features``. With Faust's ``fetch_min_bytes=1`` the broker answered a fetch as soon as
  one of them came: 0.13-0.16 fetches per event, each asking for and parsing all the
  worker's partitions (20 at 4 partitions a topic) in pure Python on the consumer's thread,
  about 100 us of CPU per event with logistic regression (``bench_speed.py --census``: the
  consumer's thread, sampled on its own, and the fetches counted), half the transport's cost.
  The broker then answered once 64 KiB had come or the wait was over (20 ms then: 0.04 fetches
  per event in the same run), and since stop 27 once 1 MiB has come or the wait is over: a
  busy worker fetches about every 100 ms (1 MiB is more than 100 ms of a worker's input and hops
  at a thousand events a second), each fetch bringing more, so every stage of the worker takes
  bigger batches. With logistic regression (``bench_speed.py --kafka``, 8,000 events, 6 rounds,
  both in the same rounds) the worker used 1,016 us of CPU an event against 1,277 with 64 KiB,
  its main thread 955 us on a core against 1,191, the consumer's thread 25-35 us against
  40-50, and the median ratio to the in-process loop was 0.988 against 0.834. A record so waits
  at most the wait more at the broker on each hop through the worker (features, arrivals,
  explain tasks, drift feed), as it did at 64 KiB once less than that came within the wait:
  which is what an idle worker's fetch already waited for a partition the fetch in flight did
  not ask for.
- **How long an idle fetch waits** (:data:`FETCH_MAX_WAIT_MS`, 100 ms). With nothing to read,
  the broker answers each fetch after the wait and the consumer's thread parses the empty
  answer for every partition the worker holds: at 20 ms (50 fetches a second) an idle worker
  used 2.5-2.8 % of a core (ARF(10), 4 partitions a topic), at 100 ms 0.8-0.9 %, and a busy
  worker's rate did not drop (logistic regression, 2,000 events, five runs each alternating:
  median 626 -> 1,035 events/s of wall time on a loaded machine, 2,740 -> 3,077 per CPU s;
  ``tests/benchmarks/bench_idle_fetch.py``). The price: at a trickle a record may wait up to
  100 ms at the broker on each of the four hops.
- **How much one produce batch holds** (:func:`producer_batch_bytes`). aiokafka closes a
  partition's batch at ``max_batch_size`` (Faust's default 16 KiB) and sends a closed batch at
  once, without its linger: a worker's ``drift-feed`` record (one a report, 14-18 KiB with
  ten features) fills a batch on its own and the explanations of about ten events fill
  another, so the producer sent a request every 7 events, each with about ten callbacks of
  its sender (its task's wake-ups, ``asyncio.wait``'s completions, the acknowledgement); an
  output meeting a closed batch not yet sent even waited for it. With batches of up to
  :data:`PRODUCER_MAX_BATCH_BYTES` the records a partition gets while the request before is
  in flight, or in its linger of 5 ms, go in one batch: logistic regression's worker sent a
  produce request every 50 events instead of every 7, 1.5 callbacks of its event loops per
  event instead of 4.2 (``bench_speed.py --census``). A batch is one record batch to the
  broker, which refuses one over ``message.max.bytes`` (1 MiB by default) whole, so it is at
  most ``max_dead_letter_bytes``, the setting that already stays below it (512 KiB by default).
- **A partition resumed after a full buffer** (``_Consumer.on_buffer_drop``). Faust stops
  fetching a partition whose stream buffer is over 80 % full (3,276 of ``stream_buffer_maxsize``
  4,096) and resumes it once the agent has drained the buffer to 40 %; the fetch in flight
  meanwhile waits up to 1 s for records of the *other* partitions, and nothing wakes it on the
  resume. One worker's change agent (logistic regression, 5,400 explanations behind) so sat
  idle for 0.45 s with its explanations already fetched (``bench_worker_wait.py``). The resume
  now wakes the fetch, which looks again at the partitions it may return (Faust's set, now
  with the resumed one) and returns that partition's records at once.
- **The hand-over of each record** (``_Consumer.wait_first``). Faust's fetcher hands every
  record to the agents' streams by racing the hand-over against a paused flow, a stop and a
  crash (mode's ``wait_first``: four tasks and ``asyncio.wait`` per record), so that a
  rebalance never waits on a full stream buffer. That race was about half of what a Faust
  agent doing nothing costs per message (``bench_faust_floor.py``: 54-57 us, 30-31 us with
  the hand-over in one task). The worker's consumer runs the hand-over in one task and
  cancels it itself when the flow is paused or the consumer stops: the same outcome (the
  record is not handed over; Faust fetches it again from the committed offset after the
  rebalance), one task instead of four. And most hand-overs need no task at all: the record
  goes into a stream buffer with room without waiting, so the hand-over's first step runs in
  the fetcher's call (:func:`_resume` finishes one that waits, in a task, as before). The
  fetcher then hands over a fetched batch before the agents' next turn, so an agent finds
  the batch waiting (the intake forwarded what it found as one arrivals record, until it took
  its records in bulk: 0.65 arrivals records per event with the hand-over in a task, fewer
  than 0.005 with it in the fetcher's call; logistic regression, 2,000 events waiting).
- **Features and labels in bulk** (``pipeline/kafka/bulk_fetch.py``). The records of the
  intake's topics skip that hand-over altogether: each fetch's go to the intake in one call
  (``bench_faust_floor.py``: 3.5 us a record, against 32.6 for a Faust agent doing nothing).
- **Decoding** (:class:`RawSchema`). The worker's topics carry bytes its handlers parse
  themselves; Faust's schema still looks up the "raw" codec in its registry for the key and
  the value of every message (9 % of an agent's CPU per message doing nothing else, measured
  with cProfile on ``bench_faust_floor.py``). The raw schema hands the record's bytes over as
  they are, which is what the "raw" codec returns for bytes and ``None``.
- **Faust's monitor** (:class:`QuietMonitor`). Faust's ``Monitor`` sensor keeps statistics of
  every message in, every stream event and every send, which no page of ours shows (the
  worker's metrics are :class:`streamxai.metrics.Metrics`); the quiet one keeps the rest of
  the monitor (commit and offset bookkeeping) and skips the per-message hooks.

>>> import faust
>>> app = faust.App("doc", broker="kafka://127.0.0.1:9", Monitor=QuietMonitor)
>>> use_bounded_fetch_wait(app)
>>> app.transport.Consumer.__name__, type(app.monitor).__name__
('_Consumer', 'QuietMonitor')
>>> app.topic("t", schema=RawSchema()).schema.key_type
<class 'bytes'>
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from faust import Schema
from faust.sensors.monitor import Monitor
from faust.transport.drivers import aiokafka as driver

from .bulk_fetch import BulkFetch, Sink
from .committed_offsets import CommittedOffsets

__all__ = ["FETCH_MAX_WAIT_MS", "FETCH_MIN_BYTES", "PRODUCER_MAX_BATCH_BYTES", "QuietMonitor", "RawSchema",
           "producer_batch_bytes", "use_bounded_fetch_wait"]

log = logging.getLogger("streamxai")

#: how long the broker may hold a worker's fetch request when none of its partitions has data
FETCH_MAX_WAIT_MS = 100
#: how much data the broker waits for (at most FETCH_MAX_WAIT_MS) before it answers a worker's fetch
FETCH_MIN_BYTES = 1024 * 1024
#: the most a worker's producer puts in one partition's batch (less if max_dead_letter_bytes is less)
PRODUCER_MAX_BATCH_BYTES = 256 * 1024


def producer_batch_bytes(max_dead_letter_bytes: int) -> int:
    """A worker's producer's ``max_batch_size``: :data:`PRODUCER_MAX_BATCH_BYTES`, or
    ``max_dead_letter_bytes`` (kept below the broker's ``message.max.bytes``) if that is less.

    >>> producer_batch_bytes(512 * 1024), producer_batch_bytes(100_000)
    (262144, 100000)
    """
    return min(PRODUCER_MAX_BATCH_BYTES, max_dead_letter_bytes)


class _ConsumerThread(driver.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # read by AIOKafkaConsumer.start() when it builds its fetcher; the constructor took Faust's 1500 and 1
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        consumer._fetch_min_bytes = FETCH_MIN_BYTES
        return consumer

    async def on_thread_stop(self) -> None:
        try:
            await super().on_thread_stop()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # this thread's own stop was cancelled
                raise
            # aiokafka's Fetcher.close() cancels its fetch tasks and awaits them without catching
            # the cancellation of one waiting out its retry back-off (the broker unreachable): it
            # escaped this thread as a traceback, and the consumer's client was left open
            log.info("the Kafka consumer stopped while the broker was unreachable (a fetch was waiting to retry)")
            if self._consumer is not None:
                await self._consumer._client.close()

    def wake_fetch(self) -> None:
        """Wake a fetch waiting for records (aiokafka's ``fetched_records``, on this thread's
        loop): it looks again at what it may return. Called from the agents' thread."""
        fetcher = getattr(self._consumer, "_fetcher", None)
        if fetcher is not None and not self.thread_loop.is_closed():
            self.thread_loop.call_soon_threadsafe(_wake, fetcher)


def _wake(fetcher: Any) -> None:
    for waiter in list(fetcher._fetch_waiters):
        if not waiter.done():
            waiter.set_result(None)


class _Consumer(BulkFetch, driver.Consumer):
    _handover: asyncio.Future | None = None

    async def _commit(self, offsets: Any) -> bool:
        """Commit ``offsets`` once the transport's ``outputs`` producer (the agents', an
        :class:`~streamxai.kafka.output_producer.OutputProducer`), if it has one, has flushed
        (Faust flushed its own producer before); those the broker accepted go to the transport's
        :class:`~streamxai.kafka.committed_offsets.CommittedOffsets`, if it has one. (Faust's
        ``Monitor.on_tp_commit`` is called after a commit that failed too, e.g. one refused
        after a rebalance, so it cannot tell what a restart resumes at.)"""
        outputs = getattr(self.transport, "outputs", None)
        if outputs is not None:  # the agents' outputs: flushed before the offsets that made them
            await outputs.flush()
        done = await super()._commit(offsets)
        commits = getattr(self.transport, "commits", None)
        if done and commits is not None:
            commits.record({tp: offset for tp, offset in offsets.items() if tp in self.assignment()})
        return done

    def _new_consumer_thread(self) -> _ConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def wait_first(self, *coros: Any, timeout: Any = None) -> Any:
        """The fetcher's hand-over of one record (``callback(message)``, raced against
        ``suspend_flow.wait()``) in one task, cancelled by :meth:`stop_flow` or a stop; any
        other wait as mode does it."""
        if not self._is_handover(coros, timeout) or self.suspend_flow.is_set() or self.should_stop:
            return await super().wait_first(*coros, timeout=timeout)
        handover, suspended = coros
        suspended.close()  # never started: the flow is watched by stop_flow instead
        try:
            waits_on = handover.send(None)  # most hand-overs end at once: no task, no turn of the loop
        except StopIteration:
            return None
        task = self._handover = asyncio.ensure_future(_resume(handover, waits_on))
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and current is not None and not current.cancelling():
                return None  # the flow paused or the consumer stopped: the record is not handed over
            raise
        finally:
            self._handover = None
        return None

    def on_buffer_drop(self, tp: Any) -> None:
        """Resume fetching ``tp`` (its stream buffer drained), and wake the fetch in flight."""
        resumed = tp in self._buffered_partitions
        super().on_buffer_drop(tp)
        if resumed:
            self._thread.wake_fetch()

    def _is_handover(self, coros: tuple, timeout: Any) -> bool:
        if len(coros) != 2 or timeout is not None or not asyncio.iscoroutine(coros[1]):
            return False
        frame = getattr(coros[1], "cr_frame", None)
        return frame is not None and frame.f_locals.get("self") is self.suspend_flow

    def _interrupt_handover(self) -> None:
        if self._handover is not None and not self._handover.done():
            self._handover.cancel()

    def stop_flow(self) -> None:
        super().stop_flow()
        self._interrupt_handover()

    async def on_stop(self) -> None:
        self._interrupt_handover()
        await super().on_stop()


async def _resume(coro: Any, waits_on: Any) -> Any:
    """Run ``coro`` on, as a task would, from where its first step stopped: waiting on the
    future ``waits_on`` (None: it only yielded). The task running this is what a stop or a
    paused flow cancels: the cancellation goes into ``coro`` at its wait."""
    while True:
        try:
            if waits_on is None:
                await asyncio.sleep(0)
            elif not waits_on.done():
                await asyncio.wait((waits_on,))
        except asyncio.CancelledError as e:
            if waits_on is not None:
                waits_on.cancel()
            try:
                waits_on = coro.throw(e)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            waits_on = coro.send(None)  # the awaiting code reads the future's outcome itself
        except StopIteration as stop:
            return stop.value


class _Transport(driver.Transport):
    Consumer = _Consumer
    #: where the consumer records the offsets it committed (None: nowhere)
    commits: CommittedOffsets | None = None
    #: the topics whose fetched records go to ``bulk_sink`` (``pipeline/kafka/bulk_fetch.py``), none: Faust's way
    bulk_topics: frozenset[str] = frozenset()
    bulk_sink: Sink | None = None


def use_bounded_fetch_wait(app: Any, commits: CommittedOffsets | None = None, outputs: Any = None) -> None:
    """Give ``app`` (a Faust app on a ``kafka://`` broker) a consumer whose fetch requests wait at
    most :data:`FETCH_MAX_WAIT_MS` for :data:`FETCH_MIN_BYTES` (the module docstring says why),
    that flushes ``outputs`` (the agents' producer) before it commits, and that records each
    commit the broker accepted in ``commits``."""
    app.transport = _Transport(app.conf.broker_consumer, app, loop=app.loop)
    app.transport.commits = commits
    app.transport.outputs = outputs


class QuietMonitor(Monitor):
    """Faust's monitor without its per-message statistics (the module docstring says why)."""

    def on_message_in(self, tp: Any, offset: int, message: Any) -> None:
        pass

    def on_stream_event_in(self, tp: Any, offset: int, stream: Any, event: Any) -> None:
        return None

    def on_stream_event_out(self, tp: Any, offset: int, stream: Any, event: Any, state: Any = None) -> None:
        pass

    def on_message_out(self, tp: Any, offset: int, message: Any) -> None:
        pass

    def on_send_initiated(self, producer: Any, topic: str, message: Any, keysize: int, valsize: int) -> Any:
        return None

    def on_send_completed(self, producer: Any, state: Any, metadata: Any) -> None:
        pass

    def on_send_error(self, producer: Any, exc: BaseException, state: Any) -> None:
        pass


class RawSchema(Schema):
    """Keys and values as the bytes the record carries, no codec looked up (the module
    docstring says why).

    >>> RawSchema().loads_value(None, type("Record", (), {"value": b"{}"})())
    b'{}'
    """

    def __init__(self) -> None:
        super().__init__(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")

    def loads_key(self, app: Any, message: Any, *, loads: Any = None, serializer: Any = None) -> Any:
        return message.key

    def loads_value(self, app: Any, message: Any, *, loads: Any = None, serializer: Any = None) -> Any:
        return message.value
