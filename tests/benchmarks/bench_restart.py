"""Time for a restarted drift agent to rebuild its streams from the explanations topic: one pass
per partition (HistoryCache) against one pass per key, measured in the same run on the same topic.
Explanations are keyed by stream (the drift agent keeps all series of a stream together), so the
270 series here are 10 keys.

    python tests/benchmarks/bench_restart.py [--series 270] [--points 200] [--baseline-series 27]

Issue 7's restart had 270 series of 200 explanations on 4 partitions (54,000 messages); one
pass per series took ~0.55 s each, 148 s in all. Starts its own broker on free ports (or uses
$STREAMXAI_BOOTSTRAP). The baseline rebuilds only ``--baseline-series`` series (a pass per
series costs the same for each) and is scaled to all of them.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's pipeline, not an installed one

from helpers.pipeline_runs import make_settings  # noqa: E402

from pipeline.handlers import DriftHandler, Source  # noqa: E402
from pipeline.kafka.config import ensure_topics  # noqa: E402
from pipeline.kafka.io import consume, produce_raw  # noqa: E402
from pipeline.kafka.replay import PartitionHistory  # noqa: E402
from pipeline.local.broker import LocalBroker  # noqa: E402
from pipeline.local.ports import free_ports  # noqa: E402
from schemas import Explanation, dumps  # noqa: E402


def rebuild(s, last, history) -> tuple[float, int]:
    """Feed each stream's last message to a fresh handler; seconds and explanations replayed."""
    h = DriftHandler(s, history=history)
    t0 = time.perf_counter()
    for rec in last:
        h.on_message(rec.value, rec.key, Source(rec.topic, rec.partition, rec.offset))
    return time.perf_counter() - t0, h.metrics.get("replayed_explanations")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", type=int, default=270)
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--baseline-series", type=int, default=27)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-restart-")
    broker = None
    bootstrap = os.environ.get("STREAMXAI_BOOTSTRAP")
    if not bootstrap:
        port, cport = free_ports(2)
        broker = LocalBroker(port, cport, data_dir=Path(tmp) / "kafka", heap="384m", die_with_parent=True)
        broker.start(timeout=120)
        bootstrap = broker.bootstrap
    try:
        s = make_settings(bootstrap, f"{tmp}/state", emit_every=10)
        ensure_topics(s)
        rng, items = random.Random(1), []
        feats = s.features
        names = [(f"stream{i % 10}", ("ipfi", "isage", "ipdp")[i % 3], feats[(i // 30) % len(feats)])
                 for i in range(args.series)]
        for k in range(args.points + 1):
            seq = (k + 1) * s.emit_every - 1
            for sid, ex, feat in names:
                v = rng.gauss(0.1, 0.02)
                block = {"n": s.emit_every, "mean": v, "m2": 0.04 * (s.emit_every - 1)}
                msg = Explanation(sid, ex, feat, v, seq, (k + 1) * s.emit_every, seq + 1, seq, block=block)
                items.append((sid.encode(), dumps(msg)))  # explanations are keyed by stream
        produce_raw(s, s.topic("explanations"), items)
        last = {}
        for rec in consume(s, [s.topic("explanations")], idle_timeout=5):
            last[rec.key] = rec
        last_recs = sorted(last.values(), key=lambda r: (r.partition, r.offset))
        print(f"{len(items)} explanations of {len(names)} series in {len(last_recs)} streams on "
              f"{s.partitions} partitions")
        history = PartitionHistory(s)

        def per_key(topic, partition, before, key, from_offset=0):  # no scan: one pass per key
            return history(topic, partition, before, key, from_offset)

        base = last_recs[:: max(1, len(last_recs) // args.baseline_series)][: args.baseline_series]
        t_base, n_base = rebuild(s, base, per_key)
        t_new, n_new = rebuild(s, last_recs, history)
        scaled = t_base / len(base) * len(last_recs)
        print(f"one pass per key: {t_base:.2f} s for {len(base)} streams ({n_base} replayed), "
              f"{t_base / len(base):.3f} s per stream -> {scaled:.1f} s for {len(last_recs)}")
        print(f"one pass per partition: {t_new:.2f} s for {len(last_recs)} streams ({n_new} replayed)")
        print(f"speed-up: {scaled / t_new:.1f}x")
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
