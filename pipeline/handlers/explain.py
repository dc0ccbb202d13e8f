"""Explainer path: one deterministic model replica per (stream, group), explained then taught."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from streamxai.schemas import (
    ExplainDecision,
    InvalidMessage,
    LocalExplanation,
    SchemaMismatch,
    Source,
    decode,
    dumps,
    pack_report,
    report_documents,
    unpack_tasks,
)
from streamxai.schemas.change_feed import pack_faults
from streamxai.schemas.features import check_feature_event
from streamxai.schemas.parsing import explain_task_fields

from ..core.attribution import Attribution, attribute, top_k
from ..core.attribution.leaf_table import LeafMemo
from ..core.attribution.series import LocalSeries
from ..core.budget import LagShedder
from ..core.change.inputs import InputFault
from ..core.explainers import ISAGE
from ..core.increments import Block
from ..core.prequential import MAX_LOSS
from ..core.rng import derive_seed
from ..core.stream import ExplanationValue, StreamExplainer
from ..metrics import Metrics
from ..plan import explainer_changes, stream_explainer
from ..settings import Settings
from .common import MessageHandler, log
from .out import Out
from .protocols import CheckpointStore, History

__all__ = ["ExplainHandler"]


class _Task(NamedTuple):
    """The explain path's view of one :class:`~streamxai.schemas.ExplainTask`, its fields in its
    order (a tuple: made for every task taken, several times quicker than the frozen message)."""

    stream_id: str
    seq: int
    ts: float
    x: dict[str, Any]
    y: Any
    group: int
    explain: bool
    sent_at: float
    loss: float | None
    step: str
    position: int
    event_id: str | None


@dataclass
class _GroupState:
    explainer: StreamExplainer
    #: the position of the last task taken (tasks at or before it are duplicates)
    last_position: int = -1
    since_checkpoint: int = 0
    #: explain-eligible tasks shed since the group last explained one (the fair stride's count)
    skipped: int = 0
    #: decisions recorded by an earlier run for tasks not yet processed again (position -> explain)
    recorded: dict[int, bool] = field(default_factory=dict)
    #: the mean absolute local attributions of the report being gathered (``local_change``)
    local_series: LocalSeries | None = None


class ExplainHandler(MessageHandler[_Task, _GroupState]):
    """One per worker; keeps one stream explainer per (stream, explainer group) it owns.

    Each explain task is one step of one event for one group, in the stream's record order
    (``position``): ``predict`` (the event's arrival; iPDP), ``learn`` (its label came; iPFI and
    iSAGE explain it, then the replica learns it) or ``both`` (a label in line), so the replica
    explains each event with the model as it was at that step. A batch record whose tasks all
    pass their checks is taken in one pass (:meth:`_take_checked`). While tasks wait longer than
    ``max_lag_s``, a group explains one event in a stride that grows with the wait
    (:class:`~streamxai.core.budget.LagShedder`); each such decision depends on the clock, so it
    is recorded on ``explain-decisions`` and a replay applies it again.
    """

    STAGE = "explain"
    DUPLICATE_METRIC = "duplicate_tasks_dropped"

    STATES_GAUGE = "explainer_groups"
    REPLAYED_METRIC = "replayed_tasks"
    ONE_PASS = staticmethod(unpack_tasks)

    def __init__(
        self, settings: Settings, metrics: Metrics | None = None, clock: Callable[[], float] = time.time,
        history: History | None = None, checkpoints: CheckpointStore | None = None,
    ):
        super().__init__(settings, metrics, history, checkpoints)
        self.clock = clock
        self.shedder = LagShedder(settings.max_lag_s or None)
        self._decisions: dict[int, bool] = {}  # recorded decisions of the group being rebuilt
        #: decisions an earlier run recorded, by explain-tasks partition and group key
        self._recorded: dict[int, dict[bytes | None, dict[int, bool]]] = {}
        self.started = clock()
        #: what local attributions learnt about each replica's leaves (a cache, never checkpointed)
        self._memos: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._count_from_zero("events_explained")
        self._count_from_zero("shed_events")

    @property
    def groups(self) -> dict[tuple[str, int], _GroupState]:
        """The explainers of every (stream, group) met so far."""
        return self.states  # type: ignore[return-value]

    def _parse(self, raw: bytes | None, where: str) -> _Task:
        t = explain_task_fields(raw, where=where, groups=self.settings.explain_groups,
                                max_bytes=10 * self.settings.max_message_bytes)
        return _Task(t["stream_id"], t["seq"], t["ts"], t["x"], t["y"], t["group"], t["explain"], t["sent_at"],
                     t["loss"], t["step"], t["position"], t["event_id"])

    def _unpack(self, raw: bytes | None, src: Source) -> list[tuple[bytes | None, Source]] | None:
        """The tasks of the model handler's batch form (:func:`streamxai.schemas.unpack_tasks`), each taken
        at its record's place."""
        tasks = unpack_tasks(raw, src)
        return None if tasks is None else [(t, src) for t in tasks]

    def _state_key(self, task: _Task) -> tuple[str, int]:
        return (task.stream_id, task.group)

    def _opens(self, task: _Task) -> bool:
        return task.position == 0  # the stream's first step (a group may first get a later step)

    def _fresh(self, group: tuple[str, int]) -> _GroupState:
        stream_id, g = group
        return _GroupState(stream_explainer(self.settings.for_stream(stream_id), stream_id, g))

    def _restored(self, st: _GroupState, task: _Task) -> _GroupState:
        # the stream's report cadence now: a change of it needs no rebuild (explainer_changes)
        st.explainer.emit_every = self.settings.for_stream(task.stream_id).emit_every
        return st

    def _outdated(self, st: _GroupState, task: _Task) -> list[str]:
        # a restart with other explainers, parameters or model for the stream: its old replica
        # and explainers would go on as they were
        return explainer_changes(st.explainer, self.settings.for_stream(task.stream_id), task.group)

    def _load(self, task: _Task, key: bytes | None, src: Source) -> _GroupState:
        # a stream's first task sent before this handler started may have been processed
        # (and its decision recorded) by the run before a restart
        maybe_seen = not self._opens(task) or task.sent_at <= self.started
        self._decisions = self._recorded_decisions(key, src.partition) if maybe_seen else {}
        evicted = self._was_evicted(key, src)
        st = self._recover(task, key, src)
        # a state evicted to its checkpoint (max_live_streams) keeps the decisions it still held
        held = {**st.recorded, **self._decisions} if evicted else self._decisions
        st.recorded = {q: d for q, d in held.items() if q > st.last_position}
        self.metrics.gauge("fast_path", int(st.explainer.evaluation_path == "fast"), stream=task.stream_id)
        self.metrics.gauge("compiled_kernels", int(st.explainer.bookkeeping_path == "compiled"))
        self._decisions = {}
        return st

    def _forget(self, key: bytes | None, state_key: Any) -> None:
        # the stream's fast_path series goes with its last group and comes back when one is
        # restored (_load), so the series stay bounded by the streams this worker holds
        super()._forget(key, state_key)
        stream_id = state_key[0]
        if not any((stream_id, g) in self.states for g in range(self.settings.explain_groups)):
            self.metrics.drop("fast_path", stream=stream_id)

    def _recorded_decisions(self, key: bytes | None, partition: int | None) -> dict[int, bool]:
        """The decisions recorded for the group ``key`` (position -> explain) before this handler
        started. The partition's decisions are read in one pass, the first time one of its
        groups needs them, and each group's are handed out once."""
        if self.history is None or self.shedder.max_lag_s is None or partition is None:
            return {}
        if partition not in self._recorded:
            by_key: dict[bytes | None, dict[int, bool]] = {}
            for raw in self.history(self.settings.topic("explain-decisions"), partition, None, None, 0):
                try:
                    d = decode(raw, where="explain-decisions")
                    k = f"{d['stream_id']}/{d['group']}".encode()
                    if d.get("schema") != ExplainDecision.SCHEMA:  # not this version's record: not a decision made
                        continue
                    by_key.setdefault(k, {})[int(d["position"])] = bool(d["explain"])
                except (InvalidMessage, KeyError, TypeError, ValueError):
                    continue
            self._recorded[partition] = by_key
        return self._recorded[partition].pop(key, {})

    def _decide(self, st: _GroupState, task: _Task, waited: float) -> bool:
        if task.position in st.recorded:  # processed before a restart: the decision made then
            return st.recorded.pop(task.position)
        return task.explain and not self.shedder.shed(waited, st.skipped)

    def _replay_one(self, st: _GroupState, raw: bytes | None, key: bytes | None, src: Source) -> bool:
        """Re-run one earlier task of the group, with the decision recorded for it, checked as
        when it came (:meth:`_read`), so a rebuild passes over what the model stage's does."""
        try:
            task = self._read(raw, key, src)  # checked as when it came (a crafted task would stall or break the group)
        except InvalidMessage:
            return False  # it went to the dead-letter topic the first time, or does not fit the stream's features now
        if self._is_duplicate(task, st):
            return False
        explain = self._decisions.get(task.position, task.explain)
        try:  # build=False: no values, but the blocks start anew where the original run reported
            if explain and self.settings.for_stream(task.stream_id).local_change:  # its block as the original run
                self._local_series(task, st, self._attribute(task, st))  # gathered it
            st.explainer.step(task.step, task.x, task.y, explain=explain, loss=task.loss, build=False,
                              position=task.position)
            st.explainer.take_faults()  # sent when the task first came
        except Exception:
            self._replay_error()
            log.warning("task %s seq %d fails again in replay; the group continues without it", key, task.seq)
            return False
        st.last_position = task.position
        st.skipped = 0 if explain else st.skipped + int(task.explain)
        return True

    def _checked(self, raw: bytes | None, key: bytes | None, where: str) -> _Task:
        """The task, checked as the model stage sends them, so an explainer never meets what it
        cannot take half-way through the group's state; ``where`` its place."""
        task = self._parse(raw, where)
        if key != f"{task.stream_id}/{task.group}".encode():
            raise SchemaMismatch(f"message key {key!r} is not the task's stream/group {task.stream_id}/{task.group}; "
                                 "only the model stage writes explain tasks", where=where)
        check_feature_event(task.stream_id, task.seq, task.ts, task.x, task.y, self.settings.stream_feature_spec,
                            where=where)
        if task.step != "predict" and task.y is None:
            raise SchemaMismatch(f"a {task.step} step needs the event's label y", where=where)
        if isinstance(task.sent_at, bool) or not isinstance(task.sent_at, (int, float)):
            raise SchemaMismatch(f"sent_at {task.sent_at!r:.50} must be a number (seconds since the epoch)", where=where)
        if not isinstance(task.explain, bool):
            raise SchemaMismatch(f"explain {task.explain!r:.50} must be true or false", where=where)
        if task.loss is not None and not abs(task.loss) <= MAX_LOSS:
            raise SchemaMismatch(f"loss {task.loss:.3g} is more than {MAX_LOSS:g}, which the model stage does not "
                                 "learn", where=where)
        top = _max_position(task.seq, task.step, self.settings.for_stream(task.stream_id).max_label_delay)
        if not task.seq <= task.position <= top:  # the group would take it as its newest: its later tasks duplicates
            raise SchemaMismatch(
                f"position {task.position} of a {task.step} step of seq {task.seq} cannot be: the model stage gives it "
                f"a position in [{task.seq}, {top}] (its seq plus the labels learned on their own, at most one per "
                "earlier event, within max_label_delay); only the model stage writes explain tasks", where=where)
        return task

    def _is_duplicate(self, task: _Task, st: _GroupState) -> bool:
        return task.position <= st.last_position

    def _process(self, task: _Task, st: _GroupState, raw: bytes | None, key: bytes | None,
                 src: Source) -> list[Out]:
        """Explain (or shed) the task's step of its event (the replica learns it if it is labelled);
        the explanations every ``emit_every`` explained steps, and the decision when lag shedding is on."""
        m = self.metrics
        waited = self.clock() - task.sent_at
        m.gauge("explanation_lag_seconds", waited)
        explain = self._decide(st, task, waited)
        if task.explain and not explain:
            m.inc("shed_events", profile=self._profile(task.stream_id))
        se = st.explainer
        version = se.model_version
        fallbacks = se.fallbacks
        got = self._attribute(task, st) if explain else None
        local = self._local_message(task, got, version)
        series = self._local_series(task, st, got)
        # an explainer that raises (the replica may be half-updated): the skeleton drops the
        # group, so the next task rebuilds it by replay, and dead-letters the task (explain_error)
        values = se.step(task.step, task.x, task.y, explain=explain, loss=task.loss, position=task.position)
        values += series
        faults = se.take_faults()
        st.last_position = task.position
        st.skipped = 0 if explain else st.skipped + int(task.explain)
        m.inc("tasks_seen")
        if se.fallbacks != fallbacks:
            m.inc("fast_path_fallbacks", se.fallbacks - fallbacks)
        outs = []
        if task.explain and self.shedder.max_lag_s is not None:
            outs.append(Out("explain-decisions", key, dumps(ExplainDecision(
                task.stream_id, task.group, task.seq, explain, task.position)), src.partition))
        if faults:  # what the watch of the inputs found: to the change agent, before this step's report
            m.inc("input_faults", len(faults), profile=self._profile(task.stream_id))
            value, h = pack_faults(task.stream_id, task.seq, task.position, [_fault(f) for f in faults])
            outs.append(Out("drift-feed", task.stream_id.encode(), value, headers=h))
        if not explain:
            return outs
        outs += local
        m.inc("events_explained", profile=self._profile(task.stream_id))
        if not values:  # no report at this step
            return outs
        k = task.stream_id.encode()
        sid, seq, position, event_id = task.stream_id, task.seq, task.position, task.event_id
        rows = [[v.explainer, v.feature, v.value, v.n_explained, v.n_seen, v.curve, v.stderr, _block(v.block),
                 _block(v.model_loss), v.var_factor] for v in values]
        docs = report_documents(sid, seq, position, version, event_id, rows)
        outs += [Out("explanations", k, doc) for doc in docs]
        # then the same report as one record for the change agent (keyed by stream), after the
        # public ones: a worker killed in between redoes the task and sends both again
        head = {"stream_id": sid, "seq": seq, "position": position, "model_version": version, "event_id": event_id}
        outs += [Out("drift-feed", k, value, headers=h) for value, h in pack_report(head, rows, docs)]
        m.inc("explanations_out", len(values))
        return outs

    def _attribute(self, task: _Task, st: _GroupState) -> tuple[Attribution, int] | None:
        """The local attribution of the prediction of ``task``'s event by the replica before the
        step, when the stream has ``local`` on, the step is a prediction, this group runs iSAGE
        (whose reservoir is the background) and the event falls in ``local_sample_rate``; with
        the number of rows of the background (0: empty, ``x`` its own)."""
        s = self.settings.for_stream(task.stream_id)
        if not s.local or task.step == "learn":
            return None
        if s.local_sample_rate < 1 and derive_seed(s.explain_seed, "local", task.stream_id, task.seq) >= \
                s.local_sample_rate * 2 ** 63:
            return None
        se = st.explainer
        isage = next((e for e in se.explainers if isinstance(e, ISAGE)), None)
        if isage is None:
            return None
        background = isage.removal_state.reservoir.items
        memo = self._memos.setdefault(se, LeafMemo())
        target_class = s.target_class if s.local_class == "target_class" else None  # None: the predicted class
        got = attribute(se.current_model, task.x, background or [task.x], s.features, target_class=target_class,
                        max_exact=12, seed=derive_seed(s.explain_seed, "local", task.stream_id, task.seq), memo=memo)
        return got, len(background)

    def _local_message(self, task: _Task, local: tuple[Attribution, int] | None, version: int) -> list[Out]:
        """The local-explanations message of ``local`` (none without it); its ``target`` names the class."""
        if local is None:
            return []
        got, n_background = local
        s = self.settings.for_stream(task.stream_id)
        values, rest = top_k(got.values, s.local_top_k)
        stderr = {f: e for f, e in got.stderr.items() if f in values} or None
        self.metrics.inc("local_explanations_out")
        return [Out("local-explanations", task.stream_id.encode(), dumps(LocalExplanation(
            task.stream_id, task.seq, task.position, version, got.target, got.prediction, got.base, values,
            got.method, got.exact, n_background, stderr, got.n_evaluations, task.event_id,
            {f: task.x[f] for f in values}, rest, len(got.values))))]

    def _local_series(self, task: _Task, st: _GroupState,
                      local: tuple[Attribution, int] | None) -> list[ExplanationValue]:
        """With ``local_change``: the values of ``local`` folded into the group's local series, and the values of
        the report it completes (every ``emit_every`` local explanations) for the change agent."""
        s = self.settings.for_stream(task.stream_id)
        if local is None or not s.local_change:
            return []
        if st.local_series is None:
            st.local_series = LocalSeries(s.features, s.emit_every)
        st.local_series.emit_every = s.emit_every  # the stream's report cadence now, as the explainers'
        return st.local_series.add(local[0].values)


def _max_position(seq: int, step: str, max_label_delay: int) -> int:
    """The largest position the model stage can give a step of event ``seq``. A step's position is
    the stream's newest seq L plus its labels learned on their own arrival, one per earlier event
    at most (so at most L + 1): at most 2 L + 1, where L is the seq itself for a predict or both
    step, and less than ``seq + max_label_delay`` for a learn step (the event had not expired).

    >>> _max_position(10, "both", 100), _max_position(10, "learn", 100)
    (21, 219)
    """
    newest = seq if step != "learn" else seq + max_label_delay - 1
    return 2 * newest + 1


def _block(b: Block | None) -> dict[str, float] | None:
    return None if b is None else b.to_dict()


def _fault(f: InputFault) -> dict[str, Any]:
    """A fault's fields as the drift feed carries them (:data:`~streamxai.schemas.change_feed.FAULT`)."""
    return {"feature": f.feature, "what": f.what, "seq": f.seq, "start": f.start, "before": list(f.before),
            "after": list(f.after), "detail": f.detail, "like": f.like}
