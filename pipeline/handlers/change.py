"""Change path: explanation/v4 → change test per stream → change events and change episodes."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from streamxai.schemas import ChangeEpisode, ChangeEvent, InvalidMessage, SchemaMismatch, Source, dumps, unpack_feed
from streamxai.schemas.change_feed import FAULTS_SCHEMA, ROWS_V1, faults_of, feed_form, report_of
from streamxai.schemas.parsing import explanation_fields, usual_explanation, usual_report, usual_series
from streamxai.schemas.wire import decoded_or_none

from ..core.attribution.series import LOCAL
from ..core.change import Change, Episode, StreamChangeDetector, ranks
from ..core.change.events import INPUTS, KINDS, ci, loss_z
from ..core.change.inputs import InputFault
from ..core.increments import Block
from ..metrics import Metrics, profile_label
from ..settings import Settings
from .alert_line import episode_line
from .common import MessageHandler, log
from .event_seqs import EventSeqs
from .feed_bounds import FeedBounds, feed_bounds
from .out import Out
from .protocols import CheckpointStore, History

__all__ = ["ChangeHandler", "alert_key", "change_event", "change_episode"]

_Z_CAP = 1e6  # a side without variance gives an infinite z; the wire carries finite numbers
#: how many times longer than a drift-feed record a document made of it can be, besides its field
#: names: orjson writes a number in at most 4.5 times the bytes it was read from ("1e15" as
#: "1000000000000000.0") and every other token in no more bytes than it was read from
_GROWTH = 5
#: the bytes a document adds to its values: its field names and punctuation
_DOC_NAMES = 1024


@dataclass
class _StreamState:
    detector: StreamChangeDetector
    since_checkpoint: int = 0
    #: the event explained at each position a cut may still be placed at
    seqs: EventSeqs = field(default_factory=EventSeqs)
    #: ``(seq, cut_seq)`` of the changes of the episode not yet closed, by (explainer, feature, position)
    change_seqs: dict[tuple[str, str, int], tuple[int, int | None]] = field(default_factory=dict)
    #: the settings it was built under (ChangeHandler.SHAPED_BY)
    built_under: dict[str, Any] | None = None

    def update(self, p: _Point) -> tuple[list[Change], list[Episode], dict[int, tuple[int, int | None]]]:
        """Fold ``p`` into the change test, noting the event it explained at its position; the
        changes and episodes it gave, and ``(seq, cut_seq)`` of each of their changes (by ``id``):
        the events explained where it was detected and where its new regime began."""
        self.seqs.add(p.position, p.seq)
        det = self.detector
        if p.faults is not None:
            changes, episodes = det.input_faults(p.faults)
        else:
            changes, episodes = det.update(p.explainer, p.feature, p.position, p.block, p.curve, p.model_loss,
                                           p.var_factor)
        for c in changes:
            # a cut lies right after a report of the series: the regime begins with the next event
            self.change_seqs[(c.explainer, c.feature, c.seq)] = (p.seq, self.seqs.after(c.cut_seq - 1))
        told = {id(c): self.change_seqs.get((c.explainer, c.feature, c.seq), (self.seqs.at(c.seq), None))
                for c in [*changes, *(c for ep in episodes for c in ep.changes)]}
        for ep in episodes:
            if ep.status == "closed":
                for c in ep.changes:
                    self.change_seqs.pop((c.explainer, c.feature, c.seq), None)
        if len(self.seqs):  # nothing kept while positions are seqs (labels in line): nothing to forget
            oldest = det.oldest_seq()  # a look at every series' window, once a message
            if oldest is not None:
                self.seqs.forget_before(oldest)
        return changes, episodes, told


class _Point(NamedTuple):
    """The change path's view of one explanation (a tuple: made for every explanation taken)."""

    stream_id: str
    explainer: str
    feature: str
    seq: int
    position: int
    n_explained: int
    block: Block | None
    model_loss: Block | None
    curve: dict | None
    var_factor: float | None
    n_seen: Any = None  # as sent
    #: a record of what the watch of the stream's inputs found (explainer ``inputs``): its faults
    faults: tuple[InputFault, ...] | None = None


def _is_faults(raw: bytes | None) -> bool:
    """Whether ``raw`` claims to be a record of what a stream's inputs showed (checked as one)."""
    return raw is not None and FAULTS_SCHEMA.encode() in raw[:64]


def _block(block: dict[str, float] | None) -> Block | None:
    return None if block is None else Block(int(block["n"]), block["mean"], block["m2"])


def _pair(v: list) -> tuple[float, float]:
    return (math.nan if v[0] is None else float(v[0]), math.nan if v[1] is None else float(v[1]))


def _with_local(s: Settings, explainers: list[str]) -> list[str]:
    """``explainers``, and with ``s.local_change`` the series of the mean absolute local attribution
    (:data:`~streamxai.core.attribution.series.LOCAL`) after them: the explainers of a stream's
    series (``s.explainers``) or of its tested ones (``s.change_explainers``)."""
    return [*explainers, LOCAL] if s.local_change else list(explainers)


def _is_series(s: Settings, explainer: str, feature: str) -> bool:
    """Whether ``explainer``/``feature`` is a series of a stream of settings ``s`` (:func:`stream_detector`)."""
    return explainer in _with_local(s, s.explainers) and feature in s.features


def stream_detector(s: Settings) -> StreamChangeDetector:
    """The change detector of one stream under settings ``s``: a series per explainer and feature,
    and with ``local_change`` one per feature of the mean absolute local attribution
    (:data:`~streamxai.core.attribution.series.LOCAL`), tested beside the watched explainers'.

    >>> from streamxai.settings import Settings
    >>> s = Settings(features=["a", "b"], explainers=["ipfi", "isage"], change_explainers=["ipfi"])
    >>> stream_detector(s).series, stream_detector(s.replace(local=True, local_change=True)).tested
    ([('ipfi', 'a'), ('ipfi', 'b'), ('isage', 'a'), ('isage', 'b')], ['ipfi', 'local'])
    """
    explainers = _with_local(s, s.explainers)
    watched = _with_local(s, s.change_explainers)
    return StreamChangeDetector(
        [(e, f) for e in explainers for f in s.features],
        delta=s.change_delta, min_effect=s.change_min_effect, min_samples=s.change_min_samples,
        max_increments=s.change_window, warmup=s.change_warmup, episode_gap=s.change_episode_gap,
        tested=[e for e in explainers if e in watched] or None, alert_kinds=s.change_alert_kinds,
        episode_max=s.change_episode_max, fault_share=s.change_fault_share,
    )


class ChangeHandler(MessageHandler[_Point, _StreamState]):
    """One per worker; keeps one change detector per stream it owns.

    It reads ``drift-feed`` (:mod:`streamxai.schemas.change_feed`), keyed by ``stream_id``: each
    explanation of a record is taken as if it came alone (its own dead letter if bad, duplicates
    dropped), or the whole record in one pass when all pass their checks (:meth:`_take_checked`).
    Its time axis is the stream's ``position``, with the seqs of the events explained there
    (:class:`~streamxai.handlers.event_seqs.EventSeqs`). Change events go to ``drift-events``,
    episodes to ``change-episodes``.
    """

    STAGE = "change"
    DUPLICATE_METRIC = "duplicate_explanations_dropped"

    STATES_GAUGE = "change_streams"
    REPLAYED_METRIC = "replayed_explanations"
    ONE_PASS = staticmethod(unpack_feed)
    #: what stream_detector builds a stream's change test from
    SHAPED_BY = ("explainers", "features", "change_explainers", "change_delta", "change_min_effect", "change_min_samples",
                 "change_window", "change_warmup", "change_episode_gap", "change_alert_kinds", "change_episode_max",
                 "change_fault_share", "local_change")

    def __init__(self, settings: Settings, metrics: Metrics | None = None, history: History | None = None,
                 checkpoints: CheckpointStore | None = None):
        super().__init__(settings, metrics, history, checkpoints)
        self._bounds: dict[int, FeedBounds] = {}  # by id of a stream's settings (the top level's or a profile's)
        self._count_from_zero("change_events")
        for glob, s in (None, settings), *settings.profiles().items():  # every series from the start, so an
            for kind in KINDS:  # alert rule sees the first increase
                self.metrics.inc("change_episodes", 0, kind=kind, alert=_flag(kind in s.change_alert_kinds),
                                 profile=profile_label(glob))

    @property
    def streams(self) -> dict[str, _StreamState]:
        """The change detector of every stream met so far, by stream id."""
        return self.states  # type: ignore[return-value]

    def _parse(self, raw: bytes | None, where: str) -> _Point:
        """The change path's view of an explanation (parsed and checked by :mod:`streamxai.schemas.parsing`)."""
        e = explanation_fields(raw, where=where, max_bytes=self.settings.max_message_bytes)
        return _Point(e["stream_id"], e["explainer"], e["feature"], e["seq"], e["position"], e["n_explained"],
                      _block(e["block"]), _block(e["model_loss"]), e["curve"], e["var_factor"], e["n_seen"])

    def _unpack(self, raw: bytes | None, src: Source) -> list[tuple[bytes | None, Source]] | None:
        """The explanations of a drift-feed record (:func:`streamxai.schemas.unpack_feed`), each taken at its
        record's place and named by its place in the record (its dead letter says which it was)."""
        docs = unpack_feed(raw, src)
        if docs is None:
            return None
        n = len(docs)
        return [(doc, self._place(src, i, n)) for i, doc in enumerate(docs)]

    def _state_key(self, p: _Point) -> str:
        return p.stream_id

    def _opens(self, p: _Point) -> bool:
        if p.faults is not None:  # found after the inputs' reference filled: never a stream's first record
            return False
        # a stream's first report is of an event within its first emit_every; its counts cannot
        # say so (a group rebuilt after retention counts again from zero)
        return p.position < self.settings.for_stream(p.stream_id).emit_every and p.position == p.seq

    def _fresh(self, stream_id: str) -> _StreamState:
        return _StreamState(stream_detector(self.settings.for_stream(stream_id)),
                            built_under=self._built_under(stream_id))

    def _load(self, p: _Point, key: bytes | None, src: Source) -> _StreamState:
        if key is None:  # a key other than its stream_id is refused by _read (a dead letter)
            log.warning("explanation at %s has no key, not its stream_id %r: its stream's history cannot be "
                        "replayed after a restart; run every worker on the same streamxai version", src, p.stream_id)
            return self._fresh(p.stream_id)
        st = self._recover(p, key, src)
        rebuilt = self._rebuilt.get(key)
        if (self.history is not None and rebuilt is not None and rebuilt.how == "history" and not rebuilt.ok
                and p.n_explained > self.settings.for_stream(p.stream_id).emit_every):
            log.warning("change state %s: no checkpoint and nothing of the stream on %s before %s, though its explainers "
                        "have reported %d events: its change detection starts here", p.stream_id, src.topic, src,
                        p.n_explained)
        return st

    def _replay_one(self, st: _StreamState, raw: bytes | None, key: bytes | None, src: Source) -> bool:
        """Re-run one earlier explanation of the stream into its change test."""
        try:
            p = self._read(raw, key, src)  # checked as when it came
        except InvalidMessage:
            return False  # it went to the dead-letter topic the first time
        det = st.detector
        if key is None or p.faults is None and not det.knows(p.explainer, p.feature):
            return False
        if self._is_duplicate(p, st):
            return False
        st.update(p)
        return True

    def _arrived(self, n: int) -> None:
        self.metrics.inc("explanations_seen", n)  # every message, good or bad: how far the change agent has got

    def _place(self, src: Source, i: int, n: int) -> Source:
        # replace(src, part=...), without its look at the dataclass's fields
        return Source(src.topic, src.partition, src.offset, src.timestamp, src.headers, f"explanation {i + 1} of {n}")

    def _checked(self, raw: bytes | None, key: bytes | None, where: str) -> _Point:
        """The explanation ``raw`` as the change path takes it (:meth:`_read`), ``where`` its place."""
        p = self._usual(raw, key)
        if p is not None:
            return p
        p = self._parse(raw, where) if not _is_faults(raw) else self._parse_faults(raw, where)
        if key is not None and key != p.stream_id.encode():  # it would change another stream's change test
            raise SchemaMismatch(f"message key {key[:100]!r} is not the stream_id {p.stream_id!r} of its explanation; "
                                 "the explainer workers key each stream's explanations by its stream_id",
                                 where=where)
        s = self.settings.for_stream(p.stream_id)
        if p.faults is not None:
            return p
        if not _is_series(s, p.explainer, p.feature):
            raise SchemaMismatch(
                f"series {p.stream_id}/{p.explainer}/{p.feature} is not among this worker's explainers "
                f"{_with_local(s, s.explainers)} x features; every worker must run with the same settings",
                where=where)
        self._feed_bounds(s).check(p.explainer, p.n_explained, p.n_seen, p.block, p.model_loss, where=where)
        return p

    def _parse_faults(self, raw: bytes | None, where: str) -> _Point:
        """The change path's view of a drift-feed record of what a stream's inputs showed
        (:func:`streamxai.schemas.change_feed.faults_of`), checked against its stream's features."""
        obj = decoded_or_none(raw, self.settings.max_message_bytes)
        sid = obj.get("stream_id") if obj is not None else None
        obj = faults_of(raw, where, self.settings.for_stream(sid).features if type(sid) is str else [])
        faults = tuple(InputFault(f["feature"], f["what"], f["seq"], f["start"], _pair(f["before"]), _pair(f["after"]),
                                  f["detail"], f["like"]) for f in obj["faults"])
        return _Point(obj["stream_id"], INPUTS, faults[0].feature, obj["seq"], obj["position"], 0, None, None, None,
                      None, None, faults)

    def _usual(self, raw: bytes | None, key: bytes | None) -> _Point | None:
        """What :meth:`_checked` gives for ``raw`` if it is the usual explanation, as the explain
        handler writes it, in one pass; None for anything else, which the full checks take."""
        e = decoded_or_none(raw, self.settings.max_message_bytes)
        if e is None or not usual_explanation(e):
            return None
        sid = e["stream_id"]
        if key is not None and key != sid.encode():
            return None
        s = self.settings.for_stream(sid)
        g = e.get
        return self._usual_point(s, self._feed_bounds(s), sid, e["seq"], e["position"], e["explainer"], e["feature"],
                                 e["n_explained"], g("n_seen"), g("block"), g("model_loss"), g("curve"), g("var_factor"))

    def _usual_report(self, raw: bytes | None, key: bytes | None) -> list[_Point] | None:
        """What :meth:`_checked` gives for each explanation of a :data:`~streamxai.schemas.change_feed.ROWS_V1`
        record, if every one is the usual explanation (:meth:`_usual`), read without making the
        documents; None for anything else and for a record whose documents could pass
        ``max_message_bytes`` (:data:`_GROWTH`)."""
        if raw is None or _GROWTH * len(raw) + _DOC_NAMES > self.settings.max_message_bytes:
            return None
        obj = report_of(raw, self.settings.max_message_bytes)
        if obj is None:
            return None
        g = obj.get
        sid, seq, position = g("stream_id"), g("seq"), g("position")
        if not usual_report(sid, seq, position) or key is not None and key != sid.encode():
            return None
        s = self.settings.for_stream(sid)
        bounds = self._feed_bounds(s)
        points = []
        for explainer, feature, value, n_explained, n_seen, curve, _, block, loss, var_factor in obj["rows"]:
            p = (self._usual_point(s, bounds, sid, seq, position, explainer, feature, n_explained, n_seen, block, loss,
                                   curve, var_factor)
                 if usual_series(explainer, feature, value, n_explained, curve, var_factor) else None)
            if p is None:
                return None
            points.append(p)
        return points

    def _usual_point(self, s: Settings, bounds: FeedBounds, sid: str, seq: int, position: int, explainer: str,
                     feature: str, n_explained: int, n_seen: Any, raw_block: Any, raw_loss: Any, curve: dict | None,
                     var_factor: float | None) -> _Point | None:
        """The point of an explanation of stream ``sid`` whose fields passed the usual checks of
        :mod:`streamxai.schemas.parsing`, if it is a series of its stream and its blocks lie
        within the stream's bounds; None otherwise."""
        if not _is_series(s, explainer, feature):
            return None
        block = loss = None
        if raw_block is not None and (block := bounds.usual_block(explainer, raw_block, n_explained)) is None:
            return None
        if raw_loss is not None and (loss := bounds.usual_loss(raw_loss, n_seen)) is None:
            return None
        return _Point(sid, explainer, feature, seq, position, n_explained, block, loss, curve, var_factor, n_seen)

    def _feed_bounds(self, s: Settings) -> FeedBounds:
        """The bounds of the explanations of a stream of settings ``s`` (worked out once per settings)."""
        bounds = self._bounds.get(id(s))
        if bounds is None:
            bounds = self._bounds[id(s)] = feed_bounds(s)
        return bounds

    def _take_checked(self, raw: bytes | None, key: bytes | None, src: Source,
                      items: Callable[[bytes | None, Source], list[bytes] | None]
                      ) -> list[Out] | Callable[[], list[Out]] | None:
        """A drift-feed record of the form :data:`~streamxai.schemas.change_feed.ROWS_V1` is read
        in one pass without making its documents (:meth:`_usual_report`); one of another form as
        the skeleton reads it."""
        try:
            rows = feed_form(src) == ROWS_V1
        except InvalidMessage:
            return None
        if not rows:
            return super()._take_checked(raw, key, src, items)
        st = self._settled_state(key)
        if st is None:
            return None
        points = self._usual_report(raw, key)
        if not points:
            return None
        return self._take_whole(raw, key, src, st, points, [None] * len(points))  # type: ignore[arg-type,list-item]

    def _is_duplicate(self, p: _Point, st: _StreamState) -> bool:
        if p.faults is not None:
            return p.position <= st.detector.fault_seq
        return p.position <= st.detector.last_seq(p.explainer, p.feature)

    def _process(self, p: _Point, st: _StreamState, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """Fold the explanation into its series' change test; the change events and the episodes it closed."""
        m = self.metrics
        m.inc("explanations_monitored")
        changes, episodes, told = st.update(p)
        if not changes and not episodes:
            return []
        seqs_of = lambda c: told[id(c)]  # noqa: E731
        outs = []
        k = p.stream_id.encode()
        profile = self._profile(p.stream_id)
        for c in changes:
            m.inc("change_events", profile=profile)
            log.info("change in %s/%s/%s from seq %d (detected at %d): %.4g -> %.4g", p.stream_id, c.explainer,
                     c.feature, c.cut_seq, c.seq, c.before.mean, c.after.mean)
            outs.append(Out("drift-events", k, dumps(change_event(p.stream_id, c, seqs_of))))
        for ep in episodes:
            msg = change_episode(p.stream_id, ep, seqs_of, p.seq)
            if ep.first:  # the message that announces the episode's kind: count it, page on it
                m.inc("change_episodes", kind=ep.kind, alert=_flag(ep.alert), profile=profile)
                if msg.alert_key is not None:
                    m.alert(p.stream_id, msg.alert_key, ep.kind)
                log.log(logging.WARNING if ep.alert else logging.INFO, "%s", episode_line(msg))
            outs.append(Out("change-episodes", k, dumps(msg)))
        return outs


# --- core objects → wire messages ------------------------------------------------------------
def _finite(x: float, cap: float = _Z_CAP) -> float:
    return max(-cap, min(cap, x)) if not math.isnan(x) else 0.0


def _ci(m: Block) -> list[float] | None:
    lo, hi = ci(m)
    return [lo, hi] if math.isfinite(lo) and math.isfinite(hi) else None


def _flag(b: bool) -> str:
    return "true" if b else "false"


def _loss(m: Block | None) -> tuple[float | None, int]:
    return (m.mean, m.n) if m is not None and m.n else (None, 0)


def _in_line(c: Change) -> tuple[int, int | None]:
    return c.seq, c.cut_seq  # labels in line: every position is its event's seq


def alert_key(stream_id: str, first_position: int, kind: str = "") -> str:
    """The key an alerting episode pages under: its stream and the position of its first change,
    the same after any redelivery, restart or replay; a data fault's episode adds its kind.

    >>> alert_key("elec2", 19119), alert_key("elec2", 19149, "data_fault")
    ('elec2/19119', 'elec2/19149/data_fault')
    """
    return f"{stream_id}/{first_position}/{kind}" if kind == "data_fault" else f"{stream_id}/{first_position}"


def change_event(stream_id: str, c: Change, seqs_of: Callable[[Change], tuple[int, int | None]] = _in_line
                 ) -> ChangeEvent:
    """The drift_event/v3 of ``c``, whose positions ``seqs_of`` tells as the seqs of the events
    explained there (by default the same numbers: labels in line)."""
    before, after = c.explanation_before, c.explanation_after
    lb, nlb = _loss(c.loss_before)
    la, nla = _loss(c.loss_after)
    seq, cut_seq = seqs_of(c)
    return ChangeEvent(
        stream_id=stream_id, explainer=c.explainer, feature=c.feature,
        series=f"{stream_id}/{c.explainer}/{c.feature}", seq=seq, cut_seq=cut_seq,
        position=c.seq, cut_position=c.cut_seq,
        n_before=c.before.n, n_after=c.after.n, level_before=c.before.mean, level_after=c.after.mean,
        ci_before=_ci(c.before), ci_after=_ci(c.after), effect=c.effect,
        relative_effect=_finite(c.relative_effect), min_effect=c.cut.min_effect,
        z=_finite(c.cut.z), threshold=c.cut.threshold,
        explanation_before=before, explanation_after=after, rank_before=ranks(before), rank_after=ranks(after),
        curve_before=c.curve_before, curve_after=c.curve_after,
        loss_before=lb, loss_after=la, n_loss_before=nlb, n_loss_after=nla,
    )


def change_episode(stream_id: str, ep: Episode, seqs_of: Callable[[Change], tuple[int, int | None]] = _in_line,
                   closed_seq: int | None = None) -> ChangeEpisode:
    """The change_episode/v4 of ``ep``; ``seqs_of`` as in :func:`change_event`, ``closed_seq``
    the event explained where it closed (by default its position)."""
    explanations: dict[str, dict[str, dict[str, Any]]] = {}
    for e, vec in ep.explanations.items():
        rb = ranks({f: v[0] for f, v in vec.items()})
        ra = ranks({f: v[1] for f, v in vec.items()})
        explanations[e] = {f: {"before": b, "after": a, "rank_before": rb[f], "rank_after": ra[f]}
                           for f, (b, a) in vec.items()}
    lb, nlb = _loss(ep.loss_before)
    la, nla = _loss(ep.loss_after)
    z = loss_z(ep.loss_before, ep.loss_after)
    seqs = {id(c): seqs_of(c) for c in ep.changes}
    by_position = {c.seq: seqs[id(c)][0] for c in ep.changes}
    top = ep.changes[0]  # ranked: the episode is split at its cut
    if closed_seq is None:
        closed_seq = ep.closed_seq
    return ChangeEpisode(
        stream_id=stream_id, status=ep.status, first_seq=by_position[ep.first_seq], last_seq=by_position[ep.last_seq],
        closed_seq=closed_seq if ep.closed_seq is not None else None, cut_seq=seqs[id(top)][1],
        kind=ep.kind, alert=ep.alert,
        changes=[{"explainer": c.explainer, "feature": c.feature, "seq": seqs[id(c)][0], "cut_seq": seqs[id(c)][1],
                  "position": c.seq, "cut_position": c.cut_seq,
                  "level_before": c.before.mean, "level_after": c.after.mean, "effect": c.effect,
                  "relative_effect": _finite(c.relative_effect)} for c in ep.changes],
        explanations=explanations,
        curves={f: {"before": b, "after": a} for f, (b, a) in ep.curves.items()},
        loss_before=lb, loss_after=la, n_loss_before=nlb, n_loss_after=nla,
        loss_ci_before=_ci(ep.loss_before) if nlb > 1 else None, loss_ci_after=_ci(ep.loss_after) if nla > 1 else None,
        loss_z=None if z is None else _finite(z),
        first_position=ep.first_seq, last_position=ep.last_seq, closed_position=ep.closed_seq, cut_position=ep.cut_seq,
        alert_key=alert_key(stream_id, ep.first_seq, ep.kind) if ep.alert else None,
        faults=[_fault(c) for c in ep.changes if c.fault is not None] or None,
    )


def _fault(c: Change) -> dict[str, Any]:
    """What a data fault's change says of the feature's values (:class:`~streamxai.core.change.inputs.InputFault`)."""
    f = c.fault
    (m0, q0), (m1, q1) = f.before, f.after
    return {"feature": f.feature, "what": f.what, "detail": f.detail, "like": f.like, "start_position": f.start,
            "median_before": _or_null(m0), "iqr_before": _or_null(q0), "median_after": _or_null(m1),
            "iqr_after": _or_null(q1), "reliance": None if c.reliance is None else _finite(c.reliance)}


def _or_null(x: float) -> float | None:
    return x if math.isfinite(x) else None
