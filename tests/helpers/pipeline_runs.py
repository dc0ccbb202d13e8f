"""Runs of the pipeline on a broker (integration tests, benchmarks): settings per run with their
own topics and group, collecting output, a worker's metrics."""

from __future__ import annotations

import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable

import orjson

from pipeline.kafka.io import consume
from pipeline.local.ports import free_port
from pipeline.settings import Settings


def make_settings(bootstrap: str, state_dir: str, **over) -> Settings:
    run = uuid.uuid4().hex[:8]
    base = dict(
        bootstrap_servers=bootstrap, topic_prefix=f"it-{run}.", app_id=f"it-{run}",
        web_port=free_port(), state_dir=state_dir, partitions=4,
        model="river.tree.HoeffdingTreeClassifier", model_params={"grace_period": 100},
        alpha=0.01, emit_every=5, explain_groups=2, storage_size=50, grid_size=5, session_timeout_s=10.0,
    )
    base.update(over)
    return Settings(**base)


def collect(s: Settings, topic: str, done: Callable[[list[dict]], bool], timeout: float = 180.0) -> list[dict]:
    """Decoded messages of ``topic`` (short name) until ``done(messages)`` or ``timeout`` s."""
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    for rec in _poll(s, topic, deadline):
        obj = orjson.loads(rec.value)
        obj["_partition"] = rec.partition
        out.append(obj)
        if done(out):
            break
    return out


def _poll(s: Settings, topic: str, deadline: float) -> Iterable:
    for rec in consume(s, [s.topic(topic)], idle_timeout=max(1.0, deadline - time.monotonic())):
        yield rec
        if time.monotonic() > deadline:
            return


def worker_metrics(s: Settings, timeout: float = 5.0) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{s.web_port}/streamxai/metrics", timeout=timeout) as r:
        return orjson.loads(r.read())
