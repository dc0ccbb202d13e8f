"""Drift agent: the drift feed (each report's explanations as one record) → change test per stream (streamxai.handlers.drift) → change events and episodes."""

from __future__ import annotations

from typing import Any

from streamxai.handlers import Handler

from ._forward import Outbox, forward


def install_drift_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["drift-feed"], name="streamxai.drift")
    async def drift_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "drift")

    return drift_agent
