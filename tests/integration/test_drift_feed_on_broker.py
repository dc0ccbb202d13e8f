"""The upgrade to the drift feed through a real worker: a drift agent of the version before read
``explanations`` and checkpointed its state there (a clean stop) with explanations still untaken;
a drift worker of this version reads ``drift-feed``, restores that checkpoint, takes the
explanations after it, then the feed, and finds what one uninterrupted drift agent found."""

from __future__ import annotations

import orjson
from confluent_kafka import Producer
from helpers.drift_feed_run import FEED, explain, feed_settings, tasks_of
from helpers.partition_log import PartitionLog
from helpers.pipeline_runs import collect_all, make_settings, wait_for_commit, worker_metrics
from streamxai.app import checkpoint_store
from streamxai.handlers import DriftHandler, ExplainHandler, Source
from streamxai.kafka.config import confluent_config, ensure_topics
from streamxai.kafka.io import consume
from streamxai.worker import spawn_worker, stop_worker


def _told(msgs: list[dict]) -> tuple[dict, dict]:
    changes = {(m["series"], m["position"]): m for m in msgs if m.get("schema", "").startswith("drift_event")}
    episodes = {(m["first_position"], m["status"]): m for m in msgs if m.get("schema", "").startswith("change_episode")}
    return changes, episodes


def test_a_drift_worker_upgraded_to_the_feed_restores_the_old_checkpoint_and_takes_the_backlog(bootstrap, tmp_path):
    fields = {k: getattr(feed_settings(), k) for k in ("features", "explainers", "model", "model_params", "emit_every",
                                                        "explain_groups", "alpha", "drift_warmup", "drift_episode_gap")}
    s = make_settings(bootstrap, str(tmp_path / "state"), partitions=1, checkpoint_every=30, **fields)
    tasks, feed, public = tasks_of(s), PartitionLog(), []
    explain(ExplainHandler(s), tasks, range(len(tasks.parts[("explain-tasks", 0)])), feed, public)
    records = feed.parts[(FEED, 0)]
    reference = DriftHandler(s)
    want = []
    for off, (key, value, _, headers) in enumerate(records):
        want += [orjson.loads(o.value) for o in reference.on_message(value, key, Source(FEED, 0, off, headers=headers))]
    assert _told(want)[0] and _told(want)[1]
    ensure_topics(s)
    # every explanation, of both versions, is on the public topic; the new explainers' reports also on the feed
    upgrade = len(records) // 2
    p = Producer(confluent_config(s, **{"enable.idempotence": True, "log_level": 3}))
    for raw in public:
        p.produce(s.topic("explanations"), raw, b"f", partition=0)
    for key, value, _, headers in records[upgrade:]:
        p.produce(s.topic(FEED), value, key, partition=0, headers=list(headers or ()))
    assert p.flush(30) == 0
    # the old drift agent took all but the last 9 explanations of the old version, then stopped cleanly
    old, sent = DriftHandler(s, checkpoints=checkpoint_store(s)), []
    for rec in consume(s, [s.topic("explanations")], idle_timeout=5):
        if rec.offset >= 3 * upgrade - 9:
            break
        sent += [orjson.loads(o.value) for o in old.on_message(rec.value, rec.key, Source(rec.topic, 0, rec.offset))]
    assert old.checkpoint_all() == 1
    log = tmp_path / "worker.log"
    worker = spawn_worker(s, roles=("drift",), log_file=str(log))
    try:
        wait_for_commit(s, [FEED], timeout=120)
        assert worker_metrics(s)["counters"].get("drift_states_adopted") == 1
        # everything it sent (it has committed the whole feed, so its outputs are flushed)
        got = collect_all(s, "drift-events")
        got += collect_all(s, "change-episodes")
    finally:
        stop_worker(worker)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and f"restored from the checkpoint at {s.topic('explanations')}[0]@" in text
    # what the old agent sent and what the worker sent: every change event and episode of the
    # uninterrupted run, equal where one came twice
    for m in got:
        m.pop("_partition")
    for part_got, part_sent, part_want in zip(_told(sent + got), _told(sent), _told(want), strict=True):
        assert part_got == part_want
        assert set(part_want) - set(part_sent)  # the worker found some of them
    assert all(m == _told(want)[0][k] for k, m in _told(got)[0].items())  # its repeats are equal
