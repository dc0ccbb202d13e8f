"""Intake agent: features and labels → arrivals (streamxai.handlers.intake), bytes and keys unchanged."""

from __future__ import annotations

from functools import partial
from typing import Any

from streamxai.handlers import Handler
from streamxai.handlers.intake import MAX_BATCH_RECORDS

from ._forward import forward_fetched, install_agent


def install_intake_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    """The worker's consumer hands each fetch's features and labels to the intake in one call
    (:mod:`streamxai.kafka.bulk_fetch`), forwarded as one arrivals record per stream; the agent's
    stream subscribes the topics, and forwards them one by one on a consumer that does not.
    """
    return install_agent(app, topics["intake"], handler, "intake", "streamxai.intake",
                         partial(forward_fetched, batch=MAX_BATCH_RECORDS))
