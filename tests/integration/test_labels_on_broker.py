"""Late labels through a real broker: a worker SIGKILLed mid-stream publishes, after restart, what the
in-process reference gives on the recorded arrivals; a worker restarted with another model rebuilds."""

from __future__ import annotations

import signal

from helpers.pipeline_runs import collect, make_settings, recorded_arrivals, until, wait_for_commit, worker_metrics
from helpers.streams import threshold_events
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.demo_stream import labels_later
from streamxai.local.ports import free_port
from streamxai.reference import run_in_process
from streamxai.settings import Secret
from streamxai.worker import stop_worker


def test_sigkilled_worker_with_delayed_labels_resumes_with_the_reference_values(bootstrap, tmp_path, workers):
    # stream d's label moves from feature a to b at seq 500 (labels 40 events late, 5% never);
    # c is stationary (labels 15 late). A change test that reacts within the short stream.
    s = make_settings(bootstrap, str(tmp_path / "state"), features=["a", "b", "c"], explainers=["ipfi", "ipdp"],
                      model_params={"grace_period": 20}, alpha=0.05, explain_groups=2, checkpoint_every=150,
                      checkpoint_key=Secret("k" * 32), change_warmup=200, change_min_samples=30,
                      change_episode_gap=200, max_label_delay=300)
    n = 1000
    d = labels_later(threshold_events("d", n, drift_at=n // 2, seed=3), 40, unlabelled=range(7, n, 20))
    c = labels_later(threshold_events("c", n, seed=4), 15)
    msgs = [m for pair in zip(d, c, strict=False) for m in pair] + d[len(c):] + c[len(d):]
    ensure_topics(s)
    victim = workers(s)
    third = len(msgs) // 3
    produce_events(s, msgs[:third], rate=400)
    collect(s, "explanations", lambda ms: any(m["seq"] >= 250 for m in ms), timeout=120)
    wait_for_commit(s, ["arrivals", "explain-tasks"])
    produce_events(s, msgs[third:2 * third], rate=400)
    collect(s, "explanations", lambda ms: any(m["seq"] >= 400 for m in ms), timeout=120)
    # all of it taken and committed by every stage, in the order they pass messages on, so each
    # state has a checkpoint a restart may restore (asserted below); then a little more, killed
    # before its commit
    wait_for_commit(s, ["features", "labels", "arrivals", "explain-tasks", "drift-feed"])
    tail = 2 * third + 100
    produce_events(s, msgs[2 * third:tail], rate=400)
    victim.send_signal(signal.SIGKILL)  # mid-stream: no shutdown, no final commit
    victim.wait(10)
    produce_events(s, msgs[tail:])
    restarted = s.replace(web_port=free_port())
    workers(restarted)

    expected_preds = 2 * n
    preds = collect(s, "predictions", lambda ps: len({(p["stream_id"], p["seq"]) for p in ps
                                                      if p["schema"] == "prediction/v2"}) >= expected_preds,
                    timeout=240)
    batches: list[int] = []
    record = recorded_arrivals(s, batches)
    # the restarted intake met the last third waiting: it forwards some of it in batches
    assert batches and max(batches) > 1, batches
    ref = run_in_process(s, record)
    # every arrival the restarted intake forwarded again was recognised, none learned twice
    assert {(p["stream_id"], p["seq"]): p["y_pred"] for p in preds if p["schema"] == "prediction/v2"} == \
        ref.predictions
    want = ref.explanations
    msgs_out = collect(s, "explanations", lambda ms: len({(m["stream_id"], m["position"], m["explainer"],
                                                            m["feature"]) for m in ms}) >= len(want), timeout=240)
    got = {(m["stream_id"], m["position"], m["explainer"], m["feature"]): m["value"] for m in msgs_out}
    assert got == want  # duplicates (re-sent after the restart) carry equal values
    for m in msgs_out:
        assert got[(m["stream_id"], m["position"], m["explainer"], m["feature"])] == m["value"]
    preds = collect(s, "predictions", lambda ps: len({(p["stream_id"], p["seq"]) for p in ps
                                                      if p["schema"] == "label_outcome/v1"}) >= len(ref.outcomes),
                    timeout=60)
    outcomes = {(p["stream_id"], p["seq"]): (p["outcome"], p["loss"]) for p in preds
                if p["schema"] == "label_outcome/v1"}
    assert outcomes == {k: (o.outcome, o.loss) for k, o in ref.outcomes.items()}
    assert ref.changes and {sid for sid, *_ in ref.changes} == {"d"}, ref.changes
    changes = collect(s, "drift-events", lambda cs: len({(x["stream_id"], x["position"], x["explainer"], x["feature"])
                                                         for x in cs}) >= len(ref.changes), timeout=120)
    assert {(x["stream_id"], x["position"], x["explainer"], x["feature"]): (x["cut_position"], x["level_before"],
                                                                           x["level_after"]) for x in changes} == ref.changes
    # the change agent trails: every task taken, then every record of the feed (so each drift
    # state met a record after the restart and was restored)
    wait_for_commit(s, ["explain-tasks", "drift-feed"])
    counters = worker_metrics(restarted)["counters"]
    # every state of every stage was restored from a checkpoint (the exact values above show the
    # replays after it were right; their number is not asked: a checkpoint at a batch's record
    # replays nothing). The 100 arrivals after the second wait make at most one more checkpoint per
    # state (checkpoint_every=150) and a key keeps two, so each restart restores one. Streams d
    # and c: two model states, two explainer groups each, two change states.
    restored = {stage: counters.get(f"checkpoints_restored{{stage={stage}}}", 0) for stage in ("model", "explain", "change")}
    assert restored["model"] >= 2 and restored["explain"] >= 4 and restored["change"] >= 2, counters


def test_a_worker_restarted_with_another_model_predicts_with_the_new_one(bootstrap, tmp_path, workers):
    # an operator changes the model and restarts: the restarted worker must not restore the old
    # tree from its checkpoints (written at the clean stop) and go on predicting with it, silently
    s = make_settings(bootstrap, str(tmp_path / "state"), features=["a", "b", "c"], explainers=["ipfi"],
                      model_params={"grace_period": 20}, explain_groups=1, checkpoint_every=50,
                      checkpoint_key=Secret("k" * 32), sasl_password=Secret("never-logged-pw"))
    msgs = list(threshold_events("t", 300, seed=5))
    ensure_topics(s)

    def predicted(n):
        ps = collect(s, "predictions", lambda ps: len({p["seq"] for p in ps if p["schema"] == "prediction/v2"}) >= n,
                     timeout=120)
        return {(p["stream_id"], p["seq"]): p["y_pred"] for p in ps if p["schema"] == "prediction/v2"}

    first = workers(s)
    produce_events(s, msgs[:150], rate=400)
    predicted(150)
    # every task taken and committed before the stop: else the restarted worker resumes before the
    # group's checkpoint of the stop, never considers it, and counts only the model's as outdated
    wait_for_commit(s, ["arrivals", "explain-tasks"])
    assert stop_worker(first) == 0  # a clean stop: every state checkpointed as of its last message
    new = s.replace(web_port=free_port(), model="river.linear_model.LogisticRegression", model_params={})
    workers(new)
    produce_events(s, msgs[150:], rate=400)
    got = predicted(300)
    record = recorded_arrivals(s)
    under_new, under_old = run_in_process(new, record).predictions, run_in_process(s, record).predictions
    late = {k for k in under_new if k[1] >= 150}
    assert len(late) == 150 and {k: got[k] for k in late} == {k: under_new[k] for k in late} != \
        {k: under_old[k] for k in late}
    # the model's checkpoint is found outdated at the first event, the explain group's only at its
    # first task, which may come after the last prediction: wait (bounded) for both, then no third
    outdated = lambda: worker_metrics(new)["counters"].get("checkpoints_outdated", 0)  # noqa: E731
    until(lambda: outdated() >= 2, 60, "the explain group's checkpoint to be found outdated too")
    assert outdated() == 2  # the model's and the group's
    log = (tmp_path / "worker-1.log").read_text(errors="replace")
    assert "model state t: not restored from its checkpoint" in log and "its stream's model, model_params" in log
    assert "k" * 32 not in log and "never-logged-pw" not in log
