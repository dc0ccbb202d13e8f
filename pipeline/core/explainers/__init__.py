"""Incremental explainers of the current model (iPFI, iSAGE, iPDP)."""

from .base import Explainer
from .ipdp import IPDP
from .ipfi import IPFI
from .isage import ISAGE

__all__ = ["Explainer", "IPDP", "IPFI", "ISAGE"]
