"""The loop every agent runs: bytes in, handler, messages out. No algorithm here.

A handler turns bad input into dead letters itself; anything it did not expect is also
sent to the dead-letter topic (reason ``internal_error``) so that one message can never
stop the agent.
"""

from __future__ import annotations

import logging
from typing import Any

from pipeline.handlers import Source, dead_letter

log = logging.getLogger("streamxai")


async def forward(stream: Any, handler: Any, topics: dict[str, Any], stage: str) -> None:
    names = {short: t.get_topic_name() for short, t in topics.items()}  # metrics label topics by full name
    async for event in stream.events():
        msg = event.message
        src = Source(msg.topic, msg.partition, msg.offset)
        metrics = handler.metrics
        metrics.inc("messages_in", topic=msg.topic)
        metrics.processed(msg.topic, msg.partition, msg.offset)
        try:
            outs = handler.on_message(event.value, event.key, src)
        except Exception as e:  # never let one message kill the agent
            log.exception("%s agent failed on %s", stage, src)
            handler.metrics.inc("dead_letters", reason="internal_error")
            outs = [dead_letter(event.value, event.key, e, stage, src, reason="internal_error")]
        for out in outs:
            await topics[out.topic].send(key=out.key, value=out.value, partition=out.partition)
            metrics.inc("messages_out", topic=names[out.topic])
