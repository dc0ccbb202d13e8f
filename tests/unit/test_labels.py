"""Late labels through the handlers without Kafka: exactly the reference's outputs for a recorded order of
arrivals, also across restarts; every label accounted for; bounded memory."""

from __future__ import annotations

import orjson
import pytest
from helpers.arrivals import Run, record_arrivals, redeliver, run_handlers
from helpers.handler_inputs import delayed_settings
from helpers.partition_log import PartitionLog
from helpers.streams import threshold_events
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.local.demo_stream import labels_later
from streamxai.reference import run_in_process
from streamxai.schemas import FeatureEvent, Source, unpack_tasks


def two_streams(delay=12, n=400):
    """Streams a (its label moves from a to b at n / 2) and b interleaved, labels ``delay`` (a)
    and ``delay / 2`` (b) events late; a few labels never come, two come before their event."""
    a = labels_later(threshold_events("a", n, drift_at=n // 2, seed=1), delay, unlabelled={7, 70, 71},
                     early={20, 90})
    b = labels_later(threshold_events("b", n, seed=2), delay // 2, unlabelled={3})
    out = []
    for i in range(max(len(a), len(b))):
        out += a[i:i + 1] + b[i:i + 1]
    return out



@pytest.mark.slow
def test_the_in_process_reference_runs_each_stream_under_its_profile():
    # the reference builds each stream from its own profile, not from the top-level settings
    s = delayed_settings(features=[], change_warmup=0, streams={
        "p-*": {"features": ["a", "b", "c"], "explainers": ["ipfi", "ipdp"], "grid_size": 4, "sample_rate": 0.5,
                "change_explainers": ["ipfi"]},
        "q-*": {"features": ["a", "b", "c"], "explainers": ["ipfi", "isage"], "alpha": 0.02, "emit_every": 7,
                "model": "river.linear_model.LogisticRegression", "model_params": {}, "max_label_delay": 60},
    })
    p = labels_later(threshold_events("p-1", 300, drift_at=150, seed=1), 10)
    q = labels_later(threshold_events("q-1", 300, seed=2), 20)
    log = PartitionLog()
    recorded = record_arrivals(log, [m for pair in zip(p, q, strict=True) for m in pair])
    run = run_handlers(s, log)
    ref = run_in_process(s, recorded)
    assert run.predictions() == ref.predictions and len(ref.predictions) == 600
    got = run.explanation_values()
    assert got == ref.explanations
    assert {(sid, e) for sid, _, e, _ in got} == {("p-1", "ipfi"), ("p-1", "ipdp"), ("q-1", "ipfi"), ("q-1", "isage")}
    assert run.changes() == ref.changes


@pytest.mark.slow
@pytest.mark.parametrize("groups", [1, 3])
def test_delayed_labels_through_the_handlers_equal_the_in_process_reference(groups):
    s = delayed_settings(explain_groups=groups)
    log = PartitionLog()
    recorded = record_arrivals(log, two_streams())
    run = run_handlers(s, log)
    ref = run_in_process(s, recorded)
    assert run.predictions() == ref.predictions and len(ref.predictions) == 800
    got = run.explanation_values()
    assert got == ref.explanations and {e for _, _, e, _ in got} == {"ipfi", "isage", "ipdp"}
    outcomes = {(m["stream_id"], m["seq"]): (m["outcome"], m["loss"]) for m in run.of("predictions", "label_outcome/v1")}
    assert outcomes == {k: (o.outcome, o.loss) for k, o in ref.outcomes.items()}
    if groups == 1:  # several groups: the change agent may take a report's messages in another order
        assert run.changes() == ref.changes and {sid for sid, *_ in ref.changes} == {"a"}
    # every step's position is unique per stream and grows in the record's order
    for sid in ("a", "b"):
        positions = [m["position"] for m in run.of("predictions", "prediction/v2") if m["stream_id"] == sid]
        assert positions == sorted(set(positions))


def test_labels_in_line_keep_seq_as_position_and_the_values_of_before():
    """A stream whose events carry their labels: positions are the seqs, one task per event
    (step both), and the values are those of StreamExplainer.process_one."""
    s = delayed_settings(explain_groups=2)
    events = list(threshold_events("inline", 120, seed=3))
    log = PartitionLog()
    record_arrivals(log, events)
    run = run_handlers(s, log)
    assert all(m["position"] == m["seq"] for topic in ("predictions", "explanations") for m in run.of(topic))
    tasks = [orjson.loads(v) for part in run.tasks.parts.values() for _, v, _, _ in part]
    assert {t["step"] for t in tasks} == {"both"} and len(tasks) == 2 * 120
    from streamxai.plan import stream_explainer

    se, want = stream_explainer(s, "inline"), {}
    for ev in events:
        for v in se.process_one(ev.x, ev.y):
            if se.n_seen % s.emit_every == 0:
                want[("inline", ev.seq, v.explainer, v.feature)] = v.value
    assert run.explanation_values() == want


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint_every", [0, 60])
def test_a_restart_anywhere_reproduces_the_uninterrupted_run(tmp_path, checkpoint_every):
    """Each handler dying at one offset, and a stretch of arrivals forwarded twice, still publish the uninterrupted run."""
    s = delayed_settings(checkpoint_every=checkpoint_every)
    msgs = two_streams()
    log = PartitionLog()
    record_arrivals(log, msgs)
    whole = run_handlers(s, log)
    cut = 700
    store = FileCheckpointStore(tmp_path, every=checkpoint_every, secret=b"k" * 32) if checkpoint_every else None
    first_m, first_e, first_d = (ModelHandler(s, checkpoints=store), ExplainHandler(s, checkpoints=store),
                                 ChangeHandler(s, checkpoints=store))
    log_again = PartitionLog()
    log_again.parts = {k: list(v) for k, v in log.parts.items()}
    redeliver(log_again, range(cut - 30, cut))  # the intake, restarted, forwards 30 arrivals again
    second_m = ModelHandler(s, history=log_again, checkpoints=store)
    resumed = Run()  # the restarted explain and change handlers replay their own topics (the run's logs)
    second_e = ExplainHandler(s, history=resumed.tasks, checkpoints=store)
    second_d = ChangeHandler(s, history=resumed.explanations, checkpoints=store)
    n_tasks = {p: len(v) for p, v in whole.tasks.parts.items()}
    of_a = [off for off, (k, *_) in enumerate(whole.explanations.parts[("drift-feed", 0)]) if k == b"a"]
    change_cut = of_a[len(of_a) // 2]  # in the middle of stream a
    run_handlers(
        s, log_again, model=lambda off: first_m if off < cut else second_m,
        explain=lambda p, off: first_e if off < n_tasks[("explain-tasks", p)] // 2 else second_e,
        change=lambda off: first_d if off < change_cut else second_d, run=resumed)
    assert resumed.predictions() == whole.predictions()
    assert resumed.explanation_values() == whole.explanation_values()
    assert resumed.changes() == whole.changes() and whole.changes()
    assert second_m.metrics.get("duplicate_labels_dropped") + second_m.metrics.get("duplicates_dropped") == 30
    assert second_m.metrics.get("replayed_events") > 0
    assert second_e.metrics.get("replayed_tasks") > 0 and second_d.metrics.get("replayed_explanations") > 0
    if checkpoint_every:
        assert min(h.metrics.get("checkpoints_restored") for h in (second_m, second_e, second_d)) >= 1


@pytest.mark.slow
def test_never_labelled_events_expire_after_the_timeout_and_memory_stays_flat():
    """10% of 200,000 events never get a label: each expires after label_timeout_s and is counted, the rest are
    learned, and the join's state keeps its size from 50,000 events to 200,000."""
    import pickle
    import random

    from river import dummy
    from streamxai.core.labels import LabelJoin
    from streamxai.core.prequential import PrequentialModel

    n, delay, dt = 200_000, 50, 0.01  # 100 events per second of arrival time: the timeout is 500 events
    join = LabelJoin(PrequentialModel(dummy.NoChangeClassifier()), ["a", "b"], max_label_delay=5_000,
                     label_timeout_s=5.0)
    rng = random.Random(1)
    never = set(rng.sample(range(n), n // 10))
    sizes = []
    for t in range(n):
        at = t * dt
        join.on_features(t, {"a": rng.random(), "b": 1.0}, None, ts=at, at=at)
        if t >= delay and t - delay not in never:
            join.on_label(t - delay, t % 2, at=at)
        if (t + 1) % 50_000 == 0:
            sizes.append(len(pickle.dumps(join)))
    learned = sum(1 for q in range(n - delay) if q not in never)
    assert join.counts["labels_learned"] == learned
    # expired: the unlabelled events more than 5 s (500 events) before the last arrival; the
    # boundary is a float comparison of arrival times, so allow the events right at it
    old = sum(1 for q in never if q < n - 502)
    assert old <= join.counts["events_expired"] <= old + 3
    assert join.waiting == n - learned - join.counts["events_expired"] < 600
    # flat: the state is the ~100 waiting events and the expired seqs of the last max_label_delay
    # seqs, both drawn at random: measured sizes vary by 8.5% (20.0 to 21.7 KB); a state that grew
    # with the stream would be four times as large at 200,000 as at 50,000
    assert max(sizes) < 1.25 * min(sizes), sizes


@pytest.mark.slow
def test_ipdp_explains_every_event_and_the_loss_based_explainers_every_labelled_one():
    from helpers.arrivals import record_arrivals

    s = delayed_settings(emit_every=10, max_label_delay=60)
    events = list(threshold_events("u", 1000, seed=4))
    never = set(range(5, 1000, 10))  # 10% never labelled
    log = PartitionLog()
    run = run_in_process(s, record_arrivals(log, labels_later(events, 30, unlabelled=never)), changes=False)
    se, join = run.explainers["u"], run.joins["u"]
    assert se._seen == {"predict": 1000, "learn": 900}
    # the unlabelled ones expired, but for the last 6: within max_label_delay of the last event
    assert join.counts["labels_learned"] == 900 and (join.counts["events_expired"], join.waiting) == (94, 6)
    ipdp = sorted(p for (_, p, e, f) in run.explanations if e == "ipdp" and f == "a")
    assert len(ipdp) == 100  # a report every 10 events: every event was explained


@pytest.mark.slow
def test_labels_500_events_late_rank_the_same_features_and_episodes_name_the_drifted_ones():
    """The demo's drifting stream with labels 500 late ranks as with labels in line (seeded: car > age for iPFI,
    age > car for iSAGE, noise below 0.03)."""
    from streamxai.local.demo import demo_plan, demo_settings
    from streamxai.local.demo_stream import agrawal_events
    from streamxai.reference import Recorded
    from streamxai.settings import AGRAWAL_FEATURES, Settings

    n, delay = 3000, 500
    plan = demo_plan(n)
    events = list(agrawal_events("demo", n, plan.drift_at, plan.swap_at, seed=42, f_before=plan.f_before,
                                 f_after=plan.f_after))
    runs = {}
    for late in (0, delay):
        s = Settings(features=list(AGRAWAL_FEATURES), explainers=["ipfi", "isage"], **demo_settings(n, late))
        msgs = labels_later(events, late) if late else events
        runs[late] = run_in_process(s, [Recorded(m) for m in msgs])
    # the position of each event's arrival in the late run: its seq plus the labels learned before it
    position, learned = {}, 0
    for m in labels_later(events, delay):
        if isinstance(m, FeatureEvent):
            position[m.seq] = m.seq + learned
        else:
            learned += 1
    top = {}
    for late, run in runs.items():
        final = {}
        for (_, _, ex, f), v in sorted(run.explanations.items()):
            final[(ex, f)] = v  # the last value of each series (sorted by position)
        top[late] = {ex: {f for f in sorted((f for e, f in final if e == ex), key=lambda f: -final[(ex, f)])[:2]}
                     for ex in ("ipfi", "isage")}
    assert top[delay] == top[0] == {"ipfi": {"age", "car"}, "isage": {"age", "car"}}
    join = runs[delay].joins["demo"]
    assert join.counts["labels_learned"] == n and join.waiting == join.held == 0  # every label counted
    assert not [k for k in join.counts if k.startswith("label_")]  # none refused
    # the episodes of the late run name the drifted features (and the model's loss), each after its drift
    episodes = runs[delay].episodes
    assert set().union(*(f for *_, f in episodes)) <= {"age", "elevel", "car", "loss"}, episodes
    drift, swap = position[plan.drift_at], position[plan.swap_at]
    assert any(drift < first < swap and "elevel" in f for _, first, _, f in episodes), (drift, swap, episodes)
    assert any(first > swap and "car" in f for _, first, _, f in episodes), (swap, episodes)
    assert all(first > drift for _, first, _, _ in episodes), (drift, episodes)


def test_a_checkpoint_of_other_explainers_is_not_restored_but_the_group_rebuilt_under_the_new_settings(tmp_path):
    # a restart with a stream's explainers and alpha changed rebuilds the explain state under the new ones
    s = delayed_settings(explain_groups=1, checkpoint_every=40)
    new = s.replace(explainers=["ipfi", "ipdp"], alpha=0.02, change_explainers=["ipfi"])
    log = PartitionLog()
    record_arrivals(log, list(threshold_events("t", 150, seed=6)))
    whole = run_handlers(s, log)
    store = FileCheckpointStore(tmp_path, every=40, secret=b"k" * 32)
    first = ExplainHandler(s, checkpoints=store)
    second = ExplainHandler(new, history=whole.tasks, checkpoints=store)
    resumed = run_handlers(s, log, explain=lambda part, off: first if off < 100 else second)
    assert not second.metrics.get("checkpoints_restored")
    under_new = run_handlers(new, log).explanation_values()
    after = {k: v for k, v in resumed.explanation_values().items() if k[1] >= 100}
    assert after and after == {k: v for k, v in under_new.items() if k[1] >= 100}


def test_a_restart_that_drops_a_feature_explains_the_new_events_as_a_fresh_stream(tmp_path):
    # a profile edited between restarts to drop a feature: the model state replays none of the old events
    # and numbers the new from 0; the explain state checks the old tasks against the new features too
    s = delayed_settings(checkpoint_every=40)
    new = s.replace(features=["a", "b"])
    old_events = list(labels_later(threshold_events("t", 150, seed=6), 6))  # positions run ahead of seqs
    new_events = [FeatureEvent("t", e.seq + 150, e.ts, {"a": e.x["a"], "b": e.x["b"]}, e.y)
                  for e in threshold_events("t", 100, seed=7)]
    log = PartitionLog()
    record_arrivals(log, old_events + new_events)
    store = FileCheckpointStore(tmp_path, every=40, secret=b"k" * 32)
    run = Run()
    models = ModelHandler(s, checkpoints=store), ModelHandler(new, history=log, checkpoints=store)
    explainers = ExplainHandler(s, checkpoints=store), ExplainHandler(new, history=run.tasks, checkpoints=store)

    def explainer(part, off):  # the first handler for the old events' tasks, the second for the new ones'
        _, value, _, headers = run.tasks.parts[("explain-tasks", part)][off]
        task = orjson.loads((unpack_tasks(value, Source("explain-tasks", headers=headers)) or [value])[0])
        return explainers[task["seq"] >= 150]

    resumed = run_handlers(s, log, model=lambda off: models[off >= len(old_events)], explain=explainer, run=run)
    assert not explainers[1].metrics.get("duplicate_tasks_dropped")
    alone = PartitionLog()
    record_arrivals(alone, new_events)
    fresh = run_handlers(new, alone).explanation_values()
    # the new events' positions start again at their seqs (the old ones' ran ahead by their labels),
    # so the resumed run's explanations at those positions are the second handler's
    assert fresh and {k: resumed.explanation_values().get(k) for k in fresh} == fresh
    assert {k[3] for k in fresh} == {"a", "b"}
