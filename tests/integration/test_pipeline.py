"""The whole pipeline on a real broker: worker processes, seeded streams, exact values; a uuid prefix and group each."""

from __future__ import annotations

import base64
import signal

import orjson
import pytest
from helpers.pipeline_runs import (
    collect,
    committed,
    explanation_values,
    make_settings,
    reference_values,
    until,
    wait_for_commit,
    wait_for_members,
    worker_metrics,
)
from helpers.streams import threshold_events
from streamxai.handlers.model import _plain
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events, produce_raw
from streamxai.local.demo_stream import agrawal_events
from streamxai.local.ports import free_port
from streamxai.plan import prequential_model, stream_explainer
from streamxai.schemas import dumps
from streamxai.settings import Secret
from streamxai.worker import spawn_worker, stop_worker


def n_values_per_event(s):
    d = len(s.features)
    return sum(d for _ in s.explainers)


@pytest.fixture
def run_workers(tmp_path):
    procs = []

    def start(s, n=1):
        started = []
        for i in range(n):
            ws = s.replace(web_port=free_port()) if i else s
            k = len(procs)
            procs.append((spawn_worker(ws, log_file=str(tmp_path / f"worker-{k}.log"), loglevel="warning"), ws))
            started.append(ws)
        start.procs = [p for p, _ in procs]
        return started

    yield start
    for p, _ in procs:
        stop_worker(p)
    for i in range(len(procs)):
        log = (tmp_path / f"worker-{i}.log").read_text(errors="replace")
        assert "Traceback" not in log, f"worker {i} logged a traceback:\n{log[-3000:]}"


def test_pipeline_values_equal_in_process_core(bootstrap, tmp_path, run_workers):
    s = make_settings(bootstrap, str(tmp_path / "state"))
    events = list(agrawal_events("exact", 400, seed=5))
    # the reference calls the model (fast_path = off); the worker evaluates it from its internals
    expected = reference_values(s.replace(fast_path="off"), events)
    ensure_topics(s)
    run_workers(s)
    produce_events(s, events)
    msgs = collect(s, "explanations", lambda ms: len(ms) >= len(expected))
    got = explanation_values(msgs)
    assert len(expected) == (400 // s.emit_every) * n_values_per_event(s)
    assert got == expected  # exact: same model versions, same seeds, any grouping, either evaluation
    # and none twice: the read stopped at len(expected) messages, so count what is on the topic
    # once the explainers have committed every task (their outputs are then all sent)
    wait_for_commit(s, ["explain-tasks"])
    assert committed(s, "explanations")[1] == len(expected)
    gauges = worker_metrics(s)["gauges"]
    assert gauges["fast_path{stream=exact}"] == 1
    # its start-up heap out of the collector's passes, which would otherwise walk it all; a
    # worker holds over a hundred thousand objects once up
    assert gauges["gc_frozen_objects"] > 50_000, gauges
    assert all(m["n_seen"] == m["seq"] + 1 and 0 < m["n_explained"] <= m["n_seen"] for m in msgs)
    assert all(m["model_version"] == m["seq"] for m in msgs)
    preds = collect(s, "predictions", lambda ps: len(ps) >= 400, timeout=30)
    assert sorted(p["seq"] for p in preds) == list(range(400))


def test_two_workers_split_groups_and_give_the_same_values(bootstrap, tmp_path, run_workers):
    s = make_settings(bootstrap, str(tmp_path / "state"), explain_groups=4)
    events = list(agrawal_events("split", 300, seed=6))
    expected = reference_values(s, events)
    ensure_topics(s)
    w1, w2 = run_workers(s, n=2)
    wait_for_members(s, 2)  # both in the group before data arrives, so the first assignment is split
    produce_events(s, events)
    msgs = collect(s, "explanations", lambda ms: len(explanation_values(ms)) >= len(expected))
    # at-least-once: a rebalance may re-deliver a few tasks; consumers dedupe by (stream, seq)
    assert explanation_values(msgs) == expected
    seen = [worker_metrics(w)["counters"].get("tasks_seen", 0) for w in (w1, w2)]
    # 4 groups on 4 consecutive partitions, 2 workers with 2 partitions each: both explain
    assert all(n > 0 for n in seen), f"explain tasks per worker: {seen}"
    assert sum(seen) >= 4 * 300


def test_bad_messages_become_dead_letters_and_good_ones_flow(bootstrap, tmp_path, run_workers):
    s = make_settings(bootstrap, str(tmp_path / "state"), max_message_bytes=4096, explainers=["ipfi"])
    good = list(agrawal_events("dl", 40, seed=7))
    x0 = dict(good[0].x)
    ev = lambda **o: orjson.dumps({"schema": "feature_event/v1", "stream_id": "dl", "seq": 1000, "ts": 0.0,  # noqa: E731
                                   "x": x0, "y": 1, **o})
    bad = [
        (b"dl", b"this is not json", "malformed"),
        (b"dl", ev(schema="feature_event/v9"), "schema"),
        (b"dl", ev(x={k: v for k, v in x0.items() if k != "age"}), "features"),
        (b"dl", ev(x={**x0, "colour": 1.0}), "features"),
        (b"dl", ev(x={**x0, "age": "old"}), "bad_value"),
        (b"dl", ev().replace(b'"age":' + orjson.dumps(x0["age"]), b'"age":NaN'), "malformed"),
        (b"dl", ev(x={**x0, "zipcode": "x" * 5000}), "oversized"),
        (b"other-key", ev(), "schema"),
    ]
    ensure_topics(s)
    run_workers(s)
    items = []
    for i, e in enumerate(good):
        items.append((b"dl", dumps(e)))
        if i < len(bad):
            items.append(bad[i][:2])
    produce_raw(s, s.topic("features"), items)
    dls = collect(s, "dead-letters", lambda d: len(d) >= len(bad), timeout=120)
    assert sorted(d["reason"] for d in dls) == sorted(r for _, _, r in bad)
    originals = {base64.b64decode(d["original"]) for d in dls}
    assert originals == {raw for _, raw, _ in bad}
    for d in dls:
        assert d["source"]["topic"] == s.topic("features") and d["source"]["offset"] >= 0
        assert d["stage"] == "model" and d["error"]
    preds = collect(s, "predictions", lambda p: len(p) >= len(good), timeout=60)
    assert sorted(p["seq"] for p in preds) == list(range(len(good)))  # the worker kept going
    counters = worker_metrics(s)["counters"]
    assert counters["dead_letters{reason=malformed}"] == counters["dead_letters{profile=(top level),reason=malformed}"] == 2


def reference_changes(s, events):
    """The in-process core: StreamExplainer + the change agent's detector, per stream.
    Returns ({(stream, seq, explainer, feature): (cut, before, after)}, [(stream, first_seq, cut, features)])."""
    from streamxai.core.losses import get_loss
    from streamxai.core.model import ModelFunction
    from streamxai.handlers.change import stream_detector

    changes, episodes, state = {}, [], {}
    for ev in events:
        if ev.stream_id not in state:
            se = stream_explainer(s, ev.stream_id)
            state[ev.stream_id] = (se, ModelFunction(se.current_model, output=s.output), stream_detector(s))
        se, fn, det = state[ev.stream_id]
        loss = float(get_loss(s.loss)(ev.y, fn(ev.x)))
        report = (se.n_seen + 1) % s.emit_every == 0  # as the explain handler: blocks span emit_every events
        values = se.process_one(ev.x, ev.y, report=report, loss=loss)
        if not report:
            continue
        for v in values:
            chs, eps = det.update(v.explainer, v.feature, ev.seq, v.block, v.curve, v.model_loss, v.var_factor)
            for c in chs:
                changes[(ev.stream_id, c.seq, c.explainer, c.feature)] = (c.cut_seq, c.before.mean, c.after.mean)
            episodes += [(ev.stream_id, e.first_seq, e.cut_seq, sorted({c.feature for c in e.changes})) for e in eps]
    return changes, episodes


def test_change_episodes_name_the_drifted_features_and_none_before_the_first_drift(bootstrap, tmp_path, run_workers):
    # A stream the model learns within a few hundred events (label = a > 0.5, then b > 0.5, then
    # b and c swapped), and two stationary controls. Settings scaled to the short stream: the
    # warm-up and the episode gap are a few hundred events instead of a thousand.
    n, drift_at, swap_at = 3000, 1000, 2000
    s = make_settings(bootstrap, str(tmp_path / "state"), features=["a", "b", "c"], explainers=["ipfi"],
                      model="river.tree.HoeffdingAdaptiveTreeClassifier", model_params={"grace_period": 20},
                      emit_every=10, explain_groups=1, alpha=0.01, change_warmup=300, change_episode_gap=300)
    demo = list(threshold_events("drifting", n, drift_at=drift_at, swap_at=swap_at, seed=11))
    controls = [list(threshold_events(f"control{i}", n, seed=12 + i)) for i in range(2)]
    events = [e for group in zip(demo, *controls, strict=True) for e in group]
    want_changes, want_episodes = reference_changes(s, events)
    ensure_topics(s)
    run_workers(s)
    produce_events(s, events)
    expected = 3 * (n // s.emit_every) * len(s.features)
    collect(s, "explanations", lambda ms: len(explanation_values(ms)) >= expected)
    wait_for_commit(s, ["drift-feed"])  # the change agent took every explanation and flushed its outputs
    changes = collect(s, "drift-events", lambda ms: len(ms) >= len(want_changes), timeout=30)
    episodes = collect(s, "change-episodes", lambda ms: len(ms) >= len(want_episodes), timeout=10)
    # the Kafka run equals the in-process run, change for change
    got = {(c["stream_id"], c["seq"], c["explainer"], c["feature"]): (c["cut_seq"], c["level_before"], c["level_after"])
           for c in changes}
    assert got == want_changes
    assert sorted((e["stream_id"], e["first_seq"], e["cut_seq"], sorted({c["feature"] for c in e["changes"]}))
                  for e in episodes) == sorted(want_episodes)
    assert [e for e in episodes if e["stream_id"] != "drifting"] == [], "false alarms on the stationary controls"
    demo_eps = sorted((e for e in episodes if e["stream_id"] == "drifting"), key=lambda e: e["first_seq"])
    assert all(e["cut_seq"] >= drift_at - 50 and e["first_seq"] >= drift_at for e in demo_eps), demo_eps
    # the concept switch moves the importance from a to b; the swap moves b's to c: an episode
    # within 1000 events of each names exactly those features, and its levels differ visibly
    for at, names in ((drift_at, {"a", "b"}), (swap_at, {"b", "c"})):
        near = [e for e in demo_eps if at <= e["first_seq"] < at + 1000]
        assert near, (at, demo_eps)
        # the explanation's changes (the model's loss, "model/loss", may rise at either)
        named = {c["feature"] for e in near for c in e["changes"] if c["explainer"] != "model"}
        assert named <= names and named, (at, named)
        for c in near[0]["changes"]:
            assert abs(c["level_after"] - c["level_before"]) >= 0.1 * (c["level_before"] if c["explainer"] == "model"
                                                                        else 1.0), c


@pytest.mark.parametrize("checkpoint_every, store", [(0, "local"), (100, "local"), (100, "kafka")],
                         ids=["full-replay", "checkpoint+replay", "kafka-checkpoint+replay-on-another-host"])
def test_sigkilled_worker_resumes_without_losing_or_double_counting(bootstrap, tmp_path, run_workers,
                                                                     checkpoint_every, store):
    s = make_settings(bootstrap, str(tmp_path / "state"), explain_groups=2, checkpoint_every=checkpoint_every,
                      checkpoint_store=store, checkpoint_key=Secret("k" * 32) if store == "kafka" else Secret(""))
    events = list(agrawal_events("crash", 600, seed=8))
    expected = reference_values(s, events)
    model = prequential_model(s)
    expected_preds = {ev.seq: _plain(model.process_one(ev.x, ev.y)[0]) for ev in events}
    ensure_topics(s)
    run_workers(s)
    produce_events(s, events[:300])
    collect(s, "explanations", lambda ms: any(m["seq"] >= 299 - s.emit_every for m in ms))
    # the first 300 events are committed by every stage, in the order they pass them on
    wait_for_commit(s, ["features", "arrivals", "explain-tasks", "drift-feed"])
    produce_events(s, events[300:400])
    collect(s, "explanations", lambda ms: any(m["seq"] >= 330 for m in ms))
    victim = run_workers.procs[0]
    victim.send_signal(signal.SIGKILL)  # mid-stream: no shutdown, no final commit
    victim.wait(10)
    produce_events(s, events[400:])
    # with checkpoints on Kafka the worker may come back on another host: no local state at all
    other_host = str(tmp_path / "other-host") if store == "kafka" else s.state_dir
    (restarted,) = run_workers(s.replace(web_port=free_port(), state_dir=other_host))
    msgs = collect(s, "explanations", lambda ms: len(explanation_values(ms)) >= len(expected))
    got = explanation_values(msgs)
    assert got == expected  # rebuilt state: every value after the restart is exact
    preds = collect(s, "predictions", lambda ps: {p["seq"] for p in ps} >= set(range(600)), timeout=60)
    by_seq = {p["seq"]: p["y_pred"] for p in preds}
    assert by_seq == expected_preds  # the model neither lost nor re-learned an event
    # the restarted worker re-learned what it lost: its predictions for re-delivered events repeat
    # the first run's (duplicates carry equal values; consumers dedupe by (stream_id, seq))
    for p in preds:
        assert p["y_pred"] == expected_preds[p["seq"]]
    # the change agent rebuilt its series from its checkpoint and the explanations after it, or from all of
    # them: its newest checkpoint may sit at the record the worker resumes after (nothing to replay), or the
    # two a key keeps may both be past the feed's last commit (test_a_change_state_restarted_after_two_
    # checkpoints_past_the_commit_is_exact): one of them is seen (a restart that rebuilt nothing shows neither)
    def change_rebuilt() -> dict | None:
        counters = worker_metrics(restarted)["counters"]
        return counters if counters.get("checkpoints_restored{stage=change}", 0) + counters.get(
            "replayed_explanations", 0) > 0 else None

    counters = until(change_rebuilt, 60, "the change agent to rebuild its state (it trails the explainers)")
    if checkpoint_every:
        # the model's and both groups' newest checkpoints before the first wait are before the
        # commit (the 100 events after it make at most one more of each: checkpoint_every=100 of
        # its messages, one event or task each), so each of those states restores one
        assert counters.get("checkpoints_restored{stage=model}", 0) >= 1, counters
        assert counters.get("checkpoints_restored{stage=explain}", 0) >= 2, counters
        # only the tail after each restored checkpoint was replayed, not the whole history
        assert counters.get("replayed_tasks", 0) < 2 * 250, counters
    else:
        assert counters.get("replayed_tasks", 0) >= 2 * 250 and "checkpoints_restored" not in counters, counters
        assert counters.get("replayed_explanations", 0) > 0, counters
