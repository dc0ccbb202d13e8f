"""Synchronous message handlers: bytes in, messages out; agents are thin loops around them.
What they need from outside is declared as Protocols (:class:`Handler`, :class:`History`,
:class:`CheckpointStore`).
"""

from streamxai.schemas import Source

from .change import ChangeHandler
from .common import MessageHandler, Rejected
from .dead_letters import dead_letter
from .explain import ExplainHandler
from .intake import IntakeHandler
from .model import ModelHandler
from .out import Out
from .protocols import CheckpointStore, Handler, History, ScanningHistory
from .recovering import Recovering, checkpoint_changed

__all__ = ["CheckpointStore", "ChangeHandler", "ExplainHandler", "Handler", "History", "IntakeHandler", "MessageHandler", "ModelHandler",
           "Out", "Recovering", "Rejected", "ScanningHistory", "Source", "checkpoint_changed",
           "dead_letter"]
