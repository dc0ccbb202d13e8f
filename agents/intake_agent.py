"""Intake agent: features and labels → arrivals (streamxai.handlers.intake), bytes and keys unchanged."""

from __future__ import annotations

from functools import partial
from typing import Any

from streamxai.handlers import Handler
from streamxai.handlers.intake import MAX_BATCH_RECORDS
from streamxai.kafka.bulk_fetch import take_in_bulk

from ._forward import Outbox, forward, forward_fetched


def install_intake_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    """The worker's consumer hands each fetch's features and labels to the intake in one call
    (:mod:`streamxai.kafka.bulk_fetch`), forwarded as one arrivals record per stream; the agent's
    stream subscribes the topics, and forwards them one by one on a consumer that does not.
    """
    outbox = Outbox(app.streamxai_producer, handler.settings, handler.metrics)

    @app.agent(topics["intake"], name="streamxai.intake")
    async def intake_agent(stream: Any) -> None:
        await forward(stream, handler, outbox, "intake")

    take_in_bulk(app, topics["intake"].topics,
                 partial(forward_fetched, handler=handler, outbox=outbox, stage="intake", batch=MAX_BATCH_RECORDS))
    return intake_agent
