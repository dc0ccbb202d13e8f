"""Stream profiles benchmark, run on demand: ``python tests/benchmarks/bench_profiles.py [--quick]``."""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from streamxai.handlers import ModelHandler, Source  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402
from streamxai.schemas import dumps  # noqa: E402
from streamxai.settings import AGRAWAL_FEATURES, Settings  # noqa: E402


def per_event_us(s: Settings, events: list[tuple[bytes, bytes]]) -> float:
    handler = ModelHandler(s)
    t0 = time.process_time()
    for off, (raw, key) in enumerate(events):
        handler.on_message(raw, key, Source("features", 0, off))
    return (time.process_time() - t0) / len(events) * 1e6


def main() -> None:
    """Prints the model handler's CPU time per feature event when each stream's settings come from a
    stream profile (``--globs`` tables, the stream's one last, so every lookup of a new stream
    tries them all), against the same events with the same settings at the top level, measured
    alternately in the same run (best of ``--repeat``). The per-event lookups (features, sample
    rate) are cached per stream id, so the two should differ by well under a microsecond.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer events (a smoke run)")
    parser.add_argument("--streams", type=int, default=50, help="streams (default 50)")
    parser.add_argument("--globs", type=int, default=20, help="profile tables (default 20)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs of each (default 3)")
    args = parser.parse_args()
    n = 100 if args.quick else 1000
    features = list(AGRAWAL_FEATURES)
    common = dict(model="river.linear_model.LogisticRegression", model_params={}, explain_groups=2)
    top = Settings(features=features, **common)
    tables = {f"other{i}-*": {"features": ["a"]} for i in range(args.globs - 1)}
    profiled = Settings(streams={**tables, "s*": {"features": features}}, **common)
    events = [(dumps(e), e.stream_id.encode()) for k in range(args.streams) for e in agrawal_events(f"s{k}", n, seed=k)]
    times: dict[str, list[float]] = {"top level": [], "profile": []}
    for _ in range(args.repeat):
        times["top level"].append(per_event_us(top, events))
        times["profile"].append(per_event_us(profiled, events))
    base, prof = min(times["top level"]), min(times["profile"])
    print(f"model handler, {len(events)} events of {args.streams} streams (logistic regression, 9 features, 2 groups)")
    print(f"  settings at the top level (baseline): {base:6.1f} us/event")
    print(f"  settings from the last of {args.globs} profiles: {prof:6.1f} us/event  ratio {prof / base:.3f}")


if __name__ == "__main__":
    main()
