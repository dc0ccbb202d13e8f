"""What a worker's Faust app changes in Faust's Kafka driver (aiokafka): a worker consumes the
records it produces itself, so fetches wait a bounded time for a batch's worth of data
(:data:`FETCH_MAX_WAIT_MS`, :data:`FETCH_MIN_BYTES`), the producer's batches grow
(:func:`producer_batch_bytes`), a resumed partition wakes the fetch in flight, records are
handed over in one task instead of mode's four, :class:`RawSchema` skips the codec look-up and
:class:`QuietMonitor` skips Faust's per-message statistics (keeping what its check for stalled
partitions reads).

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
from collections.abc import Callable
from time import monotonic
from typing import Any

from faust import Schema
from faust.sensors.monitor import Monitor
from faust.transport.drivers import aiokafka as driver

from . import private_api
from .bulk_fetch import BulkFetch, Sink
from .committed_offsets import CommittedOffsets
from .fetch_pace import PACE_S, FetchPace
from .stepping import resume

__all__ = ["FETCH_BUSY_WAIT_MS", "FETCH_MAX_PARTITION_BYTES", "FETCH_MAX_WAIT_MS", "FETCH_MIN_BYTES", "MAX_POLL_RECORDS",
           "PRODUCER_MAX_BATCH_BYTES", "QuietMonitor", "RawSchema", "pace_fetches", "producer_batch_bytes",
           "use_bounded_fetch_wait"]

log = logging.getLogger("streamxai")

#: how long the broker may hold a worker's fetch request when none of its partitions has data,
#: while the agents have room: the partition a worker's own output lands on next is often not
#: in the fetch in flight, and Faust's 1.5 s would leave the worker idle that long
FETCH_MAX_WAIT_MS = 100
#: how long the broker may hold a worker's fetch request while the worker's agents are busy
#: (:mod:`~streamxai.kafka.fetch_pace`): their records wait in the worker's own queues then
FETCH_BUSY_WAIT_MS = 300
#: how much data the broker waits for (at most the fetch's wait) before it answers a worker's
#: fetch: a busy worker fetches about once a wait, each fetch bringing more, so every stage
#: takes bigger batches (Faust's 1 byte answers each trickle of the worker's own records)
FETCH_MIN_BYTES = 1024 * 1024
#: the most a worker's producer puts in one partition's batch (less if max_dead_letter_bytes is
#: less): fewer produce requests than Faust's 16 KiB; the broker refuses a batch over
#: ``message.max.bytes`` whole, hence the cap
PRODUCER_MAX_BATCH_BYTES = 256 * 1024
#: the most bytes a worker's fetch brings of one partition under ``max_live_streams`` (Faust's
#: ``consumer_max_fetch_size``): a worker with a backlog holds a fetched answer for every
#: partition it reads, so this bounds that memory
FETCH_MAX_PARTITION_BYTES = 64 * 1024
#: the most records a worker's consumer parses out of its fetches at a time (Faust's
#: ``broker_max_poll_records``), so a backlog's fetches do not all become record objects at once
MAX_POLL_RECORDS = 1000


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
        private_api.set_fetch_limits(consumer, FETCH_MAX_WAIT_MS, FETCH_MIN_BYTES)
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
            # would escape this thread as a traceback and leave the consumer's client open
            log.info("the Kafka consumer stopped while the broker was unreachable (a fetch was waiting to retry)")
            if self._consumer is not None:
                await private_api.consumer_client(self._consumer).close()

    def set_fetch_wait(self, max_wait_ms: int) -> None:
        """Have the fetch requests from now on wait at most ``max_wait_ms`` (read on this
        thread as each request is built; one int, set from the agents' thread)."""
        fetcher = private_api.fetcher(self._consumer)
        if fetcher is not None:
            private_api.set_fetch_wait(fetcher, max_wait_ms)

    def wake_fetch(self) -> None:
        """Wake a fetch waiting for records (aiokafka's ``fetched_records``, on this thread's
        loop): it looks again at what it may return. Called from the agents' thread."""
        fetcher = private_api.fetcher(self._consumer)
        if fetcher is not None and not self.thread_loop.is_closed():
            self.thread_loop.call_soon_threadsafe(_wake, fetcher)


def _wake(fetcher: Any) -> None:
    for waiter in private_api.fetch_waiters(fetcher):
        if not waiter.done():
            waiter.set_result(None)


class _Consumer(BulkFetch, driver.Consumer):
    _handover: asyncio.Future | None = None

    async def _commit(self, offsets: Any) -> bool:
        """Commit ``offsets`` once the ``outputs`` producer, if any, has flushed; those the broker
        accepted go to the transport's ``commits`` (Faust's ``on_tp_commit`` also sees failed
        commits, so it cannot tell what a restart resumes at)."""
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
        ``suspend_flow.wait()``) in one task instead of mode's four, cancelled by
        :meth:`stop_flow` or a stop; any other wait as mode does it."""
        if not self._is_handover(coros, timeout) or self.suspend_flow.is_set() or self.should_stop:
            return await super().wait_first(*coros, timeout=timeout)
        handover, suspended = coros
        suspended.close()  # never started: the flow is watched by stop_flow instead
        try:
            waits_on = handover.send(None)  # most hand-overs end at once: no task, no turn of the loop
        except StopIteration:
            return None
        task = self._handover = asyncio.ensure_future(resume(handover, waits_on))
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
        """Resume fetching ``tp`` (its stream buffer drained), and wake the fetch in flight: it
        waits for records of the other partitions only, and nothing else wakes it on the resume,
        so the agent would sit idle with the partition's records fetchable."""
        resumed = tp in self._buffered_partitions
        super().on_buffer_drop(tp)
        if resumed:
            self._thread.wake_fetch()

    def _is_handover(self, coros: tuple, timeout: Any) -> bool:
        if len(coros) != 2 or timeout is not None or not asyncio.iscoroutine(coros[1]):
            return False
        return private_api.runs_method_of(coros[1], self.suspend_flow)

    def _interrupt_handover(self) -> None:
        if self._handover is not None and not self._handover.done():
            self._handover.cancel()

    def stop_flow(self) -> None:
        super().stop_flow()
        self._interrupt_handover()

    async def on_stop(self) -> None:
        self._interrupt_handover()
        await super().on_stop()


class _Transport(driver.Transport):
    Consumer = _Consumer
    #: where the consumer records the offsets it committed (None: nowhere)
    commits: CommittedOffsets | None = None
    #: the topics whose fetched records go to ``bulk_sink`` (``pipeline/kafka/bulk_fetch.py``), none: Faust's way
    bulk_topics: frozenset[str] = frozenset()
    #: the sink of each of those topics (``take_in_bulk``)
    bulk_sinks: dict[str, Sink] = {}  # replaced by take_in_bulk, never changed in place
    bulk_sink: Sink | None = None


def use_bounded_fetch_wait(app: Any, commits: CommittedOffsets | None = None, outputs: Any = None,
                           on_pace: Callable[[int], None] | None = None) -> None:
    """Give ``app`` (a Faust app on a ``kafka://`` broker) a consumer whose fetches wait at most
    :data:`FETCH_MAX_WAIT_MS` for :data:`FETCH_MIN_BYTES` (:data:`FETCH_BUSY_WAIT_MS` while the
    agents are busy, :class:`~streamxai.kafka.fetch_pace.FetchPace`; ``on_pace`` is told each
    wait), that flushes ``outputs`` before it commits, and that records accepted commits in
    ``commits``."""
    app.transport = _Transport(app.conf.broker_consumer, app, loop=app.loop)
    app.transport.commits = commits
    app.transport.outputs = outputs
    pace = FetchPace(FETCH_MAX_WAIT_MS, FETCH_BUSY_WAIT_MS)

    @app.timer(interval=PACE_S)
    async def fetch_pace() -> None:
        pace_fetches(app, pace, on_pace)


def pace_fetches(app: Any, pace: FetchPace, on_pace: Callable[[int], None] | None = None) -> int:
    """Set the wait of the fetch requests of ``app``'s consumer from now on to what ``pace``
    gives now (called on the agents' thread); the wait, also told to ``on_pace``."""
    wait = pace.tick()
    thread = getattr(app.consumer, "_thread", None)  # none before the consumer has started
    if thread is not None:
        thread.set_fetch_wait(wait)
    if on_pace is not None:
        on_pace(wait)
    return wait


class QuietMonitor(Monitor):
    """Faust's monitor without its per-message statistics. It keeps ``stream_inbound_time``,
    which Faust's check for stalled partitions reads: without it every partition of a worker
    with a backlog would log an ERROR."""

    def on_message_in(self, tp: Any, offset: int, message: Any) -> None:
        pass

    def on_stream_event_in(self, tp: Any, offset: int, stream: Any, event: Any) -> None:
        self.stream_inbound_time[tp] = monotonic()
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
