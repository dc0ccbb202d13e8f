"""Change events and episodes carry the stream's positions and the explained events' seqs (one with labels inline)."""

from __future__ import annotations

import pytest
from helpers.arrivals import record_arrivals, run_handlers
from helpers.handler_inputs import delayed_settings
from helpers.partition_log import PartitionLog
from helpers.streams import threshold_events
from streamxai.local.dashboard.state import DashboardState
from streamxai.local.demo_stream import labels_later


def _run(delay: int):
    events = threshold_events("a", 400, drift_at=200, seed=1)
    log = PartitionLog()
    record_arrivals(log, labels_later(events, delay) if delay else list(events))
    return run_handlers(delayed_settings(), log)


def _reports(run) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """Each series' explanation messages as ``(position, seq)``, in order."""
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for m in run.of("explanations"):
        out.setdefault((m["explainer"], m["feature"]), []).append((m["position"], m["seq"]))
    return out


@pytest.mark.slow
def test_with_labels_later_change_events_carry_positions_and_the_seqs_of_the_events_explained():
    run = _run(delay=12)
    events, episodes, reports = run.of("drift-events"), run.of("change-episodes"), _reports(run)
    assert events and episodes
    assert {m["schema"] for m in events} == {"drift_event/v3"}
    assert {m["schema"] for m in episodes} == {"change_episode/v4"}
    assert any(m["seq"] != m["position"] for m in events)  # the seq, not the position sent as seq
    every_report = sorted({r for rs in reports.values() for r in rs})
    for m in events:  # the model's loss (LOSS) is tested at every report of the stream
        series = reports.get((m["explainer"], m["feature"]), every_report)
        assert (m["position"], m["seq"]) in series  # detected at the report that crossed the threshold
        before = [seq for pos, seq in series if pos < m["cut_position"]]
        assert m["cut_position"] <= m["position"] and m["cut_seq"] == before[-1] + 1  # the event after the last before the cut
    by_change = {(m["explainer"], m["feature"], m["position"]): m for m in events}
    for ep in episodes:
        changes = ep["changes"]
        for c in changes:
            sent = by_change[(c["explainer"], c["feature"], c["position"])]
            assert (c["seq"], c["cut_seq"], c["cut_position"]) == (sent["seq"], sent["cut_seq"], sent["cut_position"])
        first = min(changes, key=lambda c: c["position"])
        assert (ep["first_position"], ep["first_seq"]) == (first["position"], first["seq"])
        assert ep["cut_position"] == changes[0]["cut_position"] and ep["cut_seq"] == changes[0]["cut_seq"]
        if ep["status"] == "closed":
            assert ep["closed_position"] > ep["last_position"] and ep["closed_seq"] is not None


def test_with_labels_in_line_positions_are_the_seqs():
    run = _run(delay=0)
    events, episodes = run.of("drift-events"), run.of("change-episodes")
    assert events and episodes
    for m in events:
        assert (m["seq"], m["cut_seq"]) == (m["position"], m["cut_position"])
    for ep in episodes:
        assert (ep["first_seq"], ep["last_seq"], ep["cut_seq"]) == (
            ep["first_position"], ep["last_position"], ep["cut_position"])
        assert ep["closed_seq"] == ep["closed_position"]


def _sent():
    """One change and one episode of a stream whose labels come later, as the change stage sends
    them, and the predictions of the stream."""
    preds = [{"schema": "prediction/v2", "stream_id": "s", "seq": q, "position": 2 * q, "y_true": None,
              "y_pred": 0, "loss": None, "model_version": q, "ts": 0.0} for q in range(0, 600)]
    outcome = {"schema": "label_outcome/v1", "stream_id": "s", "seq": 0, "position": 1, "outcome": "learned",
               "loss": 0.0, "delay_events": 1, "delay_s": 0.1, "waiting": 1, "ts": 0.0}
    level = {"explainer": "ipfi", "feature": "a", "level_before": 0.1, "level_after": 0.4}
    change = {"schema": "drift_event/v3", "stream_id": "s", **level, "position": 1000, "cut_position": 900,
              "seq": 480, "cut_seq": 431}
    episode = {"schema": "change_episode/v4", "stream_id": "s", "status": "closed", "kind": "degradation",
               "alert": True, "first_position": 1000, "last_position": 1000, "closed_position": 1200,
               "cut_position": 900, "first_seq": 480, "last_seq": 480, "closed_seq": 598, "cut_seq": 431,
               "changes": [{**level, "seq": 480, "cut_seq": 431, "position": 1000, "cut_position": 900}]}
    return preds, outcome, change, episode


def test_the_views_place_changes_at_positions_and_show_the_seqs_they_carry():
    preds, outcome, v3, ep3 = _sent()
    state = DashboardState()
    for p in [*preds, outcome]:
        state.add("predictions", p)
    state.add("drift-events", v3)
    state.add("change-episodes", ep3)
    view = state.stream_view("s")
    (c,) = view["changes"]
    assert (c["position"], c["cut_position"], c["seq"], c["cut_seq"]) == (1000, 900, 480, 431)
    (ep,) = view["episodes"]
    assert (ep["cut_position"], ep["first_position"], ep["last_position"], ep["cut_seq"], ep["first_seq"]) == (
        900, 1000, 1000, 431, 480)


def test_the_seqs_kept_for_cuts_are_forgotten_as_the_windows_move_on():
    """With labels later a position's seq is kept only while a cut may fall there; inline, nothing is kept."""
    import random

    from streamxai.core.increments import Block
    from streamxai.handlers.change import _Point, _StreamState, stream_detector

    s = delayed_settings(change_window=80, change_min_samples=30)
    gen = random.Random(2)
    for lag in (0, 3):
        state = _StreamState(stream_detector(s))
        longest = 0
        for r in range(1, 301):  # a report every 5 positions; with labels later the seq lags
            position = 5 * r
            for e in s.explainers:
                for f in s.features:
                    block = Block(5, gen.gauss(0.0, 1.0), 4.0 * gen.random())
                    state.update(_Point("a", e, f, position - lag, position, r * 5, block, None, None, None))
            longest = max(longest, len(state.seqs))
            oldest = state.detector.oldest_seq()
            assert not len(state.seqs) or state.seqs.positions[0] >= oldest  # nothing older than any window
        if lag:
            assert 10 <= longest <= 2 * 80 // 5 + 2  # bounded by the windows (80 explained events, 5 a report)
        else:
            assert longest == 0
