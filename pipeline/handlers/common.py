"""What every handler shares: the skeleton (:class:`MessageHandler`), state recovery and
dead-letter construction. The outgoing message type :class:`Out` is defined in ``out.py``."""

from __future__ import annotations

import abc
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from schemas import DeadLetter, InvalidMessage, Source, b64, dumps

from ..metrics import Metrics
from ..settings import Settings
from .history_cache import HistoryCache
from .out import Out
from .protocols import CheckpointStore, History, ScanningHistory

__all__ = ["Out", "Source", "dead_letter", "Recovering", "MessageHandler", "Rejected", "DEFAULT_DEAD_LETTER_BYTES"]

log = logging.getLogger("streamxai")


#: default size limit of a dead letter: well under Kafka's default message.max.bytes (1 MiB)
DEFAULT_DEAD_LETTER_BYTES = 512 * 1024
_MAX_ERROR_CHARS = 2000
_MAX_KEY_BYTES = 1024


def dead_letter(
    raw: bytes | None, key: bytes | None, err: Exception, stage: str, src: Source, reason: str | None = None,
    *, max_bytes: int = DEFAULT_DEAD_LETTER_BYTES,
) -> Out:
    """A dead letter for ``raw`` of at most ``max_bytes`` (key and value); logs one line naming
    the reason and the source.

    >>> import base64; from schemas import decode
    >>> out = dead_letter(b"x" * 10_000, b"k", ValueError("bad"), "model", Source("f", 0, 7), max_bytes=4096)
    >>> m = decode(out.value, where="-")
    >>> len(out.value) <= 4096, m["truncated"], m["original_bytes"], len(base64.b64decode(m["original"])) > 2000
    (True, True, 10000, True)
    """
    reason = reason or (err.reason if isinstance(err, InvalidMessage) else "error")
    text = str(err)
    if len(text) > _MAX_ERROR_CHARS:
        text = f"{text[:_MAX_ERROR_CHARS]}...({len(text)} characters)"
    shown = text if isinstance(err, InvalidMessage) else f"{src}: {text}"
    log.warning("dead letter (%s, %s): %s", stage, reason, shown[:500])
    out_key = None if key is None else key[:_MAX_KEY_BYTES]

    def build(prefix: int | None) -> bytes:
        body = raw if raw is None or prefix is None else raw[:prefix]
        return dumps(DeadLetter(
            reason=reason,
            error=f"{type(err).__name__}: {text}",
            stage=stage,
            source={"topic": src.topic, "partition": src.partition, "offset": src.offset},
            original=b64(body) or "",
            original_bytes=None if raw is None else len(raw),
            original_sha256=None if raw is None else hashlib.sha256(raw).hexdigest(),
            truncated=prefix is not None,
            key=b64(out_key),
            ts=time.time(),
        ))

    room = max_bytes - len(out_key or b"")
    value = build(None)
    if len(value) > room and raw is not None:
        # base64 takes 4 bytes per 3: keep the prefix that fits next to the rest of the letter
        prefix = max(0, (room - len(build(0)) - 8) * 3 // 4)
        value = build(prefix)
        while len(value) > room and prefix > 0:  # only if the estimate was off
            prefix //= 2
            value = build(prefix)
    if len(value) > room:
        raise ValueError(f"a dead letter cannot fit in max_dead_letter_bytes={max_bytes}; raise it")
    return Out("dead-letters", out_key, value, reason=reason)


#: the handlers of a worker share one checkpoint store (and its Kafka clients, with
#: checkpoint_store = kafka), and a handler rebuilding state runs on a thread of its own
_STORE_LOCK = threading.Lock()


class Recovering(abc.ABC):
    """State recovery shared by the model and explain handlers.

    A handler that meets a key it has no state for restores the newest checkpoint and
    replays the key's later messages of this partition, or, without a checkpoint, starts
    fresh and replays the key's whole history (unless the message opens the stream).
    Subclasses set ``checkpoints``, ``history`` and ``metrics`` and implement ``_rebuild``.

    A ``history`` that can ``scan`` a partition is wrapped in a :class:`HistoryCache`, so the
    keys of a partition share one pass over it. :meth:`needs_recovery` tells the agent loop
    which messages may rebuild state, so it can run them off the event loop.
    """

    checkpoints: CheckpointStore | None
    metrics: Metrics
    _history: History | HistoryCache | None = None
    _known: set[bytes] | None = None
    _positions: dict[tuple[str, int], int] | None = None
    _revoked: set[tuple[str, int]] | None = None
    _key_tp: dict[bytes, tuple[str, int]] | None = None

    @property
    def history(self) -> History | HistoryCache | None:
        """``history(topic, partition, before_offset, key, from_offset)`` → earlier values (pipeline.kafka.replay)."""
        return self._history

    @history.setter
    def history(self, source: History | None) -> None:
        self._history = HistoryCache(source, self) if isinstance(source, ScanningHistory) else source

    def needs_recovery(self, key: bytes | None, src: Source | None = None) -> bool:
        """Whether a message with ``key`` at ``src`` may make the handler rebuild state (read and
        replay history): true for keys it has not built state for yet.

        The agent loop calls it for every message, in order, so it also notices when a
        partition does not continue where it left off (it was revoked and given back, after
        another worker processed some of it): the partition's cached history is then dropped,
        since it no longer covers every message before the ones to come."""
        if src is not None and src.partition is not None and src.offset is not None:
            if self._positions is None:
                self._positions = {}
            tp = (src.topic, src.partition)
            prev = self._positions.get(tp)
            if prev is not None and src.offset != prev + 1 and isinstance(self._history, HistoryCache):
                self._history.forget(src.topic, src.partition)
            if self._revoked and tp in self._revoked:
                self._revoked.discard(tp)
                if prev is not None and src.offset > prev + 1:
                    self._drop_partition(tp)
            self._positions[tp] = src.offset
        return self._history is not None and key is not None and (self._known is None or key not in self._known)

    def partitions_revoked(self, tps: set[tuple[str, int]]) -> None:
        """A rebalance took ``(topic, partition)`` pairs away. If one comes back after another
        worker processed some of it, the states of its keys here missed those messages: the
        next message then drops them, and each key is rebuilt (checkpoint and replay)."""
        self._revoked = (self._revoked or set()) | set(tps)

    def _drop_partition(self, tp: tuple[str, int]) -> None:
        stale = [k for k, where in (self._key_tp or {}).items() if where == tp]
        for key in stale:
            self._drop_state(key)
            self._key_tp.pop(key, None)  # type: ignore[union-attr]
            if self._known is not None:
                self._known.discard(key)
        if stale:
            self.metrics.inc("states_dropped_after_rebalance", len(stale))
            log.info("%s[%d] came back after another worker processed part of it: rebuilding %d keys",
                     tp[0], tp[1], len(stale))

    @abc.abstractmethod
    def _drop_state(self, key: bytes) -> None:
        """Forget the state of ``key`` (its partition came back after another worker had it)."""

    @abc.abstractmethod
    def _rebuild(self, st: Any, key: bytes | None, src: Source, from_offset: int) -> None:
        """Replay the messages of ``key`` on ``src``'s partition from ``from_offset`` up to ``src`` into ``st``."""

    def _checkpoint_if_due(self, kind: str, key: bytes | None, st: Any, src: Source) -> None:
        """Count one more message for ``st``; write its checkpoint when ``checkpoint_every`` is reached."""
        st.since_checkpoint += 1
        if self.checkpoints is not None and key and self.checkpoints.due(st.since_checkpoint):
            st.since_checkpoint = 0
            with _STORE_LOCK:
                self.checkpoints.save(kind, key, st, src)
            self.metrics.inc("checkpoints_written")

    def _recover(self, kind: str, key: bytes | None, src: Source, fresh: Callable[[], Any], first: bool) -> Any:
        st = self._restore(kind, key, src, fresh, first)
        if key is not None:  # only once it worked: a failed rebuild is tried again off the loop
            if self._known is None:
                self._known, self._key_tp = set(), {}
            self._known.add(key)
            if src.partition is not None:
                self._key_tp[key] = (src.topic, src.partition)  # type: ignore[index]
        return st

    def _restore(self, kind: str, key: bytes | None, src: Source, fresh: Callable[[], Any], first: bool) -> Any:
        # only a checkpoint before this message: after a SIGKILL the worker resumes from the
        # committed offset, and a newer checkpoint covers messages whose outputs may be lost
        loaded = None
        t0 = time.perf_counter()
        if self.checkpoints and key:
            with _STORE_LOCK:
                loaded = self.checkpoints.load(kind, key, src.topic, src.partition, before_offset=src.offset)
        t1 = time.perf_counter()
        self.metrics.inc("recovery_seconds", t1 - t0, stage=kind, step="checkpoint")
        if loaded is not None:
            st, ck_offset = loaded
            st.since_checkpoint = 0
            self.metrics.inc("checkpoints_restored")
            from_offset = ck_offset + 1
        else:
            st, from_offset = fresh(), 0
            if first:
                return st
        if self.history is not None and src.offset is not None and src.offset > from_offset:
            self._rebuild(st, key, src, from_offset)
            self.metrics.inc("recovery_seconds", time.perf_counter() - t1, stage=kind, step="replay")
        return st


class Rejected(Exception):
    """Raised by a handler's :meth:`MessageHandler._process`: the message becomes the dead
    letter ``out`` and the state is not checkpointed."""

    def __init__(self, out: Out):
        super().__init__(out.reason)
        self.out = out


M = TypeVar("M")
S = TypeVar("S")


class MessageHandler(Recovering, Generic[M, S]):
    """The one skeleton of the model, explain and drift handlers (:meth:`on_message`):
    parse → dead letter → load state → drop duplicate → process → checkpoint. A handler
    names its ``STAGE`` (dead letters, checkpoints) and ``DUPLICATE_METRIC``, and fills in
    the steps :meth:`_read`, :meth:`_state`, :meth:`_is_duplicate` and :meth:`_process`."""

    STAGE: ClassVar[str]
    DUPLICATE_METRIC: ClassVar[str]
    settings: Settings

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """The messages to send for ``raw`` from ``src``; bad input becomes a dead letter."""
        self._arrived()
        try:
            msg = self._read(raw, key, src)
        except InvalidMessage as e:
            return [self._dead_letter(raw, key, e, src, self._reason(e))]
        st = self._state(msg, key, src)
        if self._is_duplicate(msg, st):
            self.metrics.inc(self.DUPLICATE_METRIC)
            return []
        try:
            outs = self._process(msg, st, raw, key, src)
        except Rejected as r:
            return [r.out]
        self._checkpoint_if_due(self.STAGE, key, st, src)
        return outs

    def _arrived(self) -> None:
        """Count a message before it is parsed (by default nothing)."""

    @abc.abstractmethod
    def _read(self, raw: bytes | None, key: bytes | None, src: Source) -> M:
        """The parsed message; raises :class:`~schemas.InvalidMessage` for bad input."""

    def _reason(self, err: InvalidMessage) -> str | None:
        """The dead letter's reason for ``err`` (None: the error's own)."""
        return None

    @abc.abstractmethod
    def _state(self, msg: M, key: bytes | None, src: Source) -> S:
        """The state ``msg`` updates: kept, restored from a checkpoint and replay, or new."""

    @abc.abstractmethod
    def _is_duplicate(self, msg: M, st: S) -> bool:
        """Whether ``st`` already took ``msg`` (a redelivery): it is then dropped."""

    @abc.abstractmethod
    def _process(self, msg: M, st: S, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """Update ``st`` with ``msg`` and return the messages to send; raise :class:`Rejected`
        when the message cannot be taken."""

    def _dead_letter(self, raw: bytes | None, key: bytes | None, err: Exception, src: Source,
                     reason: str | None = None) -> Out:
        return dead_letter(raw, key, err, self.STAGE, src, reason=reason, max_bytes=self.settings.max_dead_letter_bytes)
