"""Model agent: arrivals (features and labels in recorded order) → (predict; learn once labelled) →
predictions and explain tasks."""

from __future__ import annotations

from functools import partial
from typing import Any

from streamxai.handlers import Handler
from streamxai.kafka.bulk_fetch import take_in_bulk

from ._forward import Outbox, forward, forward_each


def install_model_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["arrivals"], name="streamxai.model")
    async def model_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "model")

    # each fetch's records come to the handler in one call, below Faust's per-record hand-over
    take_in_bulk(app, topics["arrivals"].topics,
                 partial(forward_each, handler=handler, outbox=outbox, stage="model", app=app))
    return model_agent
