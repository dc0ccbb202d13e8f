"""iSAGE cost, with baselines measured in the same run (run on demand, not collected by pytest).

    python tests/benchmarks/bench_isage.py [--events N] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _stderr_cost import stderr_overhead  # noqa: E402  (tests/benchmarks, the script's folder)
from river import datasets, forest, linear_model, preprocessing, tree  # noqa: E402
from streamxai.core.explainers import ISAGE  # noqa: E402
from streamxai.core.losses import BrierOf  # noqa: E402
from streamxai.core.model import ModelFunction  # noqa: E402

FEATURES = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]


def agrawal(n: int, seed: int = 1) -> list[tuple[dict, int]]:
    return list(itertools.islice(datasets.synth.Agrawal(classification_function=1, seed=seed), n))


def zero(x: dict) -> float:
    return 0.0


def overhead(n_events: int, m: int, removal: str, estimator: str | None = None, repeats: int = 5) -> None:
    """Best of ``repeats`` interleaved chunks (other processes share the machine)."""
    data = agrawal(200 + n_events)
    fn = ModelFunction(zero, output="value")
    ex = ISAGE(fn, "squared", FEATURES, alpha=0.001, n_inner_samples=m, removal=removal, seed=1,
               estimator=estimator)
    # warm the storage outside the timing (the observational trees learn in update)
    for x, y in data[:200]:
        ex.explain_one(x, float(y))
    timed = [(x, float(y)) for x, y in data[200:]]
    size = max(1, len(timed) // repeats)
    best_isage = best_bare = float("inf")
    n_eval_total = 0
    for r in range(repeats):
        chunk = timed[r * size : (r + 1) * size]
        e0 = fn.n_evaluations
        t0 = time.perf_counter()
        for x, y in chunk:
            ex.explain_one(x, y)
        t_isage = time.perf_counter() - t0
        n_eval = fn.n_evaluations - e0
        n_eval_total += n_eval
        calls = list(itertools.islice(itertools.cycle([x for x, _ in chunk]), n_eval))
        t0 = time.perf_counter()
        for row in calls:
            zero(row)
        t_bare = time.perf_counter() - t0
        best_isage = min(best_isage, t_isage / n_eval)
        best_bare = min(best_bare, t_bare / n_eval)
    per_eval = (best_isage - best_bare) * 1e6
    what = "incl. tree learning" if removal == "observational" else ""
    d = len(FEATURES)
    formula = f"1 + (d-1)m = {1 + (d - 1) * m}" if ex.estimator_used == "paper" else f"1 + d m = {1 + d * m}"
    print(
        f"  {removal:<15} {ex.estimator_used:<8} m={m:<3} evals/event={n_eval_total / (size * repeats):5.1f} "
        f"({formula})  iSAGE {best_isage * 1e6:7.2f} us/eval  "
        f"bare call {best_bare * 1e6:5.2f} us/eval  ratio {best_isage / best_bare:7.1f}x  "
        f"overhead {per_eval:6.2f} us/eval {what or ('<= 5 us OK' if per_eval <= 5 else 'ABOVE 5 us')}"
    )


def models() -> dict:
    return {
        "ARF(10 trees)": lambda: forest.ARFClassifier(n_models=10, seed=1),
        "HoeffdingTree": lambda: tree.HoeffdingTreeClassifier(),
        "LogisticReg": lambda: preprocessing.StandardScaler() | linear_model.LogisticRegression(),
    }


def throughput(n_events: int, removal: str, warm: int) -> None:
    data = agrawal(warm + n_events, seed=2)
    for name, make in models().items():
        # learn only, predict + learn (the model agent), explain + learn
        timings = {}
        for mode in ("learn", "predict+learn", "isage+learn"):
            mdl = make()
            for x, y in data[:warm]:
                mdl.learn_one(x, y)
            # the pipeline's default: Brier on the probability of class 1, unbiased, m = 2
            fn = ModelFunction(mdl, output="proba_of", target_class=1)
            ex = ISAGE(fn, BrierOf(1), FEATURES, alpha=0.001, removal=removal, seed=1)
            for x, _ in data[warm - 200 : warm]:
                ex.observe_one(x, None)
            t0 = time.perf_counter()
            for x, y in data[warm:]:
                if mode == "predict+learn":
                    mdl.predict_proba_one(x)
                elif mode == "isage+learn":
                    ex.explain_one(x, y)
                mdl.learn_one(x, y)
            timings[mode] = time.perf_counter() - t0
        eps = {k: n_events / v for k, v in timings.items()}
        print(
            f"  {name:<14} {removal:<15} learn {eps['learn']:8.0f} ev/s  predict+learn "
            f"{eps['predict+learn']:8.0f} ev/s  isage+learn {eps['isage+learn']:7.0f} ev/s  "
            f"(iSAGE costs {timings['isage+learn'] / timings['predict+learn']:5.1f}x predict+learn)"
        )


def main() -> None:
    """1. Overhead per model evaluation outside the model: iSAGE with a negligible-cost callable
       model (returns 0.0) on the 9 agrawal features, against the bare calls of the same
       callable on the same number of rows. Target: <= 5 us per evaluation.
    2. Model evaluations per explained event: ``1 + (d - 1) * m`` for the paper's estimator,
       ``1 + d * m`` for the unbiased default (``m = 2``) and the plug-in.
    3. Events per second, prequential (explain with h_t, then learn), for an adaptive random
       forest, a Hoeffding tree and a logistic regression on agrawal, against learning alone
       and predict + learn, interventional and observational removal, with the pipeline's
       default (Brier on the probability of class 1, unbiased, m = 2).
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=5000)
    ap.add_argument("--quick", action="store_true", help="fewer events for a smoke run")
    args = ap.parse_args()
    n = 500 if args.quick else args.events
    print(f"python {sys.version.split()[0]}; d = {len(FEATURES)} agrawal features")
    print("1-2. overhead per model evaluation (negligible-cost model) vs bare calls, same run")
    print("   (the paper's estimator: Algorithm 1 as published; the default: unbiased, m = 2; both")
    print("    track the increments' variance and standard errors)")
    for m, estimator in ((1, "paper"), (10, "paper"), (2, None)):
        overhead(n, m, "interventional", estimator)
    overhead(max(n // 5, 200), 2, "observational")
    print("2b. standard-error tracking per event (negligible-cost model), same run")
    data = [(x, float(y)) for x, y in agrawal(200 + max(n, 1000))]
    for m, estimator in ((1, "paper"), (2, None)):
        stderr_overhead(f"iSAGE m={m} {estimator or 'unbiased'}", lambda m=m, e=estimator: ISAGE(
            ModelFunction(zero, output="value"), "squared", FEATURES, alpha=0.001, n_inner_samples=m,
            seed=1, estimator=e), data)
    ht = tree.HoeffdingTreeClassifier()
    for x, y in agrawal(5000, seed=3):
        ht.learn_one(x, y)
    stderr_overhead("iSAGE m=2 unbiased, Hoeffding tree", lambda: ISAGE(
        ModelFunction(ht, output="proba_of", target_class=1), BrierOf(1), FEATURES, alpha=0.001, seed=1),
        data[: 200 + max(n // 2, 500)])
    print("3. prequential events/s on agrawal (explain with h_t, then learn)")
    throughput(max(n // 5, 200), "interventional", warm=1000)
    throughput(max(n // 10, 100), "observational", warm=1000)


if __name__ == "__main__":
    main()
