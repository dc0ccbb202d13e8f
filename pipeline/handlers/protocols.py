"""What the handlers need from the world around them, as typing Protocols: the agent loop
calls a :class:`Handler`; a handler reads earlier messages through a :class:`History` and
keeps its state in a :class:`CheckpointStore` (``streamxai.kafka`` implements both).

>>> from streamxai.handlers import ModelHandler
>>> from streamxai.settings import Settings
>>> isinstance(ModelHandler(Settings()), Handler)
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from streamxai.schemas import Source

from .out import Out

if TYPE_CHECKING:  # pragma: no cover - for annotations only
    from ..metrics import Metrics
    from ..settings import Settings

__all__ = ["Handler", "History", "ScanningHistory", "CheckpointStore"]


@runtime_checkable
class Handler(Protocol):
    """Bytes in, messages out: what an agent (``agents/_forward.py``) hands each message to. A
    handler may also have ``on_message_on_loop`` (:class:`~streamxai.handlers.common.MessageHandler`),
    which the agent calls in its place on the event loop."""

    settings: Settings
    metrics: Metrics

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """The messages to send for ``raw`` (dead letters for bad input); never raises for bad input."""
        ...

    def needs_recovery(self, key: bytes | None, src: Source | None = None) -> bool:
        """Whether the message may rebuild state from history (the loop then runs it off the event loop)."""
        ...

    def partitions_revoked(self, tps: set[tuple[str, int]]) -> None:
        """A rebalance took these ``(topic, partition)`` pairs away."""
        ...


@runtime_checkable
class History(Protocol):
    """Earlier messages of one partition (``streamxai.kafka.replay.PartitionHistory``)."""

    def __call__(
        self, topic: str, partition: int, before_offset: int | None, key: bytes | None, from_offset: int = 0
    ) -> Iterable[bytes | None]:
        """The values of ``key`` (every key if None) at ``from_offset .. before_offset - 1``."""
        ...


@runtime_checkable
class ScanningHistory(History, Protocol):
    """A history that can also read a partition once for all its keys (a handler wraps it in a
    :class:`~streamxai.kafka.history_cache.HistoryCache`)."""

    def scan(
        self, topic: str, partition: int, before_offset: int | None, from_offset: int = 0
    ) -> Iterator[tuple[int, bytes | None, bytes | None]]:
        """``(offset, key, value)`` of every message at ``from_offset .. before_offset - 1``, or
        ``(offset, key, value, timestamp, headers)`` (``streamxai.kafka.replay.PartitionHistory``:
        the model handler's replay needs the arrivals' timestamps and origin headers)."""
        ...


@runtime_checkable
class CheckpointStore(Protocol):
    """Where handlers keep their states (``streamxai.kafka.checkpoints.FileCheckpointStore``: files;
    ``streamxai.kafka.checkpoint_topic.KafkaCheckpointStore``: a compacted topic)."""

    def due(self, n_since: int) -> bool:
        """Whether a state that took ``n_since`` messages since its last checkpoint should be saved."""
        ...

    def save(self, kind: str, key: bytes, state: Any, src: Source) -> None:
        """Save ``state`` of ``key`` as of the message at ``src``."""
        ...

    def load(
        self, kind: str, key: bytes, topic: str, partition: int | None, before_offset: int | None = None
    ) -> tuple[Any, int] | None:
        """``(state, offset)`` of the newest checkpoint before ``before_offset``, or None."""
        ...

    def discard(self, kind: str, key: bytes, why: str) -> int:
        """Set aside every checkpoint of ``key`` (a state restored from one failed); the number set aside."""
        ...
