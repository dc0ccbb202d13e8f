"""Model agent: arrivals (features and labels in recorded order) → (predict; learn once labelled) →
predictions and explain tasks."""

from __future__ import annotations

from functools import partial
from typing import Any

from streamxai.handlers import Handler

from ._forward import forward_each, install_agent


def install_model_agent(app: Any, topics: dict[str, Any], handler: Handler) -> Any:
    return install_agent(app, topics["arrivals"], handler, "model", "streamxai.model", partial(forward_each, app=app))
