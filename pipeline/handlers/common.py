"""What every handler shares: the skeleton (:class:`MessageHandler`) that takes each message
into its key's state, and what a failure does to that state."""

from __future__ import annotations

import abc
import logging
import pickle
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

from streamxai.schemas import InvalidMessage, Source

from ..metrics import profile_label
from .dead_letters import dead_letter
from .failures import FAILING_STREAK, GUARD_WINDOW, Failing, Guard, StateError
from .out import Out
from .recovering import STORE_LOCK, M, Recovering, S

__all__ = ["MessageHandler", "Rejected"]

log = logging.getLogger("streamxai")

#: the most streams whose ``profile`` label a handler keeps (:meth:`MessageHandler._profile`)
_MAX_PROFILE_LABELS = 4096


class Rejected(Exception):
    """Raised by a handler's :meth:`MessageHandler._process`: the message becomes the dead
    letter ``out`` and the state is not checkpointed."""

    def __init__(self, out: Out):
        super().__init__(out.reason)
        self.out = out


class MessageHandler(Recovering[M, S]):
    """The one skeleton of the model, explain and change handlers (:meth:`on_message`):
    parse → dead letter → load state → drop duplicate → process → checkpoint. A handler
    names its ``STAGE`` (dead letters, checkpoints) and ``DUPLICATE_METRIC``, and fills in
    the steps :meth:`_read` (or :meth:`_checked`), :meth:`_is_duplicate` and :meth:`_process`, and those of
    :class:`Recovering` (:meth:`_state_key`, :meth:`_fresh`, :meth:`_replay_one`)."""

    DUPLICATE_METRIC: ClassVar[str]
    #: the messages of a batch record, for taking it in one pass (:meth:`_take_checked`), from
    #: the record's bytes and place; None: every record is taken message by message
    ONE_PASS: ClassVar[Callable[[bytes | None, Source], list[bytes] | None] | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._profile_labels: dict[str, str] = {}  # stream id -> its profile label (:meth:`_profile`)

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """The messages to send for ``raw`` from ``src``; bad input becomes a dead letter. A
        record in a batch form (:meth:`_unpack`) is taken message by message, its state
        checkpointed once the whole batch is taken (or in one pass, :attr:`ONE_PASS`)."""
        outs = self.on_message_on_loop(raw, key, src)
        return outs if isinstance(outs, list) else outs()

    def on_message_on_loop(self, raw: bytes | None, key: bytes | None,
                           src: Source) -> list[Out] | Callable[[], list[Out]]:
        """:meth:`on_message` as the agent loop calls it on the event loop: where a failure drops
        the state of a batch record's key with messages still to take, it returns a call that
        takes the rest (a rebuild), for the loop to run on a thread; otherwise the messages."""
        if self.ONE_PASS is not None:
            taken = self._take_checked(raw, key, src, self.ONE_PASS)
            if taken is not None:
                return taken
        try:
            items = self._unpack(raw, src)
        except InvalidMessage as e:
            return [self._dead_letter(raw, key, e, src, self._reason(e))]
        if items is None:
            return self._on_one(raw, key, src)
        self._arrived(len(items))  # the record's messages counted at once, not one call each
        self._batch = []
        return self._take_batch(key, items, 0, [], stop=True)

    def _take_batch(self, key: bytes | None, items: list[tuple[bytes | None, Source]], i: int, outs: list[Out],
                    stop: bool) -> list[Out] | Callable[[], list[Out]]:
        """Take the batch's ``items`` from the ``i``-th on (``outs``: those of the ones before);
        with ``stop``, only until the next would rebuild its key's state (see
        :meth:`on_message_on_loop`)."""
        try:
            while i < len(items):
                if stop and i and self._rebuilds(key):
                    held = (self._batch, self._batch_state)
                    return lambda: self._resume_batch(key, items, i, outs, held)
                item_raw, item_src = items[i]
                outs += self._on_one(item_raw, key, item_src)
                self._batch.append((item_raw, item_src))  # type: ignore[union-attr]
                i += 1
            if self._batch_state is not None:
                k, st, at = self._batch_state
                if self.states.get(self._state_key_of(k)) is st:  # not dropped by a failure meanwhile
                    self._save_if_due(k, st, at)
        finally:
            self._batch = self._batch_state = None
        return self._combine(outs)

    def _resume_batch(self, key: bytes | None, items: list[tuple[bytes | None, Source]], i: int, outs: list[Out],
                      held: tuple[list[tuple[bytes | None, Source]] | None, Any]) -> list[Out]:
        """The rest of a batch that :meth:`_take_batch` stopped at its ``i``-th item."""
        self._batch, self._batch_state = held
        return self._take_batch(key, items, i, outs, stop=False)  # type: ignore[return-value]

    def _rebuilds(self, key: bytes | None) -> bool:
        """Whether the next message of ``key`` rebuilds its state from history (a failure dropped
        it; one whose state fails on every message and waits is not tried, :class:`Failing`)."""
        if not self._unbuilt(key):
            return False
        failing = self._failing.get(key)  # type: ignore[arg-type]
        return failing is None or failing.wait == 0

    def _settled_state(self, key: bytes | None) -> S | None:
        """The state of ``key`` if a record of it may be taken in one pass (:meth:`_take_whole`):
        built here, with no rebuild, failure or guard pending; None otherwise."""
        if key is None or key in self._rebuilt or key in self._failing or key in self._guards:
            return None
        known = self._known.get(key)
        return self.states.get(known[0]) if known is not None else None  # type: ignore[return-value]

    def _take_checked(self, raw: bytes | None, key: bytes | None, src: Source,
                      items: Callable[[bytes | None, Source], list[bytes] | None]
                      ) -> list[Out] | Callable[[], list[Out]] | None:
        """The batch record ``raw`` in one pass (:meth:`_take_whole`) when ``key``'s state is here
        and well and every message passes its checks; None for any other record, which is taken
        message by message. Nothing changes before every message has passed."""
        st = self._settled_state(key)
        if st is None:
            return None
        try:
            raws = items(raw, src)
            if not raws:
                return None
            where = str(src)
            msgs = [self._checked(r, key, where) for r in raws]
        except InvalidMessage:
            return None  # the skeleton dead-letters it, with its place in the record
        return self._take_whole(raw, key, src, st, msgs, raws)  # type: ignore[arg-type]

    def _checked(self, raw: bytes | None, key: bytes | None, where: str) -> M:
        """The message ``raw`` as :meth:`_read` reads and checks it, ``where`` its place: what a
        handler that takes batch records in one pass (:meth:`_take_checked`) fills in."""
        raise NotImplementedError(f"{type(self).__name__} takes no batch record in one pass")

    def _take_whole(self, raw: bytes | None, key: bytes, src: Source, st: S, msgs: list[M],
                    raws: list[bytes]) -> list[Out] | Callable[[], list[Out]]:
        """The batch record ``raw`` of ``key`` in one pass: ``msgs``, every one read and checked,
        into ``st``. State, checkpoint and place are looked at once for the record, to the same
        effect as message by message; a message that raises in :meth:`_process` hands the rest
        of the record to that path (:meth:`_hand_over`)."""
        n = len(msgs)
        self._arrived(n)
        self._state(msgs[0], key, src)  # the state's turn in the live states (max_live_streams)
        outs: list[Out] = []
        last = -1
        for i, msg in enumerate(msgs):
            if self._is_duplicate(msg, st):
                self.metrics.inc(self._duplicate_metric(msg))
                continue
            try:
                outs += self._process(msg, st, raws[i], key, src)
            except Rejected as r:
                outs.append(r.out)
                continue
            except Exception as e:  # noqa: BLE001 - the skeleton's failure handling takes it from here
                return self._hand_over(raw, key, src, i, last, msg, st, outs, e)
            st.since_checkpoint += 1  # type: ignore[attr-defined]
            last = i
        if last >= 0:
            self._save_if_due(key, st, self._place(src, last, n))
        return self._combine(outs)

    def _hand_over(self, raw: bytes | None, key: bytes, src: Source, i: int, last: int, msg: M, st: S,
                   outs: list[Out], err: Exception) -> list[Out] | Callable[[], list[Out]]:
        """The ``i``-th message of a record taken by :meth:`_take_whole` raised ``err``: the
        skeleton fails it and takes the rest of the record, as if it had taken the record from
        the start (the ones before taken, the state to checkpoint that of the last one taken)."""
        items = self._unpack(raw, src) or []
        self._batch = items[:i]
        self._batch_state = (key, st, items[last][1]) if last >= 0 else None
        try:
            outs += self._failed(msg, items[i][0], key, items[i][1], err)
            self._batch.append(items[i])
        except BaseException:
            self._batch = self._batch_state = None
            raise
        return self._take_batch(key, items, i + 1, outs, stop=True)

    def _place(self, src: Source, i: int, n: int) -> Source:
        """Where the ``i``-th (from 0) of the ``n`` messages of the batch record at ``src`` is
        taken (as :meth:`_unpack` places it; by default the record's place)."""
        return src

    def _combine(self, outs: list[Out]) -> list[Out]:
        """The messages to send for a batch's ``outs`` (by default those themselves)."""
        return outs

    def _state_key_of(self, key: bytes | None) -> Hashable:
        """The state key of the messages of Kafka key ``key`` (those of a batch share one)."""
        known = self._known.get(key) if key is not None else None
        return known[0] if known is not None else None

    def _on_one(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """The messages to send for one message (counted by :meth:`_arrived` unless it is one of a
        batch's, which :meth:`on_message` counts together)."""
        if self._batch is None:
            self._arrived(1)
        try:
            msg = self._read(raw, key, src)
        except InvalidMessage as e:
            return [self._dead_letter(raw, key, e, src, self._reason(e))]
        failing = self._failing.get(key) if key is not None else None
        if failing is not None and failing.wait > 0:
            failing.wait -= 1
            self.metrics.inc("state_errors")
            return [self._dead_letter(raw, key, StateError(
                f"not processed: the {self.STAGE} state of {key!r} is failing ({failing.error}), rebuilt "
                f"again after {failing.wait + 1} more message(s) of it; see the worker's ERROR line"), src, "state_error")]
        return self._take(msg, raw, key, src)

    def _take(self, msg: M, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        st = self._state(msg, key, src)
        if self._is_duplicate(msg, st):
            self.metrics.inc(self._duplicate_metric(msg))
            return []
        guard = self._guards.get(key) if key is not None else None
        if guard is not None:
            guard.seen += 1
        # a copy as a checkpoint makes it (pickled and read back, quicker than deepcopy), so
        # that a failure can put the state back
        before = pickle.loads(pickle.dumps(st, protocol=pickle.HIGHEST_PROTOCOL)) if guard is not None and guard.on else None
        try:
            outs = self._process(msg, st, raw, key, src)
        except Rejected as r:
            outs = [r.out]
        except Exception as e:  # a model or explainer that raises, or a state that does not fit this code
            if before is not None:
                return self._rolled_back(msg, raw, key, src, e, st, before)
            return self._failed(msg, raw, key, src, e)
        else:
            self._checkpoint_if_due(key, st, src)
        if guard is not None:
            guard.streak = 0
        if guard is not None and guard.quiet():
            del self._guards[key]  # type: ignore[arg-type]
            if guard.on:
                log.info("%s state %s: %d messages without a failure, no longer guarded", self.STAGE, key,
                         GUARD_WINDOW)
        if key is not None and (self._rebuilt or self._failing):  # both empty but after a rebuild or a failure
            self._rebuilt.pop(key, None)
            if self._failing.pop(key, None) is not None:
                log.warning("%s state %s works again after a rebuild", self.STAGE, key)
        return outs

    def _failed(self, msg: M, raw: bytes | None, key: bytes | None, src: Source, err: Exception) -> list[Out]:
        """``msg`` raised in :meth:`_process`: the state may be half-updated, so it is dropped (the
        next message rebuilds it) and the message becomes a dead letter. A state just restored
        that fails is rebuilt from the whole history at once and the message tried again; one
        that fails on every message is not rebuilt for every message (:class:`Failing`)."""
        why = f"{type(err).__name__}: {str(err)[:300]}"
        self._forget(key, self._state_key(msg))
        rebuilt = self._rebuilt.pop(key, None) if key is not None else None
        if rebuilt is not None and key is not None and rebuilt.how == "checkpoint" and self.checkpoints is not None:
            log.warning("%s state %s fails after it was restored from a checkpoint (%s): setting its checkpoints "
                        "aside and rebuilding it from its whole history", self.STAGE, key, why)
            with STORE_LOCK:
                self.checkpoints.discard(self.STAGE, key, f"the state restored from it failed ({why})")
            return self._take(msg, raw, key, src)
        self._dead_lettered(key, raw, src)
        if key is not None:
            self._strike(key, why)
        if rebuilt is not None and key is not None and rebuilt.failed and not rebuilt.ok:
            failing = self._failing.get(key)
            if failing is None:
                failing = self._failing[key] = Failing(why)
                log.error("%s state %s fails on every message, also rebuilt from its history (%s): its "
                          "messages go to the dead-letter topic (reason state_error) and it is rebuilt again after "
                          "1, 2, 4, ... more of them; fix the cause and restart the worker", self.STAGE, key, why)
            failing.failed_again(why)
        return [self._dead_letter(raw, key, err, src, f"{self.STAGE}_error")]

    def _strike(self, key: bytes, why: str) -> None:
        """A failure dropped the state of ``key``: the second within GUARD_WINDOW of its messages
        guards it (:class:`Guard`; one WARNING line, metric ``states_guarded``)."""
        guard = self._guards.get(key)
        if guard is None:
            guard = self._guards[key] = Guard()
        guard.failures = 1 if guard.quiet() else guard.failures + 1
        guard.last_failure = guard.seen
        if guard.failures >= 2 and not guard.on:
            guard.on = True
            self.metrics.inc("states_guarded")
            log.warning("%s state %s failed %d times within %d of its messages (last: %s): each of its messages is "
                        "now taken on a copy of its state and one that fails is dead-lettered without a rebuild, "
                        "until %d of its messages pass without a failure", self.STAGE, key, guard.failures,
                        GUARD_WINDOW, why, GUARD_WINDOW)

    def _rolled_back(self, msg: M, raw: bytes | None, key: bytes | None, src: Source, err: Exception,
                     failed: S, before: S) -> list[Out]:
        """``msg`` raised on the guarded state ``failed``: the state goes back to ``before`` (its
        copy from before the message), the message becomes a dead letter, nothing is rebuilt."""
        self.states[self._state_key(msg)] = before
        self._replaced(failed, before)
        if key is not None:
            if key in self._unsaved:
                self._unsaved[key] = (before, self._unsaved[key][1])
            guard = self._guards[key]
            guard.failures, guard.last_failure, guard.streak = guard.failures + 1, guard.seen, guard.streak + 1
            why = f"{type(err).__name__}: {str(err)[:300]}"
            failing = self._failing.get(key)
            if failing is None and guard.streak >= FAILING_STREAK:
                failing = self._failing[key] = Failing(why)
                log.error("%s state %s failed on %d messages in a row: its messages go to the dead-letter topic "
                          "(reason state_error) and it is tried again after 1, 2, 4, ... more of them; fix the cause "
                          "and restart the worker", self.STAGE, key, guard.streak)
            if failing is not None:  # it fails on every message: its next ones are not tried (backoff)
                failing.failed_again(why)
        if self._batch_state is not None and self._batch_state[1] is failed:
            self._batch_state = (self._batch_state[0], before, self._batch_state[2])
        self._dead_lettered(key, raw, src)
        self.metrics.inc("failures_rolled_back")
        return [self._dead_letter(raw, key, err, src, f"{self.STAGE}_error")]

    def _replaced(self, old: S, new: S) -> None:
        """A state was put back to its copy ``new`` in place of ``old`` (by default nothing to do)."""

    def _arrived(self, n: int) -> None:
        """Count ``n`` messages before they are parsed (by default nothing)."""

    def _read(self, raw: bytes | None, key: bytes | None, src: Source) -> M:
        """The parsed message; raises :class:`~schemas.InvalidMessage` for bad input (by default
        :meth:`_checked` at ``src``)."""
        return self._checked(raw, key, str(src))

    def _reason(self, err: InvalidMessage) -> str | None:
        """The dead letter's reason for ``err`` (None: the error's own)."""
        return None

    @abc.abstractmethod
    def _is_duplicate(self, msg: M, st: S) -> bool:
        """Whether ``st`` already took ``msg`` (a redelivery): it is then dropped."""

    def _duplicate_metric(self, msg: M) -> str:
        """The counter of dropped duplicates ``msg`` counts in (by default ``DUPLICATE_METRIC``)."""
        return self.DUPLICATE_METRIC

    @abc.abstractmethod
    def _process(self, msg: M, st: S, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """Update ``st`` with ``msg`` and return the messages to send; raise :class:`Rejected`
        when the message cannot be taken."""

    def _profile(self, stream_id: str) -> str:
        """The ``profile`` label of ``stream_id``'s counters (:data:`~streamxai.metrics.PROFILED`),
        looked up once per stream (the settings do not change while the worker runs)."""
        labels = self._profile_labels
        label = labels.get(stream_id)
        if label is None:
            if len(labels) >= _MAX_PROFILE_LABELS:  # bounded whatever the stream ids
                labels.clear()
            label = labels[stream_id] = profile_label(self.settings.profile(stream_id))
        return label

    def _count_from_zero(self, name: str, **labels: str) -> None:
        """Expose ``name`` at 0 for every profile (and the top level), so that a rate or an alert
        of one profile has its series before the first count."""
        for glob in (None, *self.settings.profiles()):
            self.metrics.inc(name, 0, profile=profile_label(glob), **labels)

    def _dead_letter(self, raw: bytes | None, key: bytes | None, err: Exception, src: Source,
                     reason: str | None = None) -> Out:
        return dead_letter(raw, key, err, self.STAGE, src, reason=reason, max_bytes=self.settings.max_dead_letter_bytes)
