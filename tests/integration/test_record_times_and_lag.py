"""Every output record's CreateTime (shown by ``tail --meta``), and consumer-lag gauges that fall to 0 once
the worker has taken everything, also after a backlog."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest
from helpers.pipeline_runs import collect, make_settings, until, worker_metrics
from streamxai.cli import main
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.demo_stream import agrawal_events
from streamxai.settings import Settings
from streamxai.worker import spawn_worker, stop_worker

N = 600


@dataclass
class BacklogRun:
    settings: Settings
    #: wall-clock seconds before the events were produced and after the worker's outputs were read
    started: float
    ended: float
    #: the worker's gauges once no more records came, or what they were when the wait gave up
    gauges: dict


@pytest.fixture(scope="module")
def backlog_run(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> BacklogRun:
    """A worker started on a backlog of N events, which it drains; nothing arrives after them."""
    tmp = tmp_path_factory.mktemp("backlog")
    s = make_settings(bootstrap, str(tmp / "state"), partitions=2, explain_groups=1, emit_every=10)
    ensure_topics(s)
    started = time.time()
    produce_events(s, agrawal_events("b-1", N, seed=3))
    worker = spawn_worker(s, log_file=str(tmp / "worker.log"), loglevel="warning")
    try:
        collect(s, "predictions", lambda ms: len(ms) >= N, timeout=120)

        def drained() -> dict | None:
            gauges = worker_metrics(s)["gauges"]
            lags = {k: v for k, v in gauges.items() if k.startswith("consumer_lag{")}
            settled = gauges.get("explanation_lag_seconds") == 0 and _all_assigned_seen(s, lags)
            return gauges if lags and not any(lags.values()) and settled else None

        try:
            gauges = until(drained, 60, "every consumer_lag gauge at 0")
        except AssertionError:
            gauges = worker_metrics(s)["gauges"]
        ended = time.time()  # everything taken up: the worker makes no more records
    finally:
        stop_worker(worker)
    return BacklogRun(s, started, ended, gauges)


def _all_assigned_seen(s: Settings, lags: dict) -> bool:
    """Every partition of the worker's input topics (features, explain-tasks) has its gauge."""
    return all(any(f"topic={s.topic(t)}" in k and f"partition={p}" in k for k in lags)
               for t in ("features", "explain-tasks") for p in range(s.partitions))


def test_consumer_lag_falls_to_zero_once_the_backlog_is_drained(backlog_run):
    lags = {k: v for k, v in backlog_run.gauges.items() if k.startswith("consumer_lag{")}
    assert lags and _all_assigned_seen(backlog_run.settings, lags), lags
    assert {k: v for k, v in lags.items() if v} == {}
    assert backlog_run.gauges.get("explanation_lag_events") == 0
    assert backlog_run.gauges.get("explanation_lag_seconds") == 0  # not the age of the last task taken up


def test_explanation_records_carry_their_create_time_and_tail_meta_prints_it(backlog_run, capsys):
    s = backlog_run.settings
    common = ["--bootstrap", s.bootstrap_servers, "--set", f"topic_prefix={s.topic_prefix}"]
    capsys.readouterr()
    assert main(["tail", "explanations", "--from-beginning", "--idle", "3", "--meta", *common]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r["value"]["schema"].startswith("explanation/") for r in rows)
    for r in rows:
        assert {"topic", "partition", "offset", "key", "timestamp", "timestamp_type", "time"} <= set(r)
        assert r["timestamp_type"] == "CreateTime"
        assert backlog_run.started * 1000 <= r["timestamp"] <= backlog_run.ended * 1000
        assert r["time"].endswith("Z") and r["time"][:4].isdigit()
