"""iPFI benchmarks, run on demand: ``python tests/benchmarks/bench_ipfi.py [--quick]``."""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from _stderr_cost import stderr_overhead  # noqa: E402  (tests/benchmarks, the script's folder)
from river import forest, linear_model, optim, preprocessing, tree  # noqa: E402
from river.datasets import synth  # noqa: E402
from streamxai.core.batch.pfi import batch_pfi, pfi_error  # noqa: E402
from streamxai.core.explainers import IPFI  # noqa: E402
from streamxai.core.model import ModelFunction  # noqa: E402


def constant(x: dict) -> int:
    """A model whose evaluation costs next to nothing."""
    return 0


def agrawal(n: int, fn: int = 1, seed: int = 0) -> list[tuple[dict, int]]:
    return list(synth.Agrawal(classification_function=fn, seed=seed).take(n))


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def overhead(events: list[tuple[dict, int]], m: int) -> None:
    names = list(events[0][0])
    state = {}

    def run_ipfi() -> None:
        f = ModelFunction(constant)
        e = IPFI(f, "zero_one", names, n_samples=m, seed=1)
        for x, y in events:
            e.explain_one(x, y)
        state["evals"] = f.n_evaluations
        state["explained"] = e.n_explained

    run_ipfi()
    n_evals = state["evals"]
    per_event = n_evals // len(events) + 1
    xs = [x for x, _ in events]

    def run_bare() -> None:  # the same number of model calls, nothing else
        h = constant
        for x in xs:
            for _ in range(per_event):
                h(x)

    t_ipfi = best_of(3, run_ipfi)
    t_bare = best_of(3, run_bare) * n_evals / (per_event * len(xs))
    over = (t_ipfi - t_bare) / n_evals * 1e6
    print(
        f"  M={m}: {n_evals} evaluations over {state['explained']} explained events "
        f"= {n_evals / state['explained']:.2f}/event (1 + d*M = {1 + len(names) * m})"
    )
    print(
        f"    iPFI {t_ipfi / n_evals * 1e6:.3f} us/eval, bare model calls "
        f"{t_bare / n_evals * 1e6:.3f} us/call, ratio {t_ipfi / t_bare:.1f}x; "
        f"overhead outside model calls {over:.3f} us/eval "
        f"[{'OK' if over <= 5.0 else 'ABOVE'} target 5 us]"
    )


def throughput(name: str, make, events: list[tuple[dict, int]], m: int) -> None:
    names = list(events[0][0])

    def run(explain: bool) -> float:
        model = make()
        e = IPFI(ModelFunction(model), "zero_one", names, n_samples=m, seed=1)
        t = time.perf_counter()
        for x, y in events:
            model.predict_one(x)
            if explain:
                e.explain_one(x, y)
            model.learn_one(x, y)
        return len(events) / (time.perf_counter() - t)

    base = run(False)
    with_ipfi = run(True)
    print(
        f"  {name:<22} model alone {base:9.0f} events/s | with iPFI (M={m}, "
        f"{1 + len(names) * m} evals/event) {with_ipfi:8.0f} events/s | ratio {base / with_ipfi:.1f}x"
    )


def memory(n_small: int, n_large: int) -> None:
    events = agrawal(1000, seed=3)
    names = list(events[0][0])
    e = IPFI(ModelFunction(constant), "zero_one", names, seed=1)
    gc.collect()
    tracemalloc.start()
    marks = {}
    for t in range(1, n_large + 1):
        x, y = events[t % len(events)]
        e.explain_one(x, y)
        if t in (n_small, n_large):
            gc.collect()
            marks[t] = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    a, b = marks[n_small], marks[n_large]
    print(
        f"  traced memory after {n_small:,} events {a / 1024:.1f} KiB, after {n_large:,} "
        f"{b / 1024:.1f} KiB (ratio {b / a:.3f}) [{'flat' if b <= 1.05 * a else 'GROWING'}]"
    )


def concept_1(x: dict) -> int:
    """river's agrawal classification function 1."""
    age, salary = x["age"], x["salary"]
    if age < 40:
        return int(50000 <= salary <= 100000)
    if age < 60:
        return int(75000 <= salary <= 125000)
    return int(25000 <= salary <= 75000)


def table1(name: str, model, fn: int, n: int = 20_000, orderings: int = 5) -> None:
    """The paper's Experiment A: median (IQR) error over random orderings of one static data set.

    Also prints, per top feature, the mean and sd of the final iPFI estimate over the orderings
    (uniform sampling): a mean on the batch value with an sd of about sqrt(alpha / (2 - alpha))
    times the loss-difference sd means the error is the estimator's variance term, not bias.
    """
    if hasattr(model, "learn_one"):
        for x, y in agrawal(20_000, fn=fn, seed=100):
            model.learn_one(x, y)
    events = agrawal(n, fn=fn, seed=200)
    X, y = [x for x, _ in events], [t for _, t in events]
    f = ModelFunction(model)
    accuracy = sum(f(x) == yi for x, yi in zip(X, y, strict=True)) / n
    t = time.perf_counter()
    ref = batch_pfi(f, "zero_one", X, y, n_repeats=10, seed=0)
    errors: dict[str, list[float]] = {"geometric": [], "uniform": []}
    finals: list[dict] = []
    for o in range(orderings):
        order = list(range(n))
        random.Random(o).shuffle(order)
        for storage in errors:
            e = IPFI(ModelFunction(model), "zero_one", list(X[0]), alpha=0.001, n_samples=10, storage=storage, seed=o)
            for i in order:
                e.explain_one(X[i], y[i])
            errors[storage].append(pfi_error(e.values, ref))
            if storage == "uniform":
                finals.append(dict(e.values))

    def med_iqr(v: list[float]) -> str:
        q1, _, q3 = statistics.quantiles(v, n=4, method="inclusive")
        return f"{statistics.median(v):.3f} ({q3 - q1:.3f})"

    print(
        f"  {name:<24} acc {accuracy:.3f} | error uniform {med_iqr(errors['uniform'])}, geometric "
        f"{med_iqr(errors['geometric'])} | paper, agrawal LGBM 99%: 0.011 (.006), 0.010 (.006) "
        f"| {time.perf_counter() - t:.0f}s"
    )
    for feat in sorted(ref, key=ref.__getitem__, reverse=True)[:3]:
        vals = [fv[feat] for fv in finals]
        print(f"      {feat:<11} batch {ref[feat]:.4f}  iPFI mean {statistics.mean(vals):.4f} sd {statistics.stdev(vals):.4f}")


def main() -> None:
    """Prints, each against a baseline measured in the same run:

    1. the cost of iPFI outside model calls, per model evaluation, with a model that costs next
       to nothing (baseline: the same number of bare calls of that model); target <= 5 us;
    2. model evaluations per explained event (must be 1 + d * M);
    3. events/s of prequential explain-then-learn for ARF, Hoeffding tree and logistic
       regression on agrawal (9 features), against the same loop without explanations;
    4. traced memory (tracemalloc) after 10k and 100k events: must be flat (fixed-size storage).

    ``--table1`` adds the paper's Table 1 protocol (pre-trained static model, alpha = 0.001,
    M = 10 realizations, 20k agrawal events, batch PFI with 10 permutations, median and IQR of the
    error of the normalised vectors over random orderings) for the agrawal concept itself and
    for a frozen Hoeffding tree and logistic regression trained on 20k events (slow: several
    minutes per model).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer events (a smoke run)")
    parser.add_argument("--table1", action="store_true", help="add the paper's Table 1 protocol")
    parser.add_argument("--orderings", type=int, default=5, help="random orderings per Table 1 model")
    args = parser.parse_args()
    k = 10 if args.quick else 1

    print("iPFI overhead per model evaluation (negligible-cost model, agrawal, d=9)")
    events = agrawal(20_000 // k)
    for m in (1, 5):
        overhead(events, m)

    print("standard-error tracking per event (negligible-cost model), same run")
    for m in (1, 5):
        stderr_overhead(f"iPFI M={m}", lambda m=m: IPFI(ModelFunction(constant), "zero_one", list(events[0][0]),
                                                        alpha=0.001, n_samples=m, seed=1), events[:2200])
    ht = tree.HoeffdingTreeClassifier()
    for x, y in agrawal(5000, seed=3):
        ht.learn_one(x, y)
    stderr_overhead("iPFI M=1, Hoeffding tree", lambda: IPFI(ModelFunction(ht), "zero_one", list(events[0][0]),
                                                             alpha=0.001, seed=1), events[:1200])
    print("prequential throughput on agrawal (predict, explain, learn)")
    throughput("ARF (10 trees)", lambda: forest.ARFClassifier(seed=1), agrawal(1000 // k), 1)
    throughput("Hoeffding tree", lambda: tree.HoeffdingTreeClassifier(), agrawal(5000 // k), 1)
    throughput(
        "logistic regression",
        lambda: preprocessing.StandardScaler() | linear_model.LogisticRegression(optimizer=optim.SGD(0.1)),
        agrawal(5000 // k),
        1,
    )

    print("memory (tracemalloc, negligible-cost model)")
    memory(10_000 // k, 100_000 // k)

    if args.table1:
        print(
            "Table 1 protocol: static model, alpha=0.001, M=10, 20k agrawal events, batch PFI with 10 "
            f"permutations, median (IQR) over {args.orderings} orderings"
        )
        table1("agrawal concept 1 itself", concept_1, 1, orderings=args.orderings)
        table1(
            "Hoeffding tree on fn 2",
            tree.HoeffdingTreeClassifier(leaf_prediction="mc", grace_period=50),
            2,
            orderings=args.orderings,
        )
        table1(
            "logistic reg. on fn 6",
            preprocessing.StandardScaler() | linear_model.LogisticRegression(optimizer=optim.SGD(0.1)),
            6,
            orderings=args.orderings,
        )

if __name__ == "__main__":
    main()
