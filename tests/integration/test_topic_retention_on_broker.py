"""Retention enforced every half second: with a stream's history deleted, a worker with its checkpoints
restarts exactly, one without goes on from what remains with one warning per state and the
``history_incomplete`` counter."""

from __future__ import annotations

import os

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from helpers.pipeline_runs import (
    collect,
    explanation_values,
    make_settings,
    reference_values,
    until,
    wait_for_commit,
    worker_metrics,
)
from streamxai.kafka.config import INPUT_TOPICS, TOPIC_NAMES, confluent_config, ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.kafka.watermarks import watermarks
from streamxai.local.broker import LocalBroker
from streamxai.local.demo_stream import agrawal_events
from streamxai.local.ports import free_port, free_ports
from streamxai.worker import spawn_worker, stop_worker

#: the topics the worker creates with its retention, and those a restart replays
INTERNAL = [n for n in TOPIC_NAMES if n not in INPUT_TOPICS]
REPLAYED = ("arrivals", "explain-tasks", "drift-feed")
FIRST, SECOND, THIRD = 60, 30, 30  # events of each run


@pytest.fixture(scope="module")
def retention_broker(tmp_path_factory):
    if os.environ.get("STREAMXAI_BOOTSTRAP"):
        pytest.skip("needs a broker of its own that checks retention often (log.retention.check.interval.ms)")
    port, controller_port = free_ports(2)
    broker = LocalBroker(port, controller_port, data_dir=tmp_path_factory.mktemp("kafka-retention"), heap="384m",
                         die_with_parent=True, extra_properties={"log.retention.check.interval.ms": "500"})
    broker.start(timeout=120)
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


def _retention(admin, s, ms):
    """Set ``retention.ms`` of every internal topic."""
    res = [ConfigResource(ConfigResource.Type.TOPIC, s.topic(n), incremental_configs=[
        ConfigEntry("retention.ms", str(ms), incremental_operation=AlterConfigOpType.SET)]) for n in INTERNAL]
    for fut in admin.incremental_alter_configs(res).values():
        fut.result(timeout=30)


def _watermarks(s, topic):
    c = Consumer(confluent_config(s, **{"group.id": "watermarks", "enable.auto.commit": False}))
    try:
        return watermarks(c, s.topic(topic), 0, timeout=10)
    finally:
        c.close()


def test_a_restart_is_exact_from_checkpoints_and_without_them_goes_on_from_what_remains(retention_broker, tmp_path):
    s = make_settings(retention_broker, str(tmp_path / "host-a"), partitions=1, explain_groups=1, explainers=["ipfi"],
                      internal_retention_ms=3_600_000)
    events = list(agrawal_events("r", FIRST + SECOND + THIRD, seed=31))
    expected = reference_values(s, events)
    ensure_topics(s)
    admin = AdminClient(confluent_config(s))
    described = {n: admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, s.topic(n))])
                 for n in ("arrivals", "drift-feed", "features")}
    configs = {n: next(iter(d.values())).result(timeout=30) for n, d in described.items()}
    assert configs["arrivals"]["retention.ms"].value == "3600000"  # set by the worker, not the broker's default
    assert configs["drift-feed"]["retention.bytes"].value == "-1"
    assert configs["features"]["retention.ms"].is_default  # the team's input keeps the broker's

    def run(settings, lo, hi, log_name):
        proc = spawn_worker(settings, log_file=str(tmp_path / log_name), loglevel="warning")
        try:
            produce_events(s, events[lo:hi])
            want = {k for k in expected if lo <= k[1] < hi}
            msgs = collect(s, "explanations", lambda ms: set(explanation_values(ms)) >= want, timeout=90)
            predicted = collect(s, "predictions", lambda ms: {m["seq"] for m in ms} >= set(range(lo, hi)), timeout=30)
            wait_for_commit(s, REPLAYED)
            counters = worker_metrics(settings)["counters"]
        finally:
            stop_worker(proc)  # the stop checkpoints every state it changed
        log = (tmp_path / log_name).read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]
        assert {m["seq"] for m in predicted} >= set(range(lo, hi))  # every event predicted
        got = explanation_values(msgs)
        assert set(got) >= want  # and explained
        return {k: got[k] for k in want}, counters, log

    def delete_history(what):
        """Retention deletes every message so far, then is set back; the first offsets kept."""
        _retention(admin, s, 200)

        def deleted():
            marks = {t: _watermarks(s, t) for t in REPLAYED}
            return {t: lo for t, (lo, hi) in marks.items()} if all(lo == hi > 0 for lo, hi in marks.values()) else None

        ends = until(deleted, 30, f"retention to delete {what}")
        _retention(admin, s, 3_600_000)
        return ends

    run(s, 0, FIRST, "first.log")
    delete_history("the first run's history")

    # the same host: its checkpoints cover everything retention deleted, so the restart is exact
    got, counters, log = run(s.replace(web_port=free_port()), FIRST, FIRST + SECOND, "second.log")
    assert got == {k: v for k, v in expected.items() if k in got}
    assert counters.get("history_incomplete", 0) == 0 and "history is incomplete" not in log, counters
    for stage in ("model", "explain"):
        assert counters.get(f"checkpoints_restored{{stage={stage}}}", 0) >= 1, (stage, counters)

    # another host: no checkpoint, and the history starts where retention left it (every stage
    # loses its start, so the explanations it reads begin with a rebuilt group's first report)
    ends = delete_history("the second run's history")
    other = s.replace(web_port=free_port(), state_dir=str(tmp_path / "host-b"))
    _, counters, log = run(other, FIRST + SECOND, FIRST + SECOND + THIRD, "third.log")
    lines = [ln for ln in log.splitlines() if "history is incomplete" in ln]
    assert counters.get("history_incomplete", 0) == len(lines) >= 3, (counters, lines)  # model, explain, change
    model = [ln for ln in lines if "model state r:" in ln]
    assert len(model) == 1, lines
    change = [ln for ln in lines if "change state r:" in ln]  # drift-feed lost its start too
    assert len(change) == 1 and f"{s.topic('drift-feed')}[0] from offset 0" in change[0], lines
    assert f"{s.topic('arrivals')}[0] from offset 0" in model[0] and f"from offset {ends['arrivals']} " in model[0]
    assert "what remains" in model[0]
