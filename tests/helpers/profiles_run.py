"""One worker serving two stream profiles through a real broker: ``agr-*`` (agrawal, a Hoeffding adaptive
tree, iPFI and iPDP) and ``reg-*`` (:func:`~helpers.streams.linear_events`, LinearRegression, iPFI and
iSAGE); a stream matching neither, or ``agr-*`` with other features, is a dead letter."""

from __future__ import annotations

import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.demo import demo_plan
from streamxai.local.demo_stream import agrawal_events
from streamxai.schemas import FeatureEvent
from streamxai.settings import AGRAWAL_FEATURES, Settings
from streamxai.worker import spawn_worker, stop_worker

from helpers.handler_inputs import run_handlers
from helpers.pipeline_runs import collect, make_settings, worker_metrics
from helpers.streams import LINEAR_FEATURES, linear_events

__all__ = ["ProfilesRun", "run_two_profiles", "PROFILES"]

N = 3000  # events per stream: the demo's short run (agrawal function 0 -> 2 at n/3, elevel <-> car at 2n/3)
#: the settings of both profiles, scaled to N events as the demo scales its own
PROFILES = {
    "agr-*": {"features": list(AGRAWAL_FEATURES), "model": "river.tree.HoeffdingAdaptiveTreeClassifier",
              "model_params": {"grace_period": 50}, "explainers": ["ipfi", "ipdp"], "grid_size": 3, "alpha": 0.03,
              "change_warmup": N // 6},
    "reg-*": {"features": list(LINEAR_FEATURES), "task": "regression", "output": "value", "loss": "squared",
              "model": "river.linear_model.LinearRegression", "model_params": {}, "explainers": ["ipfi", "isage"],
              "alpha": 0.03, "change_warmup": N // 6},
}


@dataclass
class ProfilesRun:
    """The run, made once per session (``two_profiles_run``) and read by the pipeline, CLI and dashboard tests."""
    settings: Settings
    n: int
    drift_at: int
    #: what the worker sent, decoded, by short topic name
    got: dict[str, list[dict]]
    #: what the same events give through the handlers in process, by topic
    want: dict[str, list[dict]]
    #: the worker's counters and gauges (GET /streamxai/metrics) at the end of the run
    metrics: dict
    #: the worker's Prometheus page (GET /metrics) at the end of the run
    prometheus: str


def run_two_profiles(bootstrap: str, tmp: Path) -> ProfilesRun:
    s = make_settings(bootstrap, str(tmp / "state"), features=[], explain_groups=1, emit_every=10,
                      change_episode_gap=N // 12, streams=PROFILES)
    plan = demo_plan(N)
    agr = agrawal_events("agr-1", N, plan.drift_at, plan.swap_at, seed=42, f_before=plan.f_before,
                         f_after=plan.f_after)
    reg = linear_events("reg-1", N, drift_at=plan.drift_at, seed=7)
    events = [e for pair in zip(agr, reg, strict=True) for e in pair]
    events.insert(100, FeatureEvent("agr-bad", 0, 0.0, {"x0": 0.5, "salary": 1.0}, 1))  # not agrawal's features
    events.insert(200, FeatureEvent("other-1", 0, 0.0, {"a": 0.5}, 1))  # no profile matches
    want = run_handlers(s, events)
    ensure_topics(s)
    worker = spawn_worker(s, log_file=str(tmp / "worker.log"), loglevel="warning")
    try:
        produce_events(s, events)
        got = {"explanations": collect(s, "explanations", lambda ms: len(ms) >= len(want["explanations"]))}
        deadline = time.monotonic() + 60  # the change agent trails the explainers
        while worker_metrics(s)["counters"].get("explanations_seen", 0) < len(want["explanations"]):
            assert time.monotonic() < deadline and worker.poll() is None, "the change agent did not catch up"
            time.sleep(0.5)
        for topic in ("drift-events", "change-episodes", "dead-letters"):
            expected = len(want[topic])
            got[topic] = collect(s, topic, lambda ms, k=expected: len(ms) >= k, timeout=30)
        got["predictions"] = collect(s, "predictions", lambda ms: len(ms) >= 2 * N, timeout=30)
        metrics = worker_metrics(s)
        with urllib.request.urlopen(f"http://127.0.0.1:{s.web_port}/metrics", timeout=5) as r:
            prometheus = r.read().decode()
    finally:
        stop_worker(worker)
    log = (tmp / "worker.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
    return ProfilesRun(s, N, plan.drift_at, got, want, metrics, prometheus)
