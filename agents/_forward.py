"""The loop every agent runs: bytes in, handler, messages out. No algorithm here.

A handler turns bad input into dead letters itself; anything it did not expect is also
sent to the dead-letter topic (reason ``internal_error``) so that one message can never
stop the agent. Nor can a send that fails: an output the producer refuses is replaced by a
dead letter of the input (reason ``send_error``), and a dead letter that cannot be sent is
logged and counted (``send_errors``), never raised. ``dead_letters{reason=...}`` counts the
dead letters the broker acknowledged, not the ones built. ``messages_in`` and ``messages_out``
count messages per (full) topic name, and the offset taken up is reported for consumer lag.
After each message the loop yields to the worker's other agents, so no agent's backlog starves
another; a message that may rebuild state from history runs on a thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from pipeline.handlers import Handler, Out, Source, dead_letter
from schemas import Headers

log = logging.getLogger("streamxai")


async def forward(stream: Any, handler: Handler, topics: dict[str, Any], stage: str) -> None:
    limit = handler.settings.max_dead_letter_bytes
    names = {short: handler.settings.topic(short) for short in topics}  # metrics label topics by full name
    metrics = handler.metrics
    async for event in stream.events():
        msg = event.message
        src = Source(msg.topic, msg.partition, msg.offset, timestamp=getattr(msg, "timestamp", None),
                     headers=_headers(getattr(msg, "headers", None)))
        metrics.inc("messages_in", topic=msg.topic)
        metrics.processed(msg.topic, msg.partition, msg.offset)
        try:
            if handler.needs_recovery(event.key, src):
                # it may rebuild state from history (Kafka reads, replays): keep the event
                # loop, and so heartbeats, commits and the other agents, running meanwhile
                outs = await asyncio.to_thread(handler.on_message, event.value, event.key, src)
            else:
                outs = handler.on_message(event.value, event.key, src)
        except Exception as e:  # never let one message kill the agent
            log.exception("%s agent failed on %s", stage, src)
            outs = [dead_letter(event.value, event.key, e, stage, src, reason="internal_error", max_bytes=limit)]
        for out in outs:
            err = await _send(topics, out, metrics, src, names)
            if err is not None and out.reason is None:
                # the input's output cannot be written (e.g. over the producer's size limit)
                dl = dead_letter(event.value, event.key, err, stage, src, reason="send_error", max_bytes=limit)
                await _send(topics, dl, metrics, src, names)
        # let the worker's other agents run: a model agent with a backlog of cheap events would
        # otherwise hold the event loop while the explainer agent's tasks wait (issue 7, defect 6)
        await asyncio.sleep(0)


async def _send(topics: dict[str, Any], out: Out, metrics: Any, src: Source, names: dict[str, str]) -> Exception | None:
    """Send ``out``; the exception if the producer refused it (logged and counted, not raised)."""
    callback = None
    if out.reason is not None:
        reason = out.reason

        def callback(_sent: Any) -> None:  # called by Faust once the broker acknowledged it
            metrics.inc("dead_letters", reason=reason)

    try:
        extra = {} if out.headers is None else {"headers": out.headers}
        await topics[out.topic].send(key=out.key, value=out.value, partition=out.partition, callback=callback,
                                     **extra)
    except Exception as e:
        metrics.inc("send_errors", topic=out.topic)
        log.error("could not send a %d-byte message to %s for %s (%s: %s); it is dropped",
                  len(out.value), out.topic, src, type(e).__name__, str(e)[:300])
        return e
    metrics.inc("messages_out", topic=names[out.topic])
    return None


def _headers(raw: Any) -> Headers | None:
    """A record's headers as ``(name, bytes)`` pairs (Faust gives a list of pairs or a mapping)."""
    if not raw:
        return None
    items = raw.items() if isinstance(raw, Mapping) else raw
    return tuple((str(k), bytes(v) if v is not None else b"") for k, v in items)
