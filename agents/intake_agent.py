"""Intake agent: features and labels → arrivals (pipeline.handlers.intake), bytes and keys unchanged;
the records already fetched go as one arrivals record per stream."""

from __future__ import annotations

from typing import Any

from pipeline.handlers import Handler
from pipeline.handlers.intake import MAX_BATCH_RECORDS

from ._forward import Outbox, forward


def install_intake_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["intake"], name="streamxai.intake")
    async def intake_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "intake", batch=MAX_BATCH_RECORDS)

    return intake_agent
