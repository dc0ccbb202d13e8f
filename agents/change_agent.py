"""Change agent: the drift feed (each report's explanations as one record) → change test per stream (streamxai.handlers.change) → change events and episodes."""

from __future__ import annotations

from functools import partial
from typing import Any

from streamxai.handlers import Handler
from streamxai.kafka.bulk_fetch import take_in_bulk

from ._forward import Outbox, forward, forward_each


def install_change_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["drift-feed"], name="streamxai.change")
    async def change_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "change")

    # each fetch's records come to the handler in one call, below Faust's per-record hand-over
    take_in_bulk(app, topics["drift-feed"].topics,
                 partial(forward_each, handler=handler, outbox=outbox, stage="change", app=app))
    return change_agent
