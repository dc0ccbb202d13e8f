"""Thin Faust agents: read, call the handler from ``streamxai.handlers``, send."""

from .change_agent import install_change_agent
from .explainer_agent import install_explainer_agent
from .intake_agent import install_intake_agent
from .model_agent import install_model_agent

__all__ = ["install_change_agent", "install_explainer_agent", "install_intake_agent", "install_model_agent"]
