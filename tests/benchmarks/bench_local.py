"""Local attributions' cost per explained prediction, with baselines from the same run (run on
demand, not collected by pytest).

    python tests/benchmarks/bench_local.py [--events N] [--brute-events K] [--models hat,arf,logistic]

For each model, on a seeded agrawal stream (function 1) at the worker's default settings
(background of 100 rows, the defaults of ``tests/benchmarks/bench_speed.py``), CPU time per
event of:

- ``local``: :class:`streamxai.LocalShapley.explain_one`, exact, on the model as it is before
  it learns the event;
- ``default explainers``: iPFI, iSAGE and iPDP of a :class:`StreamExplainer` with the same
  model (its own copy, fed the same events), measured as the time of ``process_one`` with
  explanations minus that of a twin that only learns;
- ``model``: the model's own ``predict_proba_one`` and ``learn_one`` on the event;
- ``brute force``: Shapley's formula over all 2^9 coalitions and the same background
  (``--brute-events`` events, the model called on every hybrid row);
- ``sampling``: permutation sampling in passes over the same background, doubling the passes
  until every value is within ``--tolerance`` of the exact one (on the brute-force events).

Ratios are printed against ``local``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from river.datasets import synth  # noqa: E402
from streamxai.core.attribution import LocalShapley, attribute, brute_force, permutation_shapley  # noqa: E402
from streamxai.core.attribution.sampling import pass_cost  # noqa: E402
from streamxai.plan import stream_explainer  # noqa: E402
from streamxai.settings import Settings  # noqa: E402

AGRAWAL = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]

#: name -> (model settings, label, warm-up events)
MODELS = {
    "hat": ({"model": "river.tree.HoeffdingAdaptiveTreeClassifier", "model_params": {"grace_period": 50}},
            "HoeffdingAdaptiveTreeClassifier(grace_period=50)", 3000),
    "arf": ({"model": "river.forest.ARFClassifier", "model_params": {"n_models": 10}},
            "ARFClassifier(n_models=10)", 3000),
    "logistic": ({"model": "river.linear_model.LogisticRegression", "model_params": {}},
                 "LogisticRegression()", 3000),
    "hat-mc": ({"model": "river.tree.HoeffdingAdaptiveTreeClassifier",
                "model_params": {"grace_period": 50, "leaf_prediction": "mc"}},
               "HoeffdingAdaptiveTreeClassifier(grace_period=50, leaf_prediction='mc')", 3000),
}


def events(n: int) -> list[tuple[dict, int]]:
    return [({k: float(v) for k, v in x.items()}, int(y))
            for x, y in synth.Agrawal(classification_function=1, seed=7).take(n)]


def settings(name: str) -> Settings:
    return Settings(features=AGRAWAL, alpha=0.001, storage_size=100, grid_size=10, emit_every=10,
                    **MODELS[name][0])


def cpu(fn, *args):
    t0 = time.process_time()
    out = fn(*args)
    return time.process_time() - t0, out


def run(name: str, n_events: int, n_brute: int, tolerance: float) -> None:
    s = settings(name)
    warm = MODELS[name][2]
    data = events(warm + n_events)
    explained, learned_only = stream_explainer(s, "bench"), stream_explainer(s, "bench")
    local = LocalShapley(explained.current_model, AGRAWAL, storage_size=s.storage_size, seed=1)
    for x, y in data[:warm]:
        explained.process_one(x, y, explain=False)
        learned_only.process_one(x, y, explain=False)
        local.learn_one(x)
    t_local = t_default = t_model = 0.0
    methods = set()
    for i, (x, y) in enumerate(data[warm:]):
        t, _ = cpu(local.explain_one, x)
        t_local += t
        methods.add(local.method)
        t, _ = cpu(learned_only.current_model.predict_proba_one, x)
        t_model += t
        report = i % s.emit_every == s.emit_every - 1
        t_with, _ = cpu(explained.process_one, x, y, True, report)
        t_without, _ = cpu(learned_only.process_one, x, y, False, report)
        t_default += t_with - t_without
        t_model += t_without  # the twin's process_one is the model's learn_one and bookkeeping
        local.learn_one(x)
    n = n_events
    print(f"\n{MODELS[name][1]} on agrawal, {n} events after {warm}, background {s.storage_size}, "
          f"method {sorted(methods)}")
    print(f"  local (exact)            {t_local / n * 1e3:9.3f} ms/event")
    print(f"  default explainers       {t_default / n * 1e3:9.3f} ms/event   local / default = {t_local / t_default:6.2f}")
    print(f"  model predict + learn    {t_model / n * 1e3:9.3f} ms/event   local / model   = {t_local / t_model:6.2f}")
    baselines(explained.current_model, local, data[warm + n:] or data[-n_brute:], n_brute, tolerance, t_local / n)


def baselines(model, local: LocalShapley, rows: list, n_brute: int, tolerance: float, per_local: float) -> None:
    background = local.background
    t_brute = t_sample = 0.0
    calls = 0
    for x, _ in rows[:n_brute]:
        t, exact = cpu(attribute, model, x, background, AGRAWAL)
        f = _probability_of(model, exact.target)
        t, (want, _) = cpu(brute_force, f, x, background, AGRAWAL)
        t_brute += t
        worst = max(abs(exact.values[k] - want[k]) for k in AGRAWAL)
        if worst > 1e-9:
            print(f"  !! exact differs from brute force by {worst:.2e}")
        passes = 1
        while True:
            budget = pass_cost(len(background), len(AGRAWAL)) + (passes - 1) * len(background) * (len(AGRAWAL) - 1)
            t, est = cpu(permutation_shapley, f, x, background, AGRAWAL, budget, passes)
            error = max(abs(v - exact.values[k]) for k, v in zip(AGRAWAL, est.values, strict=True))
            if error <= tolerance or passes >= 256:
                break
            passes *= 2
        t_sample += t
        calls += est.n_evaluations
    k = max(1, min(n_brute, len(rows)))
    print(f"  brute force (2^9 x {len(background)})  {t_brute / k * 1e3:9.1f} ms/event   brute / local   = "
          f"{t_brute / k / per_local:8.1f}")
    print(f"  sampling to {tolerance:g}       {t_sample / k * 1e3:9.1f} ms/event   sampling / local = "
          f"{t_sample / k / per_local:8.1f}   ({calls / k:.0f} model calls/event)")


def _probability_of(model, target):
    def f(row: dict) -> float:
        return model.predict_proba_one(row).get(target, 0.0)

    return f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=200, help="explained events per model")
    ap.add_argument("--brute-events", type=int, default=2, help="events for the brute-force and sampling baselines")
    ap.add_argument("--tolerance", type=float, default=1e-3, help="largest error of the sampled values")
    ap.add_argument("--models", default="hat,arf,logistic,hat-mc", help=f"comma-separated, of {', '.join(MODELS)}")
    args = ap.parse_args()
    for name in args.models.split(","):
        run(name, args.events, args.brute_events, args.tolerance)


if __name__ == "__main__":
    main()
