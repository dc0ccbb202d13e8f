"""The drift feed through a real worker: a change worker reading it sends exactly the change events and
episodes the in-process change handler finds for the same records."""

from __future__ import annotations

import orjson
from confluent_kafka import Producer
from helpers.change_feed_run import FEED, explain, feed_settings, tasks_of
from helpers.partition_log import PartitionLog
from helpers.pipeline_runs import collect_all, make_settings, wait_for_commit
from streamxai.handlers import ChangeHandler, ExplainHandler, Source
from streamxai.kafka.config import confluent_config, ensure_topics
from streamxai.worker import spawn_worker, stop_worker


def _told(msgs: list[dict]) -> tuple[dict, dict]:
    changes = {(m["series"], m["position"]): m for m in msgs if m.get("schema", "").startswith("drift_event")}
    episodes = {(m["first_position"], m["status"]): m for m in msgs if m.get("schema", "").startswith("change_episode")}
    return changes, episodes


def test_a_change_worker_on_the_feed_finds_what_the_in_process_handler_finds(bootstrap, tmp_path):
    fields = {k: getattr(feed_settings(), k) for k in ("features", "explainers", "model", "model_params", "emit_every",
                                                        "explain_groups", "alpha", "change_warmup", "change_episode_gap")}
    s = make_settings(bootstrap, str(tmp_path / "state"), partitions=1, checkpoint_every=30, **fields)
    tasks, feed, public = tasks_of(s), PartitionLog(), []
    explain(ExplainHandler(s), tasks, range(len(tasks.parts[("explain-tasks", 0)])), feed, public)
    records = feed.parts[(FEED, 0)]
    reference = ChangeHandler(s)
    want = []
    for off, (key, value, _, headers) in enumerate(records):
        want += [orjson.loads(o.value) for o in reference.on_message(value, key, Source(FEED, 0, off, headers=headers))]
    assert _told(want)[0] and _told(want)[1]
    ensure_topics(s)
    p = Producer(confluent_config(s, **{"enable.idempotence": True, "log_level": 3}))
    for key, value, _, headers in records:
        p.produce(s.topic(FEED), value, key, partition=0, headers=list(headers or ()))
    assert p.flush(30) == 0
    log = tmp_path / "worker.log"
    worker = spawn_worker(s, roles=("change",), log_file=str(log))
    try:
        wait_for_commit(s, [FEED], timeout=120)  # the whole feed taken, so its outputs are flushed
        got = collect_all(s, "drift-events")
        got += collect_all(s, "change-episodes")
    finally:
        stop_worker(worker)
    assert "Traceback" not in log.read_text(errors="replace")
    for m in got:
        m.pop("_partition")
    assert _told(got) == _told(want)
