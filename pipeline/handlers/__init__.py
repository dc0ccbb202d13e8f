"""Synchronous message handlers: bytes in, messages out. Agents are thin loops around them."""

from .common import Out, Recovering, Source, dead_letter
from .drift import DriftHandler
from .explain import ExplainHandler
from .model import ModelHandler

__all__ = ["DriftHandler", "ExplainHandler", "ModelHandler", "Out", "Recovering", "Source", "dead_letter"]
