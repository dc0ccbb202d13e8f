"""The records of the worker's agents' topics go from each fetch straight to their handlers,
below Faust's per-record hand-over (a message object, an event, a stream-buffer put and a
wake-up per record). The worker's consumer (:class:`BulkFetch`) takes the records of the topics
given to :func:`take_in_bulk` out of each fetch before Faust iterates it and awaits each topic's
``sink`` with ``(partition, record)`` pairs in Faust's round-robin order; once a sink returns,
their offsets are acknowledged as Faust acknowledges a message an agent took (:class:`BulkFetch`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from time import monotonic
from typing import Any

from faust.types.tuples import ack_lock
from mode.utils.futures import notify

__all__ = ["BulkFetch", "Sink", "take_in_bulk"]

#: what takes a fetch's records of the bulk topics: ``(partition, record)`` pairs, in order
Sink = Callable[[list[tuple[Any, Any]]], Awaitable[None]]


def take_in_bulk(app: Any, topics: Iterable[str], sink: Sink) -> bool:
    """Have ``app``'s consumer hand the fetched records of ``topics`` (full names) to ``sink``
    (:class:`BulkFetch`); False, and nothing changed, if its transport is not the worker's. The
    records of one fetch go to each sink in turn, in the order they came."""
    transport = app.transport
    if not hasattr(transport, "bulk_topics"):
        return False
    sinks = {**transport.bulk_sinks, **dict.fromkeys(topics, sink)}
    transport.bulk_sinks = sinks
    transport.bulk_topics = frozenset(sinks)
    transport.bulk_sink = sink if len(set(sinks.values())) == 1 else partial(_each_sink, sinks)
    return True


async def _each_sink(sinks: dict[str, Sink], fetched: list[tuple[Any, Any]]) -> None:
    """The records of one fetch, each sink its topics' (``sinks``: by topic), in the order they came."""
    parts: dict[Sink, list[tuple[Any, Any]]] = {}
    for pair in fetched:
        parts.setdefault(sinks[pair[0].topic], []).append(pair)
    for sink, pairs in parts.items():
        await sink(pairs)


class BulkFetch:
    """The part of the worker's consumer that takes the bulk topics' records, mixed into a Faust
    consumer (it uses Faust's ``_read_offset``, ``_acked``, ``_add_gap``). An offset is
    acknowledged only after the sink returned, and nothing is if the flow stopped, a rebalance
    began or the generation changed meanwhile: the records then come again and the handlers
    drop the ones they took. Read offsets, gaps, ``broker_commit_every`` and paused partitions
    are kept as Faust keeps them; other topics' records, and all while the flow is stopped, go
    through Faust.
    """

    async def _wait_next_records(self, timeout: float) -> tuple[Any, Any]:
        records, active = await super()._wait_next_records(timeout)  # type: ignore[misc]
        transport = self.transport  # type: ignore[attr-defined]
        topics = getattr(transport, "bulk_topics", None)
        if records and topics:
            taken = {tp: records.pop(tp) for tp in [tp for tp in records if tp.topic in topics]}
            # the flow stopped: Faust seeks back to the committed offsets (getmany), these come again
            if taken and self.flow_active and not self.should_stop:  # type: ignore[attr-defined]
                await self._take(taken, active, transport.bulk_sink)
        return records, active

    async def _take(self, taken: dict[Any, list[Any]], active: Any, sink: Sink) -> None:
        generation = self.app.consumer_generation_id  # type: ignore[attr-defined]
        read = self._read_offset  # type: ignore[attr-defined]
        kept: dict[Any, list[Any]] = {}
        for tp, records in taken.items():
            if active is not None and tp not in active and tp not in self._buffered_partitions:  # type: ignore[attr-defined]
                continue  # paused: Faust's getmany skips it as well
            r = read[tp]
            mine = [rec for rec in records if r is None or rec.offset >= r]
            if not mine:
                continue
            if self.app.topics.acks_enabled_for(tp.topic):  # type: ignore[attr-defined]
                before = r
                for rec in mine:  # gaps, as Faust's drain loop finds them record by record (the
                    if before and rec.offset - before > 1:  # offsets missing; Faust's also holds the next)
                        await self._add_gap(tp, before + 1, rec.offset - 1)  # type: ignore[attr-defined]
                    before = rec.offset
            kept[tp] = mine
        if not kept:
            return
        inbound = getattr(self.app.monitor, "stream_inbound_time", None)  # type: ignore[attr-defined]
        if inbound is not None:  # read by Faust's check for stalled partitions, as a stream's records are
            now = monotonic()
            for tp in kept:
                inbound[tp] = now
        await sink(list(self.scheduler.iterate(kept)))  # type: ignore[attr-defined]
        if not (self.flow_active and not self.app.rebalancing  # type: ignore[attr-defined]
                and self.app.consumer_generation_id == generation):  # type: ignore[attr-defined]
            # a rebalance began meanwhile: it seeks back to the committed offsets and what the
            # sink took comes again; moving the read offsets past it would drop it unacknowledged
            return
        for tp, records in kept.items():
            read[tp] = records[-1].offset
            self._ack_offsets(tp, [rec.offset for rec in records])
        commit_every = self._commit_every  # type: ignore[attr-defined]
        if commit_every is not None and self._n_acked >= commit_every:  # type: ignore[attr-defined]
            self._n_acked = 0
            await self.commit()  # type: ignore[attr-defined]

    def _ack_offsets(self, tp: Any, offsets: list[int]) -> None:
        """Acknowledge ``offsets`` of ``tp`` as Faust's ``Consumer.ack`` acknowledges a message's."""
        if not self.app.topics.acks_enabled_for(tp.topic):  # type: ignore[attr-defined]
            return
        with ack_lock:
            committed = self._committed_offset[tp]  # type: ignore[attr-defined]
            index = self._acked_index[tp]  # type: ignore[attr-defined]
            acked = self._acked[tp]  # type: ignore[attr-defined]
            n = 0
            for offset in offsets:
                if (committed is None or offset >= committed) and offset not in index:
                    index.add(offset)
                    acked.append(offset)
                    n += 1
            self._n_acked += n
            notify(self._waiting_for_ack)  # type: ignore[attr-defined]
