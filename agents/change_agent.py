"""Change agent: the drift feed (each report's explanations as one record) → change test per stream (streamxai.handlers.change) → change events and episodes."""

from __future__ import annotations

from typing import Any

from streamxai.handlers import Handler

from ._forward import Outbox, forward


def install_change_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["drift-feed"], name="streamxai.change")
    async def change_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "change")

    return change_agent
