"""Join agent: event-index (index records and a labels source's labels, keyed by event id) →
labels of their streams on arrivals (streamxai.handlers.join)."""

from __future__ import annotations

from typing import Any

from streamxai.handlers import Handler

from ._forward import Outbox, forward


def install_join_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["event-index"], name="streamxai.join")
    async def join_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "join")

    return join_agent
