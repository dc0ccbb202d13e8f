"""How soon a restarted worker explains new events when half of its streams' events wait for
their labels, against the same restart with every label in line, measured in the same run.

    python tests/benchmarks/bench_restart_labels.py [--streams 10] [--events 2000] [--kill]
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package

from helpers.pipeline_runs import collect, make_settings, own_broker, worker_metrics  # noqa: E402
from streamxai.kafka.config import ensure_topics  # noqa: E402
from streamxai.kafka.io import produce_events  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402
from streamxai.local.ports import free_port  # noqa: E402
from streamxai.schemas import FeatureEvent, LabelEvent  # noqa: E402
from streamxai.settings import Secret  # noqa: E402
from streamxai.worker import spawn_worker, stop_worker  # noqa: E402


def run(bootstrap: str, tmp: str, streams: int, n: int, late: bool, kill: bool) -> float:
    s = make_settings(bootstrap, f"{tmp}/state-{int(late)}", explain_groups=1, emit_every=10, checkpoint_every=500,
                      checkpoint_key=Secret("k" * 32))
    ensure_topics(s)
    events = {f"s{i}": list(agrawal_events(f"s{i}", n + 10, seed=i)) for i in range(streams)}
    msgs: list[FeatureEvent | LabelEvent] = []
    for q in range(n):
        for sid, evs in events.items():
            e = evs[q]
            msgs.append(FeatureEvent(sid, e.seq, e.ts, e.x, None if late else e.y))
            if late and q >= 50 and q - 50 < n // 2:  # the first half's labels, 50 events late
                old = evs[q - 50]
                msgs.append(LabelEvent(sid, old.seq, old.y, old.ts))
    logs = Path(tmp) / f"worker-{int(late)}.log"
    first = spawn_worker(s, log_file=str(logs), loglevel="warning")
    try:
        produce_events(s, msgs)
        done = {sid: False for sid in events}

        def explained(ms: list[dict], before: int = n - 10) -> bool:
            for m in ms[-200:]:
                if m["seq"] >= before:
                    done[m["stream_id"]] = True
            return all(done.values())

        collect(s, "explanations", lambda ms: explained(ms), timeout=1200)
        counters = worker_metrics(s)["counters"]
        waiting = worker_metrics(s)["gauges"].get("labels_pending", 0)
        print(f"   {'late' if late else 'in line'}: {len(msgs)} messages taken, {waiting} events waiting; "
              f"{counters.get('checkpoints_written', 0)} checkpoints")
    finally:
        if kill:
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        else:
            stop_worker(first)
    restarted = s.replace(web_port=free_port())
    t0 = time.monotonic()
    second = spawn_worker(restarted, log_file=str(logs), loglevel="warning")
    try:
        produce_events(s, [evs[q] for q in range(n, n + 10) for evs in events.values()])
        while True:  # the process is up when its metrics page answers
            try:
                worker_metrics(restarted, timeout=1)
                up = time.monotonic() - t0
                break
            except OSError:
                time.sleep(0.1)
        done = {sid: False for sid in events}

        def new_ones(ms: list[dict]) -> bool:
            for m in ms[-500:]:
                if m["seq"] >= n:
                    done[m["stream_id"]] = True
            return all(done.values())

        collect(s, "explanations", new_ones, timeout=600)
        took = time.monotonic() - t0
        c = worker_metrics(restarted)["counters"]
        print(f"   restarted: every stream's new events explained {took:.1f} s after the worker started (up after "
              f"{up:.1f} s; {c.get('checkpoints_restored', 0)} checkpoints restored, {c.get('replayed_events', 0)} "
              f"arrivals and {c.get('replayed_tasks', 0)} tasks replayed)")
        return took
    finally:
        stop_worker(second)


def main() -> None:
    """Each run: a worker takes ``--streams`` streams of ``--events`` agrawal events; in the late run
    no event carries its label and the labels of the first half are sent on the labels topic (the
    second half wait: ``streams * events / 2`` events in the joins' pending stores). Once the
    worker has explained them, it is stopped (``--kill``: SIGKILLed; its partitions then move only
    after the group's session timeout, 10 s here), a new worker is started (checkpoints every 500
    messages, then replay) and 10 new labelled events per stream are sent; the time from starting
    the new worker to an explanation of every stream's new events is measured, and when its
    metrics page first answered (the process is up). Starts its own
    broker on free ports (or uses $STREAMXAI_BOOTSTRAP).
    """
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=10)
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--kill", action="store_true", help="SIGKILL the first worker instead of stopping it")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-restart-labels-")
    with own_broker(tmp) as bootstrap:
        print(f"{args.streams} streams x {args.events} events")
        base = run(bootstrap, tmp, args.streams, args.events, late=False, kill=args.kill)
        late = run(bootstrap, tmp, args.streams, args.events, late=True, kill=args.kill)
        print(f"restart to new explanations: {late:.1f} s with half the events waiting for labels, {base:.1f} s with "
              f"labels in line (ratio {late / base:.2f})")


if __name__ == "__main__":
    main()
