"""Incremental explainers of the current model (iPFI, iSAGE, iPDP)."""

from .base import Explainer
from .ipdp import IPDP
from .isage import ISAGE

__all__ = ["Explainer", "IPDP", "ISAGE"]
