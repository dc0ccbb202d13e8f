"""Poison messages: what a stream whose tasks fail again and again costs an explainer worker.

    python tests/benchmarks/bench_poison.py [--events 1500] [--every 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package

from helpers.handler_inputs import settings  # noqa: E402
from helpers.partition_log import PartitionLog  # noqa: E402
from streamxai.core.stream import StreamExplainer  # noqa: E402
from streamxai.handlers import ExplainHandler, MessageHandler, ModelHandler, Source  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402
from streamxai.schemas import dumps  # noqa: E402


def _tasks(s, n: int) -> PartitionLog:
    log, mh = PartitionLog(), ModelHandler(s)
    for off, ev in enumerate(agrawal_events("e", n, seed=1)):
        for o in mh.on_message(dumps(ev), b"e", Source("features", 0, off)):
            if o.topic == "explain-tasks":
                log.append("explain-tasks", 0, o.key, o.value)
    return log


def _run(s, log: PartitionLog) -> tuple[float, ExplainHandler]:
    h = ExplainHandler(s, history=log.history)
    items = log.items("explain-tasks", 0)
    t0 = time.perf_counter()
    for off, (key, value) in enumerate(items):
        src = Source("explain-tasks", 0, off)
        h.needs_recovery(key, src)
        h.on_message(value, key, src)
    return (time.perf_counter() - t0) / len(items), h


def main() -> None:
    """An explain handler (a Hoeffding tree over agrawal's features, every explainer, one group)
    takes the tasks of ``--events`` events of one stream; from the 100th on, the tasks of the
    events whose integral salary is divisible by ``--every`` (one in ``--every``) fail after they changed the group's state (a stand-in failure: ``StreamExplainer.step``
    raises when it builds values, as an overflowing summary did; a replay works). Measured in the
    same run: the tasks without failures (the baseline), the same tasks with the failures as
    this version takes them (a rebuild for the first two, then each message of the key on a
    copy of its state and a failure rolled back), and as the version before did (every failure
    dropped the state and the next task rebuilt it from the key's history: the guard switched
    off). Prints the seconds per task of each and the ratios to the baseline.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1500)
    ap.add_argument("--every", type=int, default=10)
    a = ap.parse_args()
    s = settings(explain_groups=1, partitions=1, explainers=["ipfi", "isage", "ipdp"])
    log = _tasks(s, a.events)
    base, _ = _run(s, log)
    real = StreamExplainer.step

    def step(self, kind, x, y=None, explain=True, loss=None, build=True, position=None):
        values = real(self, kind, x, y, explain=explain, loss=loss, build=build, position=position)
        if build and self.n_seen >= 100 and int(x["salary"]) % a.every == 0:
            raise RuntimeError("a stand-in failure")
        return values

    StreamExplainer.step = step
    try:
        now, h = _run(s, log)
        strike = MessageHandler._strike
        MessageHandler._strike = lambda self, key, why: None  # never guarded: as the version before
        try:
            before, old = _run(s, log)
        finally:
            MessageHandler._strike = strike
    finally:
        StreamExplainer.step = real
    n = len(log.items("explain-tasks", 0))
    print(f"{n} tasks, one in {a.every} from the 100th failing ({h.metrics.get('replayed_tasks')} tasks replayed now, "
          f"{old.metrics.get('replayed_tasks')} before; {h.metrics.get('failures_rolled_back')} failures rolled back)")
    print(f"baseline (no failures): {base * 1e3:8.3f} ms/task")
    print(f"failures, this version: {now * 1e3:8.3f} ms/task  ratio {now / base:6.2f}")
    print(f"failures, rebuilt each: {before * 1e3:8.3f} ms/task  ratio {before / base:6.2f}")


if __name__ == "__main__":
    main()
