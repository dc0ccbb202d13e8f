"""Events per second through the Kafka pipeline with 1 and 2 workers, against the in-process
core (same model, explainers, settings and events) measured in the same run.

    python tests/benchmarks/bench_pipeline.py [--n 3000] [--streams 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package

from _worker_runs import broker_for, in_process_worker, kafka_workers  # noqa: E402  (the script's folder)
from helpers.pipeline_runs import make_settings  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402


def in_process_rate(s, events) -> float:
    """The worker's work per event in this process (model, explain and change handlers with
    checkpoints; reports every ``emit_every`` events, as a worker does), events/s of wall time."""
    wall, _ = in_process_worker(s.replace(state_dir=f"{s.state_dir}-in-process"), events)
    return len(events) / wall


def pipeline_rate(s, events, n_workers: int, tmp: str) -> float:
    wall, _ = kafka_workers(s, events, n_workers, tmp)
    return len(events) / wall


def main() -> None:
    """Starts its own broker on free ports (or uses $STREAMXAI_BOOTSTRAP). The pipeline rate is
    measured from producing the backlog until the change agents have taken up every explanation
    of it (the workers have joined before, so start-up and group joins are not counted). The baseline does a worker's work per event in
    this process: its model, explain and change handlers, handler to handler, with checkpoints,
    reporting every ``emit_every`` events, as a worker does, so the two do the same work.
    """
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--streams", type=int, default=1)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="streamxai-bench-")
    with broker_for(tmp) as bootstrap:
        events = []
        for i in range(args.streams):
            events += list(agrawal_events(f"bench{i}", args.n, seed=100 + i))
        events.sort(key=lambda e: e.seq)
        base = make_settings(bootstrap, f"{tmp}/state", alpha=0.001, emit_every=10, storage_size=100,
                             grid_size=10, model="river.tree.HoeffdingAdaptiveTreeClassifier",
                             model_params={"grace_period": 50}, session_timeout_s=30.0)
        print(f"{len(events)} events, {args.streams} stream(s), model {base.model}, explainers {base.explainers}, "
              f"grid {base.grid_size}, explain_groups {base.explain_groups}")
        r0 = in_process_rate(base, events)
        print(f"in-process core (baseline):               {r0:8.1f} events/s")
        same = {k: getattr(base, k) for k in ("alpha", "emit_every", "storage_size", "grid_size", "model",
                                              "model_params", "session_timeout_s")}
        for workers, groups in ((1, 1), (1, 2), (2, 2)):
            s = make_settings(bootstrap, f"{tmp}/state{workers}{groups}", explain_groups=groups, **same)
            r = pipeline_rate(s, events, workers, tmp)
            print(f"pipeline, {workers} worker(s), explain_groups={groups}: {r:8.1f} events/s   "
                  f"ratio to baseline {r / r0:.2f}")

if __name__ == "__main__":
    main()
