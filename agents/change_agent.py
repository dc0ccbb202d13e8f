"""Change agent: the drift feed (each report's explanations as one record) → change test per stream (streamxai.handlers.change) → change events and episodes."""

from __future__ import annotations

from functools import partial
from typing import Any

from streamxai.handlers import Handler

from ._forward import forward_each, install_agent


def install_change_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    return install_agent(app, topics["drift-feed"], handler, "change", "streamxai.change",
                         partial(forward_each, app=app))
