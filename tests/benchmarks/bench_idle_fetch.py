"""An idle worker's CPU and a busy worker's rate for fetch waits (``FETCH_MAX_WAIT_MS``).

    python tests/benchmarks/bench_idle_fetch.py [--waits 20,100] [--idle 60] [--events 2000] [--rounds=3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _worker_runs  # noqa: E402
from helpers.pipeline_runs import make_settings, own_broker, wait_for_members  # noqa: E402
from streamxai.kafka.config import ensure_topics  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402
from streamxai.worker import settings_env, stop_worker  # noqa: E402

_LAUNCH = ("import sys, streamxai.kafka.faust_transport as t; t.FETCH_MAX_WAIT_MS = t.FETCH_BUSY_WAIT_MS = int(sys.argv[1]); "
           "from streamxai.cli import main; sys.exit(main(sys.argv[2:]))")


def _worker(s, wait_ms: int, log_file: str | None = None, loglevel: str = "warning") -> subprocess.Popen:
    """A worker of every role whose fetches wait at most ``wait_ms``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    cmd = [sys.executable, "-c", _LAUNCH, str(wait_ms), "worker", "--roles", "model,explain,change", "--loglevel", loglevel]
    with open(log_file or os.devnull, "ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def idle_cpu(bootstrap: str, tmp: str, wait_ms: int, span: float) -> float:
    """The share of one core an idle worker used over ``span`` s (after 5 s to settle)."""
    s = make_settings(bootstrap, f"{tmp}/idle-{wait_ms}-{time.monotonic_ns()}", model="river.forest.ARFClassifier",
                      model_params={"n_models": 10})
    ensure_topics(s)
    proc = _worker(s, wait_ms, f"{tmp}/idle-{wait_ms}.log")
    try:
        wait_for_members(s, 1, timeout=120)
        time.sleep(5)
        c0, t0 = _worker_runs._cpu_seconds([proc.pid]), time.monotonic()
        time.sleep(span)
        return (_worker_runs._cpu_seconds([proc.pid]) - c0) / (time.monotonic() - t0)
    finally:
        stop_worker(proc)


def busy_rate(bootstrap: str, tmp: str, wait_ms: int, n: int) -> tuple[float, float]:
    """``(events per wall s, events per CPU s)`` of one worker taking a backlog of ``n`` events."""
    s = make_settings(bootstrap, f"{tmp}/busy-{wait_ms}-{time.monotonic_ns()}", model="river.linear_model.LogisticRegression",
                      model_params={}, explainers=["ipfi"], explain_groups=1)
    events = list(agrawal_events("busy", n, seed=1))
    _worker_runs.spawn_worker = lambda ws, log_file=None, loglevel="warning": _worker(ws, wait_ms, log_file, loglevel)
    wall, cpu = _worker_runs.kafka_workers(s, events, 1, tmp)
    return n / wall, n / cpu


def main() -> None:
    """A worker's consumer keeps one fetch request in flight; with nothing to read, the broker answers
    it after the wait, and the consumer parses the empty answer for every partition the worker holds
    and asks again: an idle worker's CPU is mostly those polls. For each wait of ``--waits`` (the
    first is the baseline), each round: a worker (all roles, ARF(10), 4 partitions) joined and left
    idle for ``--idle`` s, its CPU from ``/proc`` (a share of one core); then a worker with a backlog
    of ``--events`` events (logistic regression, iPFI: the cheapest model, where the transport
    weighs most), timed as ``bench_speed.py --kafka`` times it (events per second of wall time and
    of the worker's CPU). The waits alternate within a round, so the machine's load falls on each
    alike; the medians and their ratios to the baseline's come last. The wait is set in the worker
    process only, the same busy or not (``streamxai.kafka.faust_transport.FETCH_MAX_WAIT_MS`` and
    ``FETCH_BUSY_WAIT_MS``, before the worker starts).
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--waits", default="20,100", help="fetch waits in ms, the first the baseline (default 20,100)")
    ap.add_argument("--idle", type=float, default=60.0, help="seconds an idle worker is measured (default 60)")
    ap.add_argument("--events", type=int, default=2000, help="the busy worker's backlog (default 2000)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    waits = [int(w) for w in args.waits.split(",")]
    idle: dict[int, list[float]] = {w: [] for w in waits}
    wall: dict[int, list[float]] = {w: [] for w in waits}
    cpu: dict[int, list[float]] = {w: [] for w in waits}
    with tempfile.TemporaryDirectory() as tmp, own_broker(tmp) as bootstrap:
        for r in range(args.rounds):
            order = waits if r % 2 == 0 else waits[::-1]
            for w in order:
                if args.idle > 0:
                    idle[w].append(idle_cpu(bootstrap, tmp, w, args.idle))
                if args.events > 0:
                    a, b = busy_rate(bootstrap, tmp, w, args.events)
                    wall[w].append(a)
                    cpu[w].append(b)
                print(f"round {r + 1}, wait {w} ms: idle {100 * idle[w][-1] if idle[w] else float('nan'):.2f} % of a core; "
                      f"busy {wall[w][-1] if wall[w] else float('nan'):.0f} events/s wall, "
                      f"{cpu[w][-1] if cpu[w] else float('nan'):.0f} per CPU s", flush=True)
    base = waits[0]
    med = {name: {w: statistics.median(v) for w, v in d.items() if v} for name, d in
           (("idle", idle), ("wall", wall), ("cpu", cpu))}
    for w in waits:
        parts = []
        for name, unit, scale in (("idle", "% of a core", 100), ("wall", "events/s wall", 1), ("cpu", "per CPU s", 1)):
            if w in med[name]:
                parts.append(f"{scale * med[name][w]:.2f} {unit} ({med[name][w] / med[name][base]:.2f}x)")
        print(f"median, wait {w} ms{' (baseline)' if w == base else ''}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
