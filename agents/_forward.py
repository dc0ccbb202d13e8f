"""The loop every agent runs: bytes in, handler, messages out. No algorithm here."""

from __future__ import annotations

from typing import Any

from pipeline.handlers import Source


async def forward(stream: Any, handler: Any, topics: dict[str, Any]) -> None:
    async for event in stream.events():
        msg = event.message
        outs = handler.on_message(event.value, event.key, Source(msg.topic, msg.partition, msg.offset))
        for out in outs:
            await topics[out.topic].send(key=out.key, value=out.value)
