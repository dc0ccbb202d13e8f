"""The loop every agent runs: bytes in, handler, messages out. No algorithm here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from functools import partial
from time import monotonic
from typing import TYPE_CHECKING, Any

from streamxai.handlers import Handler, Out, Source, dead_letter
from streamxai.ingest.registry import RegistryUnreachable
from streamxai.kafka.bulk_fetch import take_in_bulk
from streamxai.kafka.output_producer import OutputProducer
from streamxai.kafka.stepping import whole
from streamxai.metrics import key_profile
from streamxai.schemas import Headers

if TYPE_CHECKING:  # pragma: no cover - for annotations only
    from streamxai.metrics import Metrics
    from streamxai.settings import Settings

log = logging.getLogger("streamxai")


class Outbox:
    """Where an agent's outputs go: the worker's
    :class:`~streamxai.kafka.output_producer.OutputProducer` (librdkafka, below Faust's costly
    per-message ``Topic.send``), or a Faust producer's ``send`` (tests and notebooks); offsets
    are committed only after the producer has flushed.
    An output the producer refuses is replaced by a dead letter of its input (``send_error``);
    a dead letter that cannot be sent is logged and counted (``send_errors``), never raised.

    >>> import asyncio
    >>> from streamxai.metrics import Metrics
    >>> from streamxai.settings import Settings
    >>> class Producer:  # what Faust's producer offers: send(topic, key, value, partition, timestamp, headers)
    ...     async def send(self, topic, key, value, partition, timestamp, headers):
    ...         fut = asyncio.get_running_loop().create_future()
    ...         fut.set_result(None)  # acknowledged at once
    ...         print(topic, key, value, partition, headers)
    ...         return fut
    >>> box = Outbox(Producer(), Settings(topic_prefix="x."), Metrics())
    >>> async def demo():
    ...     await box.send(Out("arrivals", b"s", b"{}", headers=(("origin", b"f"),)), Source("f", 0, 7))
    ...     await asyncio.sleep(0)  # the acknowledgement's callback runs
    >>> asyncio.run(demo())
    x.arrivals b's' b'{}' None [('origin', b'f')]
    >>> box.metrics.snapshot()["counters"]
    {'messages_out{topic=x.arrivals}': 1}
    """

    def __init__(self, producer: Any, settings: Settings, metrics: Metrics):
        self.producer = producer
        #: outputs handed over with no future (the worker's OutputProducer)
        self._lean = isinstance(producer, OutputProducer)
        #: short topic name -> (full name, what counts its failed outputs), for :meth:`_hand_all`
        self._routes: dict[str, tuple[str, Callable[[Exception], None]]] = {}
        self.settings = settings
        self.metrics = metrics
        self._names: dict[str, str] = {}  # short topic name -> full

    async def send(self, out: Out, src: Source) -> Exception | None:
        """Hand ``out`` to the producer; the exception if it refused it (logged and counted, not raised)."""
        fut = await self._put(out, src)
        if isinstance(fut, Exception):
            return fut
        fut.add_done_callback(partial(self._acknowledged, out.topic, out.reason, key=out.key))
        return None

    async def send_all(self, outs: list[Out], src: Source, refused: Callable[[Out, Exception], Out | None]) -> None:
        """Hand each of ``outs`` to the producer, in order; one it refuses is replaced by what
        ``refused(out, error)`` gives (a dead letter, sent at once; None: nothing)."""
        if self._lean:
            return await self._hand_all(outs, src, refused)
        sent: list[tuple[str, Any]] = []  # (topic, future) of the outputs that are no dead letter
        try:
            for out in outs:
                fut = await self._put(out, src, count=False)
                if isinstance(fut, Exception):
                    await self._replace(out, fut, src, refused)
                elif out.reason is None:
                    sent.append((out.topic, fut))
                else:
                    self._handed(out.topic)
                    fut.add_done_callback(partial(self._acknowledged, out.topic, out.reason, key=out.key))
        finally:
            if sent:
                sent[-1][1].add_done_callback(partial(self._all_acknowledged, sent))
                topic, n = sent[0][0], 0
                for t, _ in sent:  # messages_out once per run of one topic, not per message
                    if t != topic:
                        self._handed(topic, n)
                        topic, n = t, 0
                    n += 1
                self._handed(topic, n)

    async def _hand_all(self, outs: list[Out], src: Source, refused: Callable[[Out, Exception], Out | None]) -> None:
        """:meth:`send_all` on the worker's OutputProducer: an output that is no dead letter is
        handed over with no future, its failure counted by its topic's :meth:`_route`; a dead
        letter, and an output meeting a full queue, go the way of :meth:`send`."""
        hand = self.producer.hand
        routes = self._routes
        topic, n = None, 0
        try:
            for out in outs:
                if out.reason is None:
                    route = routes.get(out.topic) or self._route(out.topic)
                    headers = out.headers
                    try:
                        if hand(route[0], out.key, out.value, out.partition,
                                None if headers is None else list(headers), route[1]):
                            if out.topic != topic:
                                if n:
                                    self._handed(topic, n)  # type: ignore[arg-type]
                                topic, n = out.topic, 0
                            n += 1
                            continue
                    except Exception as e:
                        self._refused(out, src, e)
                        await self._replace(out, e, src, refused)
                        continue
                await self._send_one(out, src, refused)
        finally:
            if n:
                self._handed(topic, n)  # type: ignore[arg-type]

    async def _send_one(self, out: Out, src: Source, refused: Callable[[Out, Exception], Out | None]) -> None:
        """One output the way of :meth:`send`; one the producer refuses is replaced by what ``refused`` gives."""
        err = await self.send(out, src)
        if err is not None:
            await self._replace(out, err, src, refused)

    async def _replace(self, out: Out, err: Exception, src: Source,
                       refused: Callable[[Out, Exception], Out | None]) -> None:
        instead = refused(out, err)
        if instead is not None:
            await self.send(instead, src)

    def _route(self, topic: str) -> tuple[str, Callable[[Exception], None]]:
        """``topic``'s full name and what counts a failed output of it (``send_errors``), made once."""
        route = self._routes[topic] = (self._name(topic), partial(self._failed, topic))
        return route

    def _failed(self, topic: str, _err: Exception) -> None:
        self.metrics.inc("send_errors", topic=topic)

    def _refused(self, out: Out, src: Source, e: Exception) -> None:
        """The producer refused ``out`` at the hand-over: counted and logged."""
        self.metrics.inc("send_errors", topic=out.topic)
        log.error("could not send a %d-byte message to %s for %s (%s: %s); it is dropped",
                  len(out.value), out.topic, src, type(e).__name__, str(e)[:300])

    async def _put(self, out: Out, src: Source, count: bool = True) -> Any:
        """The delivery future of ``out`` handed to the producer (counted in ``messages_out`` if
        ``count``), or the exception it refused it with."""
        name = self._name(out.topic)
        try:
            headers = None if out.headers is None else list(out.headers)
            if self._lean:
                fut = await self.producer.send(name, out.key, out.value, out.partition, headers)
            else:  # Faust's: send(topic, key, value, partition, timestamp, headers)
                fut = await self.producer.send(name, out.key, out.value, out.partition, None, headers)
        except Exception as e:
            self._refused(out, src, e)
            return e
        if count:
            self._handed(out.topic)
        return fut

    def _name(self, topic: str) -> str:
        name = self._names.get(topic)
        if name is None:
            name = self._names[topic] = self.settings.topic(topic)
        return name

    def _handed(self, topic: str, n: int = 1) -> None:
        self.metrics.inc("messages_out", n, topic=self._name(topic))

    def _all_acknowledged(self, sent: list[tuple[str, Any]], _last: Any) -> None:
        """The broker answered the last of one input's outputs: count the failures among them
        (one not answered yet, in an earlier batch retried, is looked at when it is)."""
        for topic, fut in sent:
            if fut.done():
                self._acknowledged(topic, None, fut)
            else:
                fut.add_done_callback(partial(self._acknowledged, topic, None))

    def _acknowledged(self, topic: str, reason: str | None, fut: Any, key: bytes | None = None) -> None:
        """The broker's answer to one message sent (a dead letter's ``key``: the stream it is counted under)."""
        if fut.cancelled():
            return
        err = fut.exception()
        if err is not None:  # lost: its input's offset may still be committed (a broker outage)
            self.metrics.inc("send_errors", topic=topic)
        elif reason is not None:
            self.metrics.inc("dead_letters", reason=reason, profile=key_profile(self.settings, key))


def install_agent(app: Any, topic: Any, handler: Handler, stage: str, name: str,
                  bulk: Callable[..., Any] | None = None) -> Any:
    """The Faust agent ``name`` that hands each message of ``topic`` to ``handler`` (:func:`forward`)
    and its outputs to the worker's producer; with ``bulk`` (:func:`forward_each` or
    :func:`forward_fetched`, given their other arguments) the records of each fetch come to the
    handler in one call instead, below Faust's per-record hand-over (:mod:`streamxai.kafka.bulk_fetch`)."""
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topic, name=name)
    async def agent(stream: Any) -> None:
        await forward(stream, handler, outbox, stage)

    if bulk is not None:
        take_in_bulk(app, topic.topics, partial(bulk, handler=handler, outbox=outbox, stage=stage))
    return agent


async def forward(stream: Any, handler: Handler, outbox: Outbox, stage: str) -> None:
    """Hand each message of ``stream`` to ``handler`` and its outputs to ``outbox``."""
    async for event in stream.events():
        msg = event.message
        src = Source(msg.topic, msg.partition, msg.offset, timestamp=getattr(msg, "timestamp", None),
                     headers=_headers(getattr(msg, "headers", None)))
        handler.metrics.inc("messages_in", topic=msg.topic)
        handler.metrics.processed(msg.topic, msg.partition, msg.offset)
        raw, key = event.value, event.key
        await _send(outbox, _handle(handler, raw, key, src, stage), raw, key, src, stage, handler)
        # let the worker's other agents run: a model agent with a backlog of cheap events would
        # otherwise hold the event loop while the explainer agent's tasks wait
        await asyncio.sleep(0)


async def forward_fetched(fetched: list[tuple[Any, Any]], handler: Handler, outbox: Outbox, stage: str,
                          batch: int) -> None:
    """Hand the records of one fetch (``(partition, aiokafka record)`` pairs, in order) to
    ``handler.on_batch``, ``batch`` at a time, and their outputs to ``outbox``; returns once all
    are with the producer."""
    for i in range(0, len(fetched), batch):
        chunk = [r for _, r in fetched[i:i + batch]]
        records = [(r.value, r.key, _source(r)) for r in chunk]
        _counted(chunk, handler.metrics)
        try:
            outs = await _until_registry_answers(handler.on_batch, records)  # type: ignore[attr-defined]
        except Exception as e:  # never let one batch kill the agent
            log.exception("%s agent failed on a batch of %d from %s", stage, len(records), records[0][2])
            outs = [dead_letter(raw, key, e, stage, src, reason="internal_error",
                                max_bytes=handler.settings.max_dead_letter_bytes) for raw, key, src in records]
        raw, key, src = records[0]  # a batch output the producer refuses: a dead letter of what it carried
        for out in outs:
            await _send(outbox, [out], out.value if out.reason is None else raw, key, src, stage, handler)
        await asyncio.sleep(0)


async def forward_each(fetched: list[tuple[Any, Any]], handler: Handler, outbox: Outbox, stage: str, app: Any) -> None:
    """Hand the records of one fetch (``(partition, aiokafka record)`` pairs) to a handler that
    keeps state, each as :func:`forward` hands it a message. It stops before the next record once
    ``app``'s consumer stops its flow, rebalances or joins a new generation (the fetch's records
    then come again), and takes a record whole even if the worker's stop cancels it
    (:func:`~streamxai.kafka.stepping.whole`)."""
    consumer = app.consumer
    generation = app.consumer_generation_id
    inbound = getattr(app.monitor, "stream_inbound_time", None)
    taken = 0
    try:
        for tp, r in fetched:
            if (not consumer.flow_active or consumer.should_stop or app.rebalancing
                    or app.consumer_generation_id != generation):
                break
            raw, key, src = r.value, r.key, _source(r)
            try:
                await whole(_send(outbox, _handle(handler, raw, key, src, stage), raw, key, src, stage, handler))
            except asyncio.CancelledError:
                taken += 1  # taken whole before the cancellation goes on
                raise
            taken += 1
            if inbound is not None:  # Faust's check for stalled partitions: this one moves
                inbound[tp] = monotonic()
            await asyncio.sleep(0)
    finally:
        _counted([r for _, r in fetched[:taken]], handler.metrics)


def _source(r: Any) -> Source:
    """Where an aiokafka record of a fetch came from: its place, its timestamp in seconds, its headers."""
    return Source(r.topic, r.partition, r.offset, timestamp=None if r.timestamp is None else r.timestamp / 1000.0,
                  headers=_headers(r.headers))


def _counted(records: list[Any], metrics: Metrics) -> None:
    """Count ``records`` (aiokafka's, taken up together) in ``messages_in`` and report each
    partition's last offset for consumer lag, once per topic and partition."""
    per_topic: dict[str, int] = {}
    last: dict[tuple[str, int], int] = {}
    for r in records:
        per_topic[r.topic] = per_topic.get(r.topic, 0) + 1
        last[(r.topic, r.partition)] = r.offset
    for topic, n in per_topic.items():
        metrics.inc("messages_in", n, topic=topic)
    for (topic, partition), offset in last.items():
        metrics.processed(topic, partition, offset)



async def _until_registry_answers(call: Callable[..., list[Out]], *args: Any) -> list[Out]:
    """``call(*args)``, called again after the wait each :class:`RegistryUnreachable` names (a
    schema registry that does not answer): the records wait, the event loop (heartbeats,
    commits, the other agents) runs meanwhile, and nothing is dropped or dead-lettered."""
    while True:
        try:
            return call(*args)
        except RegistryUnreachable as e:
            await asyncio.sleep(e.delay)


async def _handle(handler: Handler, raw: bytes | None, key: bytes | None, src: Source, stage: str) -> list[Out]:
    try:
        if handler.needs_recovery(key, src):
            # it may rebuild state from history (Kafka reads, replays): keep the event
            # loop, and so heartbeats, commits and the other agents, running meanwhile
            return await asyncio.to_thread(handler.on_message, raw, key, src)
        on_loop = getattr(handler, "on_message_on_loop", None)
        if on_loop is None:
            return await _until_registry_answers(handler.on_message, raw, key, src)
        outs = await _until_registry_answers(on_loop, raw, key, src)
        # the rest of a record whose state a failure dropped: it rebuilds that state off the loop
        return outs if isinstance(outs, list) else await asyncio.to_thread(outs)
    except Exception as e:  # never let one message kill the agent
        log.exception("%s agent failed on %s", stage, src)
        return [dead_letter(raw, key, e, stage, src, reason="internal_error",
                            max_bytes=handler.settings.max_dead_letter_bytes)]


async def _send(outbox: Outbox, outs: Any, raw: bytes | None, key: bytes | None, src: Source, stage: str,
                handler: Handler) -> None:
    """Send ``outs`` (a list, or the awaitable giving it); an output the producer refuses becomes
    a dead letter of ``raw`` (e.g. over the producer's size limit)."""
    if not isinstance(outs, list):
        outs = await outs

    def refused(out: Out, err: Exception) -> Out | None:
        if out.reason is not None:  # a dead letter refused: counted and logged, that is all
            return None
        return dead_letter(raw, key, err, stage, src, reason="send_error",
                           max_bytes=handler.settings.max_dead_letter_bytes)

    if outs:
        await outbox.send_all(outs, src, refused)


def _headers(raw: Any) -> Headers | None:
    """A record's headers as ``(name, bytes)`` pairs (Faust gives a list of pairs or a mapping)."""
    if not raw:
        return None
    items = raw.items() if isinstance(raw, Mapping) else raw
    return tuple((str(k), bytes(v) if v is not None else b"") for k, v in items)
