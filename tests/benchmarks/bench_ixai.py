"""What a user gets from streamxai and from iXAI 0.1.3 on the same job: the whole loop a user
writes with each library (predict, explain, learn), CPU time per event, each library in its own
process and virtual environment, on the river release it supports.

    python tests/benchmarks/bench_ixai.py [--cases ipfi-hat,ipfi-logistic,ipfi-arf,isage-hat,isage-arf]
        [--events 4000] [--repeats 2] [--main-src DIR] [--ixai-venv DIR] [--write]

The job: agrawal (classification function 1, seed 7, 9 features), a fresh model, and per event
``model.predict_one(x)``, ``explainer.explain_one(x, y)``, ``model.learn_one(x, y)``; the CPU
time of the whole loop over ``--events`` events, divided by their number; the median of
``--repeats`` rounds, the libraries' runs interleaved (the order turns every round). iXAI is the
baseline of every row; the speed-up is iXAI's time over ours.

Settings, equal on both sides where the libraries allow it:

- models: ``HoeffdingAdaptiveTreeClassifier(grace_period=50, seed=1)``,
  ``LogisticRegression()``, ARF with 10 trees (``forest.ARFClassifier(n_models=10, seed=1)``
  on river 0.26, ``ensemble.AdaptiveRandomForestClassifier(n_models=10, seed=1)`` on river
  0.14, where iXAI's own example takes it from);
- storage: a geometric reservoir of 100 observations (iXAI's default for a dynamic setting,
  ours), smoothing ``alpha = 0.001`` (both defaults);
- iPFI: the label explained with the 0-1 loss (iXAI: ``model.predict_one`` and a plain
  function of its wrapped output, the cheapest loss iXAI takes; a river ``Accuracy`` metric
  costs it more), one sample per feature: ``1 + d`` = 10 evaluations an event on both sides;
- iSAGE: the probability of class 1 with the squared loss (Brier), interventional removal.
  iXAI evaluates ``1 + d m`` = 10 times an event (``m = 1``): its chain starts at the loss of
  the smoothed mean prediction and each coalition's loss is the loss of one imputed
  prediction, which overstates a convex loss by the imputation's variance (a Jensen gap that
  differs between coalitions, so the values are biased). Ours, the unbiased default, evaluates
  ``1 + 2 d`` = 19 times (``m = 2``: the U-statistic of two independent draws, the chain started
  at the all-imputed coalition; :class:`streamxai.ISAGE`).

iXAI's environment (``--ixai-venv``, default ``.venv-ixai`` in the repository) is made on first
use with this Python: ``ixai==0.1.3`` and ``river==0.14.0`` (built against numpy 1), the release iXAI 0.1.3 was written
against (its examples import ``river.ensemble.AdaptiveRandomForestClassifier`` and its loss
wrapper chains ``metric.update(...).revert(...)``, both gone in later releases). ``--main-src DIR``
adds our loop run by the code in DIR (``git archive main | tar -x -C DIR``, with its compiled
kernels built there) in the same rounds; ``--write`` writes ``docs/results/bench_ixai.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]
#: case -> (explainer, model)
CASES = {"ipfi-hat": ("ipfi", "hat"), "ipfi-logistic": ("ipfi", "logistic"), "ipfi-arf": ("ipfi", "arf"),
         "isage-hat": ("isage", "hat"), "isage-arf": ("isage", "arf")}
IXAI_PINS = ["ixai==0.1.3", "river==0.14.0"]
BUILD_PINS = ["numpy<2", "cython<3", "setuptools", "wheel", "setuptools-rust"]
RUN_PINS = ["pandas<2.3", "scipy<1.15"]


# -- the child: one library's loop, in whichever environment runs it -----------------------------
def make_model(kind: str):
    from river import linear_model, tree

    if kind == "hat":
        return tree.HoeffdingAdaptiveTreeClassifier(grace_period=50, seed=1)
    if kind == "logistic":
        return linear_model.LogisticRegression()
    try:
        from river.forest import ARFClassifier
    except ImportError:  # river 0.14
        from river.ensemble import AdaptiveRandomForestClassifier as ARFClassifier
    return ARFClassifier(n_models=10, seed=1)


def ours(explainer: str, model):
    import streamxai
    from streamxai.core.losses import BrierOf

    if explainer == "ipfi":
        fn = streamxai.ModelFunction(model, output="label")
        return streamxai.IPFI(fn, "zero_one", NAMES, alpha=0.001, storage_size=100, seed=1), fn
    fn = streamxai.ModelFunction(model, output="proba_of", target_class=1)
    return streamxai.ISAGE(fn, BrierOf(1), NAMES, alpha=0.001, storage_size=100, seed=1), fn


def ixai(explainer: str, model):
    import random
    import warnings

    import numpy as np
    from ixai.explainer import IncrementalPFI, IncrementalSage

    random.seed(1)  # iXAI draws from the global generators
    np.random.seed(1)
    warnings.simplefilter("ignore")
    if explainer == "ipfi":
        def zero_one(y, pred):  # iXAI wraps predict_one's label as {"output": float(label)}
            return 0.0 if pred["output"] == y else 1.0

        return IncrementalPFI(model.predict_one, zero_one, NAMES, smoothing_alpha=0.001, n_inner_samples=1)

    def brier_of_1(y, pred):  # predict_proba_one's dict
        d = (1.0 if y == 1 else 0.0) - pred.get(1, 0.0)
        return d * d

    return IncrementalSage(model.predict_proba_one, brier_of_1, NAMES, smoothing_alpha=0.001, n_inner_samples=1)


def use_source(src: str) -> None:
    """Import ``streamxai`` from the checkout at ``src`` (its folders mapped as setup.py maps them)."""
    import importlib.util

    folders = {"streamxai": "pipeline", "streamxai.agents": "agents", "streamxai.schemas": "schemas"}

    class Finder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name not in folders:
                return None
            where = Path(src) / folders[name]
            return importlib.util.spec_from_file_location(name, where / "__init__.py",
                                                          submodule_search_locations=[str(where)])

    sys.meta_path.insert(0, Finder)


def child(args: argparse.Namespace) -> None:
    if args.src:
        use_source(args.src)
    explainer, kind = CASES[args.case]
    data = [(x, y) for x, y in json.loads(Path(args.data).read_text())]
    model = make_model(kind)
    fn = None
    if args.child == "ixai":
        ex = ixai(explainer, model)
    else:
        ex, fn = ours(explainer, model)
    predict, explain, learn = model.predict_one, ex.explain_one, model.learn_one
    t0 = time.process_time()
    for x, y in data:
        predict(x)
        explain(x, y)
        learn(x, y)
    cpu = time.process_time() - t0
    out = {"per_event": cpu / len(data), "evaluations": None if fn is None else fn.n_evaluations / len(data)}
    if fn is not None:
        import streamxai

        out["source"] = str(Path(streamxai.__file__).parent)
        out["path"] = fn.path
    print(json.dumps(out))


# -- the parent ----------------------------------------------------------------------------------
def ixai_python(venv: Path) -> str:
    """The Python of iXAI's environment, made with this Python on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"making {venv} ({' '.join(IXAI_PINS)}; river 0.14 builds from source, a few minutes)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q"]
        # river 0.14 requires the numpy it was built with or later, and its Cython code multiplies
        # numpy 1's scalars with its own vectors: built here against numpy 1, the releases of its time
        subprocess.run([*pip, *BUILD_PINS], check=True)
        subprocess.run([*pip, "--no-cache-dir", "--no-build-isolation", *BUILD_PINS[:1], *RUN_PINS, *IXAI_PINS],
                       check=True)
    return str(python)


def run(python: str, who: str, case: str, data: str, src: str = "") -> dict:
    cmd = [python, __file__, "--child", who, "--case", case, "--data", data]
    if src:
        cmd += ["--src", src]
    env = dict(os.environ, STREAMXAI_BENCH_CHILD="1")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=tempfile.gettempdir())
    if done.returncode:
        raise RuntimeError(f"{who} {case} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--events", type=int, default=4000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--main-src", default="", help="also run our loop with the code in DIR (main's files)")
    ap.add_argument("--ixai-venv", default=str(ROOT / ".venv-ixai"))
    ap.add_argument("--write", action="store_true", help="write docs/results/bench_ixai.json")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--case", default="", help=argparse.SUPPRESS)
    ap.add_argument("--data", default="", help=argparse.SUPPRESS)
    ap.add_argument("--src", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # _results
    cases = args.cases.split(",")
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"unknown case {c!r}; one of {', '.join(CASES)}")
    from river import __version__ as river_version
    from river.datasets import synth

    python = ixai_python(Path(args.ixai_venv))
    events = [({k: float(v) for k, v in x.items()}, int(y))
              for x, y in synth.Agrawal(classification_function=1, seed=7).take(args.events)]
    runners = {"ixai": (python, ""), "ours": (sys.executable, "")}
    if args.main_src:
        runners["main"] = (sys.executable, str(Path(args.main_src).resolve()))
    print(f"iXAI 0.1.3 (river 0.14.0) against streamxai (river {river_version}): predict, explain, learn per event, "
          f"{args.events} events of agrawal, CPU time, median of {args.repeats}; load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}", flush=True)
    times: dict = {c: {w: [] for w in runners} for c in cases}
    info: dict = {}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(events, f)
        data = f.name
    try:
        for r in range(args.repeats):
            for case in cases:
                who = list(runners)
                who = who[r % len(who):] + who[:r % len(who)]  # the order turns every round
                for w in who:
                    py, src = runners[w]
                    out = run(py, w, case, data, src)
                    times[case][w].append(out["per_event"])
                    info[(case, w)] = out
    finally:
        os.unlink(data)
    rows = report(cases, times, info, runners)
    if args.write:
        from _results import RESULTS_DIR, write_results

        path = write_results(RESULTS_DIR / "bench_ixai.json", "bench_ixai",
                             "streamxai against iXAI 0.1.3: predict, explain and learn per event",
                             "iXAI 0.1.3 on river 0.14.0, the same loop, in the same run", rows)
        print(f"wrote {path}")


def report(cases: list, times: dict, info: dict, runners: dict) -> list:
    """Print the table; the rows of the results file (events per CPU second, iXAI's the baseline)."""
    from _results import result_row

    from_main = "main" in runners
    if from_main:
        src = {info[(c, "main")]["source"] for c in cases}
        print(f"main's code from {', '.join(sorted(src))}")
    head = f"{'case':<15}{'evals ours/iXAI':>16}{'iXAI us':>10}{'ours us':>10}{'speed-up':>10}"
    print(head + (f"{'main us':>10}{'ours/main':>11}" if from_main else ""))
    rows = []
    for case in cases:
        explainer = CASES[case][0]
        theirs, mine = (statistics.median(times[case][w]) for w in ("ixai", "ours"))
        evals = f"{info[(case, 'ours')]['evaluations']:.0f}/{1 + len(NAMES)}"
        line = f"{case:<15}{evals:>16}{theirs * 1e6:10.0f}{mine * 1e6:10.0f}{theirs / mine:9.2f}x"
        if from_main:
            old = statistics.median(times[case]["main"])
            line += f"{old * 1e6:10.0f}{old / mine:10.2f}x"
        print(line)
        rows.append(result_row(case, f"{explainer} events per CPU second", round(1 / mine, 1), "events/s",
                               round(1 / theirs, 1)))
    print("speed-up: iXAI's CPU time per event over ours (above 1: ours is faster); evals: model evaluations "
          "per explained event")
    return rows


if __name__ == "__main__":
    main()
