"""iPDP cost: overhead per model evaluation, evaluations per event, events/s on agrawal.

    python tests/benchmarks/bench_ipdp.py [--events N] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

from river import compose, forest, linear_model, preprocessing, tree
from river.datasets import synth
from streamxai.core.explainers.ipdp import IPDP
from streamxai.core.model import ModelFunction

NAMES = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]
CATEGORICAL = ["elevel", "car", "zipcode"]


def zero(x):
    return 0.0


def agrawal(n, seed=1):
    return list(synth.Agrawal(classification_function=1, seed=seed).take(n))


def overhead(events, repeats, categorical):
    data = [x for x, _ in agrawal(events)]
    best = []
    for _ in range(repeats):
        e = IPDP(ModelFunction(zero, output="value"), NAMES, alpha=0.001, categorical=categorical, seed=1)
        t0 = time.perf_counter()
        for x in data:
            e.explain_one(x)
        t_ipdp = time.perf_counter() - t0
        evals = e.n_evaluations
        # baseline: the same number of bare calls on prebuilt rows (one row per evaluation)
        per_event = evals // len(data)
        rows = [[{**x, "salary": 0.0} for _ in range(per_event)] for x in data]
        t0 = time.perf_counter()
        for rs in rows:
            for r in rs:
                zero(r)
        t_bare = time.perf_counter() - t0
        best.append((t_ipdp, t_bare, evals))
    t_ipdp, t_bare, evals = min(best)
    n = len(data)
    per_eval = (t_ipdp - t_bare) / evals * 1e6
    label = "numeric" if not categorical else "3 categorical"
    print(f"overhead, 9 features ({label}), grid_size=10, {n} events, best of {repeats}:")
    print(f"  evaluations/event        {evals / n:8.1f}")
    print(f"  iPDP      per event      {t_ipdp / n * 1e6:8.1f} us")
    print(f"  bare calls per event     {t_bare / n * 1e6:8.1f} us")
    print(f"  ratio iPDP / bare        {t_ipdp / t_bare:8.1f}x")
    print(f"  overhead per evaluation  {per_eval:8.2f} us   (target <= 5 us)")
    return per_eval


def models():
    return {
        "logistic regression": compose.Pipeline(preprocessing.StandardScaler(), linear_model.LogisticRegression()),
        "Hoeffding tree": tree.HoeffdingTreeClassifier(),
        "ARF (10 trees)": forest.ARFClassifier(n_models=10, seed=1),
    }


def river_throughput(events, warmup):
    stream = agrawal(warmup + events, seed=2)
    for name, model in models().items():
        for x, y in stream[:warmup]:
            model.learn_one(x, y)
        e = IPDP(
            ModelFunction(model, output="proba_of", target_class=1),
            NAMES,
            alpha=0.001,
            categorical=CATEGORICAL,
            seed=1,
        )
        test = stream[warmup:]
        t_explain = t_learn = 0.0
        for x, y in test:
            t0 = time.perf_counter()
            e.explain_one(x, y)
            t1 = time.perf_counter()
            model.learn_one(x, y)
            t_explain += t1 - t0
            t_learn += time.perf_counter() - t1
        per_event = e.n_evaluations / len(test)
        # model-only baseline for the same evaluations: predict_proba_one on the grid rows
        rows = [{**x, "salary": x["salary"] * 1.01} for x, _ in test]
        k = round(per_event)
        t0 = time.perf_counter()
        for r in rows:
            for _ in range(k):
                model.predict_proba_one(r)
        t_model = time.perf_counter() - t0
        n = len(test)
        print(
            f"{name:22s} events/s explain {n / t_explain:8.1f}  explain+learn {n / (t_explain + t_learn):8.1f}  "
            f"evals/event {per_event:5.1f}  model-only {n / t_model:8.1f} ev/s  "
            f"iPDP/model time {t_explain / t_model:5.2f}"
        )


def main():
    """Run on demand (not collected by pytest)::

    1. Overhead outside the model: iPDP over the 9 agrawal features with a model that costs
       almost nothing (a Python function returning 0.0), against a bare-call baseline measured
       in the same run: the same number of calls of the same function on prebuilt rows. The
       difference per evaluation is what iPDP itself costs (grid, rows, smoothing, storages,
       importance). Target: <= 5 us per evaluation.
    2. Events/s for real river models (ARF, Hoeffding tree, logistic regression) explaining
       ``proba_of`` class 1, prequentially (explain, then learn), against the model's own cost
       for the same evaluations (``predict_proba_one`` on the same rows) measured in the same run.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=3000, help="events for the overhead measurement")
    ap.add_argument("--model-events", type=int, default=300, help="explained events per river model")
    ap.add_argument("--warmup", type=int, default=2000, help="events each river model learns first")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    results = [overhead(args.events, args.repeats, None), overhead(args.events, args.repeats, CATEGORICAL)]
    print(f"overhead per evaluation: median {statistics.median(results):.2f} us")
    print(f"\nriver models on agrawal (9 features, 3 categorical), grid_size=10, {args.model_events} events:")
    river_throughput(args.model_events, args.warmup)


if __name__ == "__main__":
    main()
