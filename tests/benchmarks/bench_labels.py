"""Labels that arrive later, against labels in line, measured in the same run (no broker):

    python tests/benchmarks/bench_labels.py [--n 18000] [--delay 500] [--waiting 100000]
"""

from __future__ import annotations

import argparse
import gc
import pickle
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package

from helpers.arrivals import record_arrivals  # noqa: E402
from helpers.partition_log import PartitionLog  # noqa: E402
from river import dummy  # noqa: E402
from streamxai.core.labels import LabelJoin  # noqa: E402
from streamxai.core.prequential import PrequentialModel  # noqa: E402
from streamxai.handlers import ModelHandler  # noqa: E402
from streamxai.local.demo import demo_plan, demo_settings  # noqa: E402
from streamxai.local.demo_stream import agrawal_events, labels_later  # noqa: E402
from streamxai.reference import Recorded, run_in_process  # noqa: E402
from streamxai.settings import AGRAWAL_FEATURES, Settings  # noqa: E402


def core_runs(n: int, delay: int) -> None:
    plan = demo_plan(n)
    events = list(agrawal_events("demo", n, plan.drift_at, plan.swap_at, seed=42, f_before=plan.f_before,
                                 f_after=plan.f_after))
    print(f"1. the in-process core on the demo stream ({plan.describe()}), iPFI, iSAGE, iPDP, change test")
    rates = {}
    for late in (0, delay):
        s = Settings(features=list(AGRAWAL_FEATURES), **demo_settings(n, late))
        msgs = labels_later(events, late) if late else events
        t0 = time.perf_counter()
        run = run_in_process(s, [Recorded(m) for m in msgs])
        dt = time.perf_counter() - t0
        rates[late] = n / dt
        final: dict = {}
        for (_, _, ex, f), v in sorted(run.explanations.items()):
            final[(ex, f)] = v
        top = {ex: [f for f in sorted((f for e, f in final if e == ex), key=lambda f: -final[(ex, f)])[:3]]
               for ex in ("ipfi", "isage", "ipdp")}
        join = run.joins["demo"]
        labels = dict(join.counts)
        what = "labels in line" if not late else f"labels {late} events late"
        print(f"   {what:<24} {rates[late]:8.0f} events/s   top ipfi {top['ipfi']}, isage {top['isage']}, "
              f"ipdp {top['ipdp']}")
        print(f"   {'':<24} labels {labels}, waiting {join.waiting}, held {join.held}; episodes (position: features) "
              + ", ".join(f"{first}: {'/'.join(f)}" for _, first, _, f in run.episodes))
    print(f"   ratio late / in line: {rates[delay] / rates[0]:.2f}")


def model_path(n: int, delay: int) -> None:
    print("2. the model path")
    events = list(agrawal_events("m", n, n // 3, 2 * n // 3, seed=7))
    s = Settings(features=list(AGRAWAL_FEATURES), explain_groups=1)
    per = {}
    for late in (0, delay):
        log = PartitionLog()
        record_arrivals(log, labels_later(events, late) if late else events)
        items = log.parts[("arrivals", 0)]
        h = ModelHandler(s)
        t0 = time.perf_counter()
        for off, (key, value, _, _) in enumerate(items):
            h.on_message(value, key, log.source("arrivals", 0, off))
        per[late] = (time.perf_counter() - t0) / n * 1e6
        what = "labels in line" if not late else f"labels {late} events late"
        print(f"   model handler, {what:<24} {per[late]:7.1f} us per event ({len(items)} messages)")
    print(f"   ratio late / in line: {per[delay] / per[0]:.2f} (a late event is two messages: its features, its label)")
    # the join's own cost: a model that costs nothing, so what is left is the join
    xs = [e.x for e in events]
    base = PrequentialModel(dummy.NoChangeClassifier())
    t0 = time.perf_counter()
    for i, x in enumerate(xs):
        base.process_one(x, i % 2)
    t_base = (time.perf_counter() - t0) / n * 1e6
    for late in (0, delay):
        join = LabelJoin(PrequentialModel(dummy.NoChangeClassifier()), list(AGRAWAL_FEATURES))
        t0 = time.perf_counter()
        for i, x in enumerate(xs):
            join.on_features(i, x, None if late else i % 2, ts=float(i), at=float(i))
            if late and i >= late:
                join.on_label(i - late, (i - late) % 2, at=float(i))
        t = (time.perf_counter() - t0) / n * 1e6
        what = "in line" if not late else f"{late} events late"
        print(f"   the join, labels {what:<18} {t:6.1f} us per event against {t_base:.1f} us for "
              f"PrequentialModel.process_one alone: +{t - t_base:.1f} us")


def memory(waiting: int) -> None:
    print(f"3. {waiting:,} events waiting for their label ({len(AGRAWAL_FEATURES)} numeric features)")
    events = list(agrawal_events("w", waiting, seed=3))
    gc.collect()
    tracemalloc.start()
    join = LabelJoin(PrequentialModel(dummy.NoChangeClassifier()), list(AGRAWAL_FEATURES),
                     max_label_delay=waiting + 1)
    before = tracemalloc.get_traced_memory()[0]
    for e in events:
        join.on_features(e.seq, dict(e.x), None, ts=e.ts, at=e.ts)
    store = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    if join.waiting != waiting:
        raise RuntimeError(f"{join.waiting} events wait, expected {waiting}")
    ck = len(pickle.dumps(join, protocol=5))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    dicts = {e.seq: (dict(e.x), None, e.ts, e.ts, 0) for e in events}  # one dict per event: the simple store
    base = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    baseline_ck = len(pickle.dumps(dicts, protocol=5))
    print(f"   the join's column store: {store / 2**20:6.1f} MiB ({store / waiting:5.0f} B per event), "
          f"checkpoint {ck / 2**20:5.1f} MiB")
    print(f"   a dict per event:        {base / 2**20:6.1f} MiB ({base / waiting:5.0f} B per event), "
          f"checkpoint {baseline_ck / 2**20:5.1f} MiB")
    print(f"   ratio: memory {store / base:.2f}, checkpoint {ck / baseline_ck:.2f}")


def main() -> None:
    """1. throughput of the in-process core (label join, iPFI, iSAGE, iPDP, change test) on the
       demo's drifting stream, labels in line and ``--delay`` events late, with what the runs end
       with (top features, episodes, every label counted);
    2. the model path alone: the model handler over a recorded order of arrivals (parse, join,
       predictions, tasks), in line and late; and the join's own cost per event, over
       PrequentialModel.process_one with a model that costs nothing;
    3. the memory of ``--waiting`` events waiting for their label (the join's column store),
       against the same events kept as one dict per event, and its checkpoint (pickle) size.
    """
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=18000, help="events of the demo stream (default 18000)")
    ap.add_argument("--delay", type=int, default=500, help="events between an event and its label (default 500)")
    ap.add_argument("--waiting", type=int, default=100_000, help="events waiting for the memory measure")
    args = ap.parse_args()
    core_runs(args.n, args.delay)
    model_path(min(args.n, 20_000), args.delay)
    memory(args.waiting)


if __name__ == "__main__":
    main()
