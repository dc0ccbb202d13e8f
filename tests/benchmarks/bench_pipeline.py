"""Events per second through the Kafka pipeline with 1 and 2 workers, against the in-process
core (same model, explainers, settings and events) measured in the same run.

    python tests/benchmarks/bench_pipeline.py [--n 3000] [--streams 1]

Starts its own broker on free ports (or uses $STREAMXAI_BOOTSTRAP). The pipeline rate is
measured from the first prediction to the last explanation of the backlog, so worker
start-up and group joins are not counted; the in-process rate includes the model's own
predict and learn, as the pipeline does.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's pipeline, not an installed one

from helpers.pipeline_runs import make_settings  # noqa: E402

from pipeline.kafka.config import ensure_topics  # noqa: E402
from pipeline.kafka.io import consume, produce_events  # noqa: E402
from pipeline.local.broker import LocalBroker  # noqa: E402
from pipeline.local.demo_stream import agrawal_events  # noqa: E402
from pipeline.local.ports import free_port  # noqa: E402
from pipeline.plan import prequential_model, stream_explainer  # noqa: E402
from pipeline.worker import spawn_worker, stop_worker  # noqa: E402


def in_process_rate(s, events) -> float:
    models, ses = {}, {}
    t0 = time.perf_counter()
    for ev in events:
        m = models.setdefault(ev.stream_id, prequential_model(s))
        se = ses.setdefault(ev.stream_id, stream_explainer(s, ev.stream_id))
        m.process_one(ev.x, ev.y)
        se.process_one(ev.x, ev.y)
    return len(events) / (time.perf_counter() - t0)


def pipeline_rate(s, events, n_workers: int, tmp: str) -> float:
    ensure_topics(s)
    procs = [spawn_worker(s.replace(web_port=free_port()), log_file=f"{tmp}/w{i}.log", loglevel="warning")
             for i in range(n_workers)]
    try:
        time.sleep(12)  # all workers join before the backlog arrives
        produce_events(s, events)
        last = {}
        for ev in events:
            last[ev.stream_id] = ev.seq
        want_last = {sid: q - (q + 1) % s.emit_every for sid, q in last.items()}
        groups_done: dict[tuple, bool] = {}
        n_groups_total = len(last) * s.explain_groups
        t_first = None
        seen_groups = {}
        for rec in consume(s, [s.topic("predictions"), s.topic("explanations")], idle_timeout=120):
            now = time.perf_counter()
            if t_first is None:
                t_first = now
            if rec.topic.endswith("explanations"):
                import orjson

                m = orjson.loads(rec.value)
                sid = m["stream_id"]
                if m["seq"] >= want_last[sid]:
                    seen_groups.setdefault(sid, set()).add((m["explainer"], m["feature"]))
                    n_values = sum(len(s.features) for _ in s.explainers)
                    if len(seen_groups[sid]) == n_values:
                        groups_done[sid] = True
                if len(groups_done) == len(last):
                    return len(events) / (now - t_first)
        raise RuntimeError(f"pipeline did not finish; groups done {groups_done} of {n_groups_total}")
    finally:
        for p in procs:
            stop_worker(p)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--streams", type=int, default=1)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="streamxai-bench-")
    broker = None
    bootstrap = os.environ.get("STREAMXAI_BOOTSTRAP")
    if not bootstrap:
        port = free_port()
        broker = LocalBroker(port, free_port(), data_dir=f"{tmp}/kafka", die_with_parent=True)
        broker.start()
        bootstrap = broker.bootstrap
    try:
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
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
