"""Thin Faust agents: read, call the handler from ``streamxai.handlers``, send."""

from .drift_agent import install_drift_agent
from .explainer_agent import install_explainer_agent
from .intake_agent import install_intake_agent
from .model_agent import install_model_agent

__all__ = ["install_drift_agent", "install_explainer_agent", "install_intake_agent", "install_model_agent"]
