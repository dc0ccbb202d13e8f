"""Per-key state and its recovery (:class:`Recovering`), shared by the model, explain and change
handlers: restored from a checkpoint and a replay, or rebuilt from the key's whole history;
checkpoints written when due; failed messages skipped by a rebuild."""

from __future__ import annotations

import abc
import copy
import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from streamxai.schemas import InvalidMessage, Source

from ..metrics import Metrics
from ..settings import Settings
from .failures import MAX_SKIPPED, Failing, Guard, Rebuilt, message_id
from .history_cache import HistoryCache, records_of
from .protocols import CheckpointStore, History, ScanningHistory

__all__ = ["Recovering", "STORE_LOCK", "checkpoint_changed"]

log = logging.getLogger("streamxai")

M = TypeVar("M")
S = TypeVar("S")

#: the handlers of a worker share one checkpoint store (and its Kafka clients, with
#: checkpoint_store = kafka), and a handler rebuilding state runs on a thread of its own
STORE_LOCK = threading.Lock()


class Recovering(abc.ABC, Generic[M, S]):
    """Per-key state and its recovery, shared by the model, explain and change handlers.

    A handler keeps one state per *state key* (a stream, or a stream's explainer group) in
    :attr:`states`. The first message of a key without state restores the newest checkpoint and
    replays the key's later messages, or replays its whole history (unless the message opens
    the stream, :meth:`_opens`). A subclass gives :meth:`_state_key`, :meth:`_fresh` and
    :meth:`_replay_one`. A ``history`` that can ``scan`` is wrapped in a :class:`HistoryCache`.
    """

    #: the checkpoint kind and dead-letter stage
    STAGE: ClassVar[str]
    #: counts the earlier messages re-run to rebuild states
    REPLAYED_METRIC: ClassVar[str]
    #: gauges how many states the handler holds
    STATES_GAUGE: ClassVar[str]
    #: the settings that shape a state of this handler: a checkpoint built under other values
    #: of them is not restored (:meth:`_outdated`)
    SHAPED_BY: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: Settings, metrics: Metrics | None = None, history: History | None = None,
                 checkpoints: CheckpointStore | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        #: ``history(topic, partition, before_offset, key, from_offset)`` → earlier values (streamxai.kafka.replay)
        self.history = history
        #: a :class:`streamxai.handlers.protocols.CheckpointStore` (``streamxai.kafka``: files or a topic), or None
        self.checkpoints = checkpoints
        #: the state of every state key met so far
        self.states: dict[Hashable, S] = {}
        #: Kafka keys whose state was built here (restored or replayed), with its state key and partition
        self._known: dict[bytes, tuple[Hashable, tuple[str, int] | None]] = {}
        #: the last offset taken up per (topic, partition), to notice a partition that skipped ahead
        self._positions: dict[tuple[str, int], int] = {}
        self._revoked: set[tuple[str, int]] = set()
        #: Kafka keys whose state changed since its last checkpoint: the state and its last message
        self._unsaved: dict[bytes, tuple[Any, Source]] = {}
        #: Kafka keys whose state was just rebuilt and has not yet taken a message: how it was built
        self._rebuilt: dict[bytes, Rebuilt] = {}
        #: Kafka keys whose state fails on every message, also rebuilt from the whole history
        self._failing: dict[bytes, Failing] = {}
        #: Kafka keys whose state failed lately: how often, and whether it is guarded (:class:`Guard`)
        self._guards: dict[bytes, Guard] = {}
        #: per Kafka key, the messages that failed and went to the dead-letter topic, which a
        #: rebuild of the key's state does not re-run (at most MAX_SKIPPED per key, the newest)
        self._skipped: dict[bytes, dict[tuple[str, int | None, int | None, int], None]] = {}
        self._replay_errors = 0  # earlier messages that failed in the replays of this handler
        #: the messages of the batch being taken that were taken so far (None: not in a batch)
        self._batch: list[tuple[bytes | None, Source]] | None = None
        #: the state the batch changed, checkpointed (if due) once the whole batch is taken
        self._batch_state: tuple[bytes | None, Any, Source] | None = None
        #: with ``max_live_streams``: the state keys in memory, least recently used first, with
        #: their Kafka keys (:meth:`_evict`)
        self._live: dict[Hashable, bytes | None] = {}
        #: by partition followed since, the Kafka keys whose state was evicted, with the offset
        #: of the checkpoint each was evicted to (:meth:`_restore`)
        self._evicted: dict[tuple[str, int], dict[bytes, int]] = {}
        #: with ``max_live_streams``: the offset of each live state's newest checkpoint
        self._saved_at: dict[bytes, int] = {}

    @property
    def history(self) -> History | HistoryCache | None:
        """``history(topic, partition, before_offset, key, from_offset)`` → earlier values (streamxai.kafka.replay)."""
        return self._history

    @history.setter
    def history(self, source: History | None) -> None:
        self._history = HistoryCache(source, self) if isinstance(source, ScanningHistory) else source

    # the steps a handler fills in ---------------------------------------------------
    @abc.abstractmethod
    def _state_key(self, msg: M) -> Hashable:
        """The key of the state ``msg`` updates (its stream, or its stream's explainer group)."""

    @abc.abstractmethod
    def _fresh(self, state_key: Any) -> S:
        """A new state for ``state_key`` (see :meth:`_state_key`), before any message."""

    def _restored(self, st: S, msg: M) -> S:
        """A state just read from a checkpoint, before the messages after it are replayed
        (a handler sets here what the stream's settings may change without a rebuild)."""
        return st

    def _built_under(self, stream_id: str) -> dict[str, Any]:
        """What a new state of ``stream_id`` is built under: the values of :attr:`SHAPED_BY` in
        the stream's effective settings (:meth:`Settings.for_stream`). A handler keeps it in its
        state's ``built_under``, so the state's checkpoints record it."""
        s = self.settings.for_stream(stream_id)
        return {name: copy.deepcopy(getattr(s, name)) for name in self.SHAPED_BY}

    def _outdated(self, st: S, msg: M) -> list[str]:
        """The :attr:`SHAPED_BY` settings whose value in the state's ``built_under`` differs from
        its stream's now (none: the checkpoint fits and is restored; else the key is rebuilt)."""
        was = getattr(st, "built_under", None)
        if not was:
            return []
        now = self._built_under(msg.stream_id)  # type: ignore[attr-defined]
        return [name for name in self.SHAPED_BY if name in was and was[name] != now[name]]

    def _unpack(self, raw: bytes | None, src: Source) -> list[tuple[bytes | None, Source]] | None:
        """The messages of a record in a batch form (one key's messages, in order), each with the
        source it is taken as; None for a record of one message (the default: no batch form).
        Raises :class:`~schemas.InvalidMessage` for a batch that does not frame."""
        return None

    def _opens(self, msg: M) -> bool:
        """Whether ``msg`` is the first of its key (nothing to replay before it)."""
        return False

    @abc.abstractmethod
    def _replay_one(self, st: S, raw: bytes | None, key: bytes | None, src: Source) -> bool:
        """Re-run one earlier message into ``st`` as it was run the first time; False if it was
        skipped (a dead letter, a duplicate)."""

    # state: get or create ------------------------------------------------------------
    def _state(self, msg: M, key: bytes | None, src: Source) -> S:
        """The state ``msg`` updates: kept, restored from a checkpoint and replay, or new."""
        sk = self._state_key(msg)
        st = self.states.get(sk)
        if st is None:
            st = self.states[sk] = self._load(msg, key, src)
            self.metrics.gauge(self.STATES_GAUGE, len(self.states))
        if self.settings.max_live_streams and self.checkpoints is not None:
            live = self._live
            live.pop(sk, None)
            live[sk] = key  # the most recently used last
            while len(live) > self.settings.max_live_streams and self._evict():
                pass
        return st

    def _saved(self, key: bytes, src: Source) -> None:
        """A checkpoint of ``key``'s state as of ``src`` was written (noted with a limit on live states)."""
        if self.settings.max_live_streams and src.offset is not None:
            self._saved_at[key] = src.offset

    def _evict(self) -> bool:
        """Drop the least recently used state (not the one in use), checkpointed first if it
        changed since its last checkpoint; its stream's next message restores it from that
        checkpoint (:meth:`_restore`). False if none can be dropped."""
        sk, key = next(iter(self._live.items()))
        if key is None or len(self._live) < 2:
            return False
        if key in self._unsaved:
            self._save_unsaved(key)
        where = self._known.get(key, (None, None))[1]
        at = self._saved_at.get(key)
        self._forget(key, sk)
        if where is not None and at is not None:
            self._evicted.setdefault(where, {})[key] = at
        self.metrics.inc("states_evicted", stage=self.STAGE)
        return True

    def _was_evicted(self, key: bytes | None, src: Source) -> bool:
        """Whether the state of ``key`` was evicted from memory to its checkpoint (``src``: its message)."""
        return key in self._evicted.get((src.topic, src.partition), ())

    def _load(self, msg: M, key: bytes | None, src: Source) -> S:
        """The state of a key met for the first time (see :meth:`_recover`)."""
        return self._recover(msg, key, src)

    def _recover(self, msg: M, key: bytes | None, src: Source) -> S:
        st = self._restore(msg, key, src)
        # rebuilt in the middle of a batch (a failure dropped the state): the history ends
        # before the batch's record, so the batch's messages taken so far are re-run too
        for item_raw, item_src in self._batch or ():
            if not self._was_dead_lettered(key, item_raw, item_src):
                self._replay_one(st, item_raw, key, item_src)
        if key is not None:  # only once it worked: a failed rebuild is tried again off the loop
            tp = (src.topic, src.partition) if src.partition is not None else None
            self._known[key] = (self._state_key(msg), tp)
            if tp is not None and isinstance(self._history, HistoryCache):
                self._history.built(src.topic, src.partition, key)  # a rebuild reads it from Kafka
        return st

    def _replay_error(self) -> None:
        """Count an earlier message that failed while being replayed (a subclass's ``_replay_one``)."""
        self._replay_errors += 1
        self.metrics.inc("replay_errors")

    def _forget(self, key: bytes | None, state_key: Hashable) -> None:
        """Drop a state (stale, or half-updated by an error): the key's next message rebuilds
        it, off the event loop."""
        self.states.pop(state_key, None)
        self._live.pop(state_key, None)
        if key is not None:
            self._known.pop(key, None)
            self._unsaved.pop(key, None)
            self._saved_at.pop(key, None)
        self.metrics.gauge(self.STATES_GAUGE, len(self.states))

    # recovery --------------------------------------------------------------------------
    def needs_recovery(self, key: bytes | None, src: Source | None = None) -> bool:
        """Whether a message with ``key`` at ``src`` may make the handler rebuild state: true for
        keys it has not built state for yet. Called for every message in order, it also notices a
        partition that does not continue where it left off and drops its cached history."""
        if src is not None and src.partition is not None and src.offset is not None:
            tp = (src.topic, src.partition)
            prev = self._positions.get(tp)
            if isinstance(self._history, HistoryCache) and (prev is None or src.offset != prev + 1):
                if prev is not None:
                    self._history.forget(src.topic, src.partition)
                self._history.follow(src.topic, src.partition, src.offset)  # every message from here on
            if prev is not None and src.offset != prev + 1:
                # messages of the partition this handler did not see: an evicted key may have some
                self._evicted.pop(tp, None)
            if tp in self._revoked:
                self._revoked.discard(tp)
                if prev is not None and src.offset > prev + 1:
                    self._drop_partition(tp)
            self._positions[tp] = src.offset
        return self._unbuilt(key)

    def _unbuilt(self, key: bytes | None) -> bool:
        """Whether a message of ``key`` would build its state from history (none built here yet)."""
        return self._history is not None and key is not None and key not in self._known

    def partitions_revoked(self, tps: set[tuple[str, int]]) -> None:
        """A rebalance took ``(topic, partition)`` pairs away. If one comes back after another
        worker processed some of it, the states of its keys here missed those messages: the
        next message then drops them, and each key is rebuilt (checkpoint and replay)."""
        self._revoked |= set(tps)

    def _drop_partition(self, tp: tuple[str, int]) -> None:
        stale = [(key, sk) for key, (sk, where) in self._known.items() if where == tp]
        for key, sk in stale:
            self._forget(key, sk)
        if stale:
            self.metrics.inc("states_dropped_after_rebalance", len(stale))
            log.info("%s[%d] came back after another worker processed part of it: rebuilding %d keys",
                     tp[0], tp[1], len(stale))

    def _checkpoint_if_due(self, key: bytes | None, st: Any, src: Source) -> None:
        """Count one more message for ``st``; write its checkpoint when ``checkpoint_every`` is
        reached (in a batch: once the whole batch is taken, so that a checkpoint at a record's
        offset always covers all of it)."""
        st.since_checkpoint += 1
        if self._batch is not None:
            self._batch_state = (key, st, src)
            return
        self._save_if_due(key, st, src)

    def _save_if_due(self, key: bytes | None, st: Any, src: Source) -> None:
        """Write the checkpoint of ``st`` (as of ``src``) if ``checkpoint_every`` is reached."""
        if self.checkpoints is None or not key:
            return
        if self.checkpoints.due(st.since_checkpoint):
            st.since_checkpoint = 0
            with STORE_LOCK:
                self.checkpoints.save(self.STAGE, key, st, src)
            self.metrics.inc("checkpoints_written")
            self._unsaved.pop(key, None)
            self._saved(key, src)
        else:
            self._unsaved[key] = (st, src)

    def checkpoint_all(self, until: float | None = None) -> int:
        """Checkpoint the states that took messages since their last checkpoint, as of their
        last message, until ``time.monotonic()`` reaches ``until`` (None: every one); the number
        written (see :func:`checkpoint_changed`, which a worker calls over all its handlers)."""
        return checkpoint_changed([self], until)[0]

    def _save_unsaved(self, key: bytes) -> None:
        """Write the checkpoint of ``key``'s state changed since its last one, as of its last message."""
        st, src = self._unsaved[key]
        with STORE_LOCK:
            self.checkpoints.save(self.STAGE, key, st, src)  # type: ignore[union-attr]
        st.since_checkpoint = 0
        del self._unsaved[key]
        self.metrics.inc("checkpoints_written")
        self._saved(key, src)

    def _restore(self, msg: M, key: bytes | None, src: Source) -> S:
        # only a checkpoint before this message: after a SIGKILL the worker resumes from the
        # committed offset, and a newer checkpoint covers messages whose outputs may be lost
        loaded = None
        t0 = time.perf_counter()
        evicted = self._evicted.get((src.topic, src.partition), {}).pop(key, None) if key is not None else None
        if self.checkpoints and key:
            with STORE_LOCK:
                loaded = self.checkpoints.load(self.STAGE, key, src.topic, src.partition, before_offset=src.offset)
        t1 = time.perf_counter()
        self.metrics.inc("recovery_seconds", t1 - t0, stage=self.STAGE, step="checkpoint")
        changed = self._outdated(loaded[0], msg) if loaded is not None else []
        if changed:
            log.warning("%s state %s: not restored from its checkpoint at %s[%d]@%d: its stream's %s changed since; "
                        "rebuilding it from its history under the new settings", self.STAGE,
                        key.decode(errors="replace") if key else None, src.topic, src.partition, loaded[1],
                        ", ".join(changed))
            self.metrics.inc("checkpoints_outdated")
            loaded = None
        if loaded is not None:
            st, ck_offset = loaded
            st = self._restored(st, msg)
            st.since_checkpoint = 0
            self.metrics.inc("checkpoints_restored", stage=self.STAGE)
            from_offset = ck_offset + 1
        else:
            st, from_offset = self._fresh(self._state_key(msg)), 0
        rebuilt = Rebuilt("checkpoint" if loaded is not None else "history")
        if key is not None:
            self._rebuilt[key] = rebuilt
        if loaded is None and self._opens(msg):
            return st
        if loaded is not None and evicted == loaded[1]:
            # evicted to this checkpoint (_evict), and this handler has seen every message of the
            # partition since: the key has none in between (its first would have restored it)
            self.metrics.inc("states_restored_after_eviction", stage=self.STAGE)
            return st
        if self.history is not None and src.offset is not None and src.offset > from_offset:
            self._check_history(key, src, from_offset)
            errors = self._replay_errors
            rebuilt.ok = self._rebuild(st, key, src, from_offset)
            rebuilt.failed = self._replay_errors - errors
            self.metrics.inc("recovery_seconds", time.perf_counter() - t1, stage=self.STAGE, step="replay")
        elif loaded is not None:
            self._log_built(key, src, from_offset, 0, 0)
        return st

    def _check_history(self, key: bytes | None, src: Source, from_offset: int) -> None:
        """Report (one warning, the ``history_incomplete`` counter) a replay of ``key`` that needs
        the messages of ``src``'s partition from ``from_offset`` when retention deleted some of
        them: the state is then built from what remains, and the stream goes on."""
        first_offset = getattr(self.history, "first_offset", None)
        first = first_offset(src.topic, src.partition) if first_offset is not None else None
        if first is None or first <= from_offset:
            return
        self.metrics.inc("history_incomplete")
        log.warning("%s state %s: its history is incomplete: rebuilding it needs %s[%d] from offset %d (%s) and the "
                    "topic keeps it from offset %d (retention deleted the rest); going on from what remains, so its "
                    "values differ from an unbroken run (see docs/pages/how-to/retention.md)", self.STAGE,
                    key.decode(errors="replace") if key is not None else None, src.topic, src.partition, from_offset,
                    "after its checkpoint" if from_offset > 0 else "its first message, no checkpoint being found",
                    first)

    def _rebuild(self, st: S, key: bytes | None, src: Source, from_offset: int) -> int:
        """Re-run the messages of ``key`` on ``src``'s partition from ``from_offset`` up to ``src``
        into ``st``; how many were taken."""
        earlier = records_of(self.history, src.topic, src.partition, src.offset, key, from_offset)
        read = n = 0  # read lazily: a long stream's history is not held in memory at once
        for off, raw, ts, headers in earlier:
            read += 1
            at = Source(src.topic, src.partition, off, timestamp=ts, headers=headers)
            try:
                items = self._unpack(raw, at)
            except InvalidMessage:
                continue  # a dead letter the first time
            n += sum(self._replay_one(st, r, key, s) for r, s in items or [(raw, at)]
                     if not self._was_dead_lettered(key, r, s))
        self.metrics.inc(self.REPLAYED_METRIC, n)
        self._log_built(key, src, from_offset, read, n)
        return n

    def _dead_lettered(self, key: bytes | None, raw: bytes | None, src: Source) -> None:
        """Note that the message ``raw`` of ``key`` at ``src`` failed and went to the dead-letter
        topic: a later rebuild of the key's state does not re-run it, so the state is the one
        that never took it (as the failed attempt left nothing of it either)."""
        if key is None:
            return
        done = self._skipped.setdefault(key, {})
        done[message_id(raw, src)] = None
        if len(done) > MAX_SKIPPED:
            del done[next(iter(done))]

    def _was_dead_lettered(self, key: bytes | None, raw: bytes | None, src: Source) -> bool:
        done = self._skipped.get(key) if key is not None else None
        return bool(done) and message_id(raw, src) in done  # type: ignore[operator]

    def _log_built(self, key: bytes | None, src: Source, from_offset: int, read: int, n: int) -> None:
        """One line on how the state of ``key`` met at ``src`` was built: restored from its
        checkpoint (``from_offset`` > 0: the one before it) and ``n`` later messages replayed,
        opened for a new stream, or rebuilt from ``n`` earlier messages (``read`` of them read)."""
        name = key.decode(errors="replace") if key is not None else None
        if from_offset > 0:
            log.info("restored %s state %s from its checkpoint at %s[%d]@%d, then replayed %d later messages "
                     "of it, up to %s", self.STAGE, name, src.topic, src.partition, from_offset - 1, n, src)
        elif not read:  # no checkpoint and nothing of the key before: a new stream
            log.info("opened a new %s state for stream %s (its first message is %s)", self.STAGE, name, src)
        else:
            log.info("rebuilt %s state %s from %d earlier messages of %s", self.STAGE, name, n, src)


def checkpoint_changed(handlers: Sequence[Recovering], until: float | None = None,
                       clock: Callable[[], float] = time.monotonic) -> tuple[int, int]:
    """Checkpoint the states of ``handlers`` that took messages since their last checkpoint, as
    of their last message, those that took the most first, until ``clock()`` reaches ``until``
    (None: every one); ``(written, left)``. A worker calls it as it stops so a restart replays
    nothing; a state left unwritten is rebuilt from its last checkpoint, as after a SIGKILL."""
    queue = sorted(((st.since_checkpoint, i, key) for i, h in enumerate(handlers) if h.checkpoints is not None
                    for key, (st, _) in h._unsaved.items()), key=lambda item: -item[0])
    for written, (_, i, key) in enumerate(queue):
        if until is not None and clock() >= until:
            return written, len(queue) - written
        handlers[i]._save_unsaved(key)
    return len(queue), 0
