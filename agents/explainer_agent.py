"""Explainer agent: explain tasks (key stream_id/group) → explanations (iPFI, iSAGE, iPDP)."""

from __future__ import annotations

from functools import partial
from typing import Any

from streamxai.handlers import Handler

from ._forward import forward_each, install_agent


def install_explainer_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    return install_agent(app, topics["explain-tasks"], handler, "explain", "streamxai.explainer",
                         partial(forward_each, app=app))
