"""Explainer agent: explain tasks (key stream_id/group) → explanations (iPFI, iSAGE, iPDP)."""

from __future__ import annotations

from typing import Any

from streamxai.handlers import Handler

from ._forward import Outbox, forward


def install_explainer_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["explain-tasks"], name="streamxai.explainer")
    async def explainer_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "explain")

    return explainer_agent
