"""Intake agent: features and labels → arrivals (pipeline.handlers.intake), bytes and keys unchanged."""

from __future__ import annotations

from typing import Any

from pipeline.handlers import Handler

from ._forward import forward


def install_intake_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    @app.agent(topics["intake"], name="streamxai.intake")
    async def intake_agent(stream: Any) -> None:
        await forward(stream, handler, topics, "intake")

    return intake_agent
