"""``streamxai demo``: a local broker, workers, a drifting demo stream and a live view."""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from pathlib import Path

import orjson

from .demo_stream import DemoPlan, agrawal_events
from .kafka_config import ensure_topics
from .kafka_io import consume, produce_events
from .live_view import LiveView
from .ports import free_port
from .settings import Settings
from .worker import spawn_worker, stop_worker

__all__ = ["run_demo"]

DEMO_STREAM = "demo"
CONTROL_STREAM = "control"


def _local_broker(s: Settings):
    from .broker import LocalBroker

    host, _, port = s.bootstrap_servers.partition(",")[0].rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        return None, False
    broker = LocalBroker(port=int(port), controller_port=int(port) + 1)
    already = broker.status().ready
    if not already:
        print(f"starting the local Kafka broker on {broker.bootstrap} (first run resolves its jars with Maven) ...")
        broker.start()
    return broker, not already


def _drift_caught_up(workers: list[Settings]) -> bool:
    """Whether the workers' drift agents have read as many explanations as their explainers sent."""
    import urllib.request

    out = seen = 0
    for ws in workers:
        try:
            with urllib.request.urlopen(f"http://{ws.web_host}:{ws.web_port}/streamxai/metrics", timeout=2) as r:
                counters = orjson.loads(r.read()).get("counters", {})
        except OSError:
            return False
        out += counters.get("explanations_out", 0)
        seen += counters.get("explanations_seen", 0)
    return seen >= out


def run_demo(args: argparse.Namespace, s: Settings) -> int:
    run = uuid.uuid4().hex[:6]
    explicit = {item.partition("=")[0].strip() for item in args.set}
    changes: dict[str, object] = {"topic_prefix": f"streamxai.demo-{run}.", "app_id": f"streamxai-demo-{run}",
                                  "state_dir": f".streamxai/demo-{run}"}
    if "alpha" not in explicit:
        changes["alpha"] = 0.005  # reacts within ~1/alpha = 200 events, so drift shows in a short demo
    if "drift_warmup" not in explicit:
        changes["drift_warmup"] = min(s.drift_warmup, args.n // 6)  # a short demo still has data before its drift
    s = s.replace(**changes)
    n = args.n
    plan = DemoPlan(n, n // 3, 2 * n // 3, ("elevel", "car"))
    broker, started = _local_broker(s)
    workers = []
    logs = Path(s.state_dir)
    logs.mkdir(parents=True, exist_ok=True)
    try:
        ensure_topics(s)
        workers_settings = []
        for i in range(args.workers):
            ws = s.replace(web_port=free_port())
            workers.append(spawn_worker(ws, log_file=str(logs / f"worker-{i}.log")))
            workers_settings.append(ws)
        print(f"{args.workers} worker(s) started; logs in {logs}/; topics {s.topic_prefix}*")

        def produce() -> None:
            evs = list(agrawal_events(DEMO_STREAM, n, plan.drift_at, plan.swap_at, seed=42))
            if args.control:
                evs += list(agrawal_events(CONTROL_STREAM, n, None, None, seed=43))
                evs.sort(key=lambda e: e.seq)
            produce_events(s, evs, rate=args.rate)

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        view = LiveView(list(s.features), s.topic_prefix, plan=plan.describe())
        topics = [s.topic(t) for t in ("predictions", "explanations", "drift-events", "change-episodes", "dead-letters")]
        deadline = time.monotonic() + args.timeout
        done_at = None
        streams = [DEMO_STREAM] + ([CONTROL_STREAM] if args.control else [])
        for rec in consume(s, topics, idle_timeout=30.0):
            view.add(rec)
            view.render()
            finished = all(view.min_explained_seq(sid) >= n - s.emit_every for sid in streams)
            if finished and done_at is None:
                done_at = time.monotonic()
            if done_at and time.monotonic() - done_at > 3.0:
                break
            if time.monotonic() > deadline:
                print(f"timed out after {args.timeout} s")
                break
            if any(w.poll() is not None for w in workers):
                print(f"a worker exited; see {logs}/worker-*.log")
                break
        # the drift agent trails the explainers: wait (up to two minutes) until it has read every
        # explanation, then re-read the change topics, so the summary holds the last episodes
        wait_until = time.monotonic() + 120.0
        while not _drift_caught_up(workers_settings) and time.monotonic() < wait_until:
            time.sleep(1.0)
        view.changes, view.episodes = [], []
        for rec in consume(s, [s.topic("drift-events"), s.topic("change-episodes")], idle_timeout=3.0):
            view.add(rec)
        view.render(force=True)
        print(view.summary())
        return 0
    finally:
        for w in workers:
            stop_worker(w)
        if broker is not None and started and not args.keep_broker:
            broker.stop()
            print("local broker stopped")
