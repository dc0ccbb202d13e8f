"""Model agent: arrivals (features and labels in recorded order) → (predict; learn once labelled) →
predictions and explain tasks."""

from __future__ import annotations

from typing import Any

from streamxai.handlers import Handler

from ._forward import Outbox, forward


def install_model_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["arrivals"], name="streamxai.model")
    async def model_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "model")

    return model_agent
