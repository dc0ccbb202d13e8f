"""What a report's standard errors cost, compiled and in numpy. Run on demand:

    python tests/benchmarks/bench_stderr_report.py [--events 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_speed: the same stream and model
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's pipeline

from streamxai.core.kernels import KERNELS  # noqa: E402
from streamxai.core.uncertainty import SmoothedStderr  # noqa: E402


def numpy_only():
    """A context in which every tracker answers with its numpy code."""
    real = SmoothedStderr._report_compiled

    class Ctx:
        def __enter__(self):
            SmoothedStderr._report_compiled = lambda self: False

        def __exit__(self, *exc):
            SmoothedStderr._report_compiled = real

    return Ctx()


def tracker(d: int, donors: bool, events: int, seed: int = 0) -> SmoothedStderr:
    """A tracker of ``d`` features after ``events`` events (with a reservoir's donors, or none),
    some increments held (``events`` is not a multiple of the 64 folded at a time)."""
    gen = random.Random(seed)
    t = SmoothedStderr([f"f{i}" for i in range(d)], alpha=0.001)
    items = [{"x": float(i)} for i in range(100)]
    for i in range(events):
        deltas = [gen.gauss(0.0, 1.0) for _ in range(d)]
        t.add_increments(deltas)
        if donors:
            t.add_donors(items, [gen.randrange(100) for _ in range(10)], deltas, per_feature=False)
            t.stored(i % 100, items, deltas)
    return t


def per_report(t: SmoothedStderr, n: int = 2000) -> float:
    """Seconds of one report on ``t``: its caches cleared before each, as an event clears them."""
    clock = time.perf_counter
    t0 = clock()
    for _ in range(n):
        t._cached = t._cached_moments = t._cached_cov = None
        t.stderr_array()
        t.variance_factors()
    return (clock() - t0) / n


def per_event(name: str, events: int) -> float:
    import bench_speed as b

    data = b.events(name, 1000 + events)
    se = b.warm_explainer(name, data[:1000])
    return b.explain_window(pickle.loads(pickle.dumps(se)), data[1000:])[0] / events


def best(fn, repeats: int) -> tuple[float, float]:
    """(compiled, numpy): the best of ``repeats`` interleaved runs of ``fn`` on either."""
    out = {True: float("inf"), False: float("inf")}
    for _ in range(repeats):
        for compiled in (True, False):
            if compiled:
                out[True] = min(out[True], fn())
            else:
                with numpy_only():
                    out[False] = min(out[False], fn())
    return out[True], out[False]


def main() -> None:
    """A report asks each explainer's tracker (:class:`streamxai.core.uncertainty.SmoothedStderr`) for
    its standard errors and variance factors: the increments held since the last fold are folded
    into a copy of the moments at both rates, then the weighted variances, the reuse correction and
    the square roots. In numpy that is some forty operations on arrays of 9 to 99 features, and
    numpy's cost per call, not the arithmetic, makes it most of a report. ``stderr_report`` does it
    in one compiled call with the same floating-point operations.

    Printed, in one run, with the numpy code as the baseline (``_report_compiled`` answering False,
    so ``_report`` runs its numpy code; interleaved, the best of ``--repeats``):

    - per tracker shape (iPFI's and iSAGE's 9 features with donors; iPDP's 9 x 11 series without),
      the microseconds of one report, and the ratio;
    - per model (logistic regression, HAT), the CPU time per event of the stream explainer with
      reports every 10 events, and the ratio.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=2000, help="events per timed window of a model")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    if KERNELS is None:
        sys.exit("the compiled kernels are not built (bash deploy/setup.sh): nothing to compare")
    print(f"Python {sys.version.split()[0]}; a report's standard errors, compiled against numpy (the baseline)")
    for label, d, donors in [("iPFI / iSAGE: 9 features, donors", 9, True), ("iPDP: 99 series, no donors", 99, False)]:
        t = tracker(d, donors, 1000 + 37)
        c, n = best(lambda t=t: per_report(t), args.repeats)
        print(f"  {label:<36} {c * 1e6:7.1f} us a report compiled, {n * 1e6:7.1f} in numpy: {n / c:5.1f}x")
    for name in ("logistic", "hat"):
        c, n = best(lambda name=name: per_event(name, args.events), max(3, args.repeats // 2))
        print(f"  {name:<36} {c * 1e6:7.1f} us an event compiled, {n * 1e6:7.1f} in numpy: {n / c:5.2f}x "
              f"(reports every 10 events, CPU time)")


if __name__ == "__main__":
    main()
