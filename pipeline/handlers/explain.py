"""Explainer path: one deterministic model replica per (stream, group), explained then taught.

Each explain task carries one event for one group of explainer work units. The group's
replica explains the event with the model as it was when the event arrived (it has
learned exactly the events before it), then learns it. While tasks wait longer than
``max_lag_s``, each group explains only one event in a stride that grows with the wait (the
same share for every stream, :class:`~pipeline.core.budget.LagShedder`); the others are
observed but not explained, and the counts are in every explanation message
(``n_explained`` vs ``n_seen``) and in the metrics.

A lag decision depends on the clock, so it is made once and recorded: with ``max_lag_s`` on,
each decision goes to the explain-decisions topic (same partition as the task, keyed like
it). A group rebuilt by replay reads its recorded decisions and applies them, to the replayed
tasks and to the tasks it processes again after a restart, so it reproduces the original run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from schemas import ExplainDecision, ExplainTask, Explanation, InvalidMessage, decode, dumps, parse_explain_task

from ..core.budget import LagShedder
from ..core.increments import Block
from ..core.stream import StreamExplainer
from ..metrics import Metrics
from ..plan import stream_explainer
from ..settings import Settings
from .common import MessageHandler, Out, Rejected, Source, log
from .protocols import CheckpointStore, History

__all__ = ["ExplainHandler"]



@dataclass
class _GroupState:
    explainer: StreamExplainer
    last_seq: int = -1
    n_explained: int = 0
    since_checkpoint: int = 0
    #: explain-eligible tasks shed since the group last explained one (the fair stride's count)
    skipped: int = 0
    #: decisions recorded by an earlier run for tasks not yet processed again (seq -> explain)
    recorded: dict[int, bool] = field(default_factory=dict)


class ExplainHandler(MessageHandler[ExplainTask, _GroupState]):
    """One per worker; keeps one stream explainer per (stream, explainer group) it owns."""

    STAGE = "explain"
    DUPLICATE_METRIC = "duplicate_tasks_dropped"

    def __init__(
        self, settings: Settings, metrics: Metrics | None = None, clock: Callable[[], float] = time.time,
        history: History | None = None, checkpoints: CheckpointStore | None = None,
    ):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.clock = clock
        #: ``history(topic, partition, before_offset, key, from_offset)`` → earlier values (pipeline.kafka.replay)
        self.history = history
        #: a :class:`pipeline.handlers.protocols.CheckpointStore` (``pipeline.kafka``: files or a topic), or None
        self.checkpoints = checkpoints
        self.shedder = LagShedder(settings.max_lag_s or None)
        self.groups: dict[tuple[str, int], _GroupState] = {}
        self._decisions: dict[int, bool] = {}  # recorded decisions of the group being rebuilt
        #: decisions an earlier run recorded, by explain-tasks partition and group key
        self._recorded: dict[int, dict[bytes | None, dict[int, bool]]] = {}
        self.started = clock()

    def _parse(self, raw: bytes | None, src: Source) -> ExplainTask:
        return parse_explain_task(raw, where=str(src), groups=self.settings.explain_groups,
                                  max_bytes=10 * self.settings.max_message_bytes)

    def _state_for(self, task: ExplainTask, key: bytes | None, src: Source) -> _GroupState:
        first = task.seq == 0
        # a stream's first task sent before this handler started may have been processed
        # (and its decision recorded) by the run before a restart
        maybe_seen = not first or task.sent_at <= self.started
        self._decisions = self._recorded_decisions(key, src.partition) if maybe_seen else {}
        st = self._recover("explain", key, src, lambda: _GroupState(
            stream_explainer(self.settings.for_stream(task.stream_id), task.stream_id, task.group)), first=first)
        st.recorded = {q: d for q, d in self._decisions.items() if q > st.last_seq}
        self._decisions = {}
        return st

    def _recorded_decisions(self, key: bytes | None, partition: int | None) -> dict[int, bool]:
        """The decisions recorded for the group ``key`` (seq -> explain) before this handler
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
                    by_key.setdefault(k, {})[int(d["seq"])] = bool(d["explain"])
                except (InvalidMessage, KeyError, TypeError, ValueError):
                    continue
            self._recorded[partition] = by_key
        return self._recorded[partition].pop(key, {})

    def _decide(self, st: _GroupState, task: ExplainTask, waited: float) -> bool:
        if task.seq in st.recorded:  # processed before a restart: the decision made then
            return st.recorded.pop(task.seq)
        return task.explain and not self.shedder.shed(waited, st.skipped)

    def _rebuild(self, st: _GroupState, key: bytes | None, src: Source, from_offset: int) -> None:
        """Re-run the group's tasks of this partition from ``from_offset`` to just before ``src``."""
        n = 0
        for raw in self.history(src.topic, src.partition, src.offset, key, from_offset):
            try:
                task = self._parse(raw, src)
            except InvalidMessage:
                continue  # it went to the dead-letter topic the first time
            if task.seq <= st.last_seq:
                continue
            explain = self._decisions.get(task.seq, task.explain)
            try:
                st.explainer.process_one(task.x, task.y, explain=explain, report=False, loss=task.loss)
            except Exception:
                self.metrics.inc("replay_errors")
                log.warning("task %s seq %d fails again in replay; the group continues without it", key, task.seq)
                continue
            st.last_seq = task.seq
            st.skipped = 0 if explain else st.skipped + int(task.explain)
            if explain:
                st.n_explained += 1
                if st.n_explained % self.settings.for_stream(task.stream_id).emit_every == 0:
                    st.explainer.skip_report()  # the original run reported here: same blocks after it
            n += 1
        self.metrics.inc("replayed_tasks", n)
        log.info("rebuilt %s from %d earlier tasks of %s", key, n, src)

    def _drop_state(self, key: bytes) -> None:
        stream_id, _, group = key.decode(errors="replace").rpartition("/")
        if group.isdigit():
            self.groups.pop((stream_id, int(group)), None)

    def _read(self, raw: bytes | None, key: bytes | None, src: Source) -> ExplainTask:
        return self._parse(raw, src)

    def _state(self, task: ExplainTask, key: bytes | None, src: Source) -> _GroupState:
        gk = (task.stream_id, task.group)
        st = self.groups.get(gk)
        if st is None:
            st = self.groups[gk] = self._state_for(task, key, src)
            self.metrics.gauge("explainer_groups", len(self.groups))
        return st

    def _is_duplicate(self, task: ExplainTask, st: _GroupState) -> bool:
        return task.seq <= st.last_seq

    def _process(self, task: ExplainTask, st: _GroupState, raw: bytes | None, key: bytes | None,
                 src: Source) -> list[Out]:
        """Explain (or shed) the task's event, let the replica learn it; the explanations every
        ``emit_every`` explained events, and the decision when lag shedding is on."""
        m = self.metrics
        waited = self.clock() - task.sent_at
        m.gauge("explanation_lag_seconds", waited)
        explain = self._decide(st, task, waited)
        if task.explain and not explain:
            m.inc("shed_events")
        se = st.explainer
        version = se.model_version
        emit = explain and (st.n_explained + 1) % self.settings.for_stream(task.stream_id).emit_every == 0
        try:
            values = se.process_one(task.x, task.y, explain=explain, report=emit, loss=task.loss)
        except Exception as e:
            # the replica may be half-updated: forget it, so the next task rebuilds it by replay
            del self.groups[(task.stream_id, task.group)]
            raise Rejected(self._dead_letter(raw, key, e, src, "explain_error")) from None
        st.last_seq = task.seq
        st.n_explained += int(explain)
        st.skipped = 0 if explain else st.skipped + int(task.explain)
        m.inc("tasks_seen")
        outs = []
        if task.explain and self.shedder.max_lag_s is not None:
            outs.append(Out("explain-decisions", key, dumps(ExplainDecision(
                task.stream_id, task.group, task.seq, explain)), src.partition))
        if not explain:
            return outs
        m.inc("events_explained")
        if not emit:
            return outs
        for v in values:
            msg = Explanation(task.stream_id, v.explainer, v.feature, v.value, task.seq,
                              v.n_explained, se.n_seen, version, v.curve, v.stderr,
                              _block(v.block), _block(v.model_loss), v.var_factor)
            # keyed by stream: the drift agent sees every series of a stream, in order, on one partition
            outs.append(Out("explanations", task.stream_id.encode(), dumps(msg)))
        m.inc("explanations_out", len(outs))
        return outs


def _block(b: Block | None) -> dict[str, float] | None:
    return None if b is None else b.to_dict()
