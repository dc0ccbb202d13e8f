"""Explainer agent: explain tasks (key stream_id/group) → explanations (iPFI, iSAGE, iPDP)."""

from __future__ import annotations

from functools import partial
from typing import Any

from streamxai.handlers import Handler
from streamxai.kafka.bulk_fetch import take_in_bulk

from ._forward import Outbox, forward, forward_each


def install_explainer_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["explain-tasks"], name="streamxai.explainer")
    async def explainer_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "explain")

    # each fetch's records come to the handler in one call, below Faust's per-record hand-over
    take_in_bulk(app, topics["explain-tasks"].topics,
                 partial(forward_each, handler=handler, outbox=outbox, stage="explain", app=app))
    return explainer_agent
