"""Join agent: event-index (index records and a labels source's labels, keyed by event id) →
labels of their streams on arrivals (streamxai.handlers.join)."""

from __future__ import annotations

from typing import Any

from streamxai.handlers import Handler

from ._forward import install_agent


def install_join_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    return install_agent(app, topics["event-index"], handler, "join", "streamxai.join")
