"""Drift agent: explanations → change test per stream (pipeline.handlers.drift) → change events and episodes."""

from __future__ import annotations

from typing import Any

from pipeline.handlers import Handler

from ._forward import forward


def install_drift_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    @app.agent(topics["explanations"], name="streamxai.drift")
    async def drift_agent(stream: Any) -> None:
        await forward(stream, handler, topics, "drift")

    return drift_agent
