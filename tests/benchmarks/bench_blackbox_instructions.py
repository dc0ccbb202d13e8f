"""Our overhead on the black-box path in instructions, not seconds. Run on demand:

    python tests/benchmarks/bench_blackbox_instructions.py [--models hat,arf,logistic] [--events 100]
        [--warmup 1000]
"""

from __future__ import annotations

import argparse
import contextvars
import operator
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CHILD = "--child" in sys.argv
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_speed: the same stream and model
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_speed import MODELS, events, warm_explainer, with_path  # noqa: E402

PARTS = ("black_box", "wrapped", "ours")


def through_call(se, toggled: bool) -> None:
    """Make every call of ``se``'s model go through a wrapper (the explainers' functions rebuilt,
    as they bind the model's methods when built) that calls it within ``Context.run`` if
    ``toggled``, else directly; a call within one (river's ``predict_one`` calls
    ``predict_proba_one``) goes straight in."""
    model = se.model
    ctx = contextvars.copy_context()
    inside = [False]

    def wrapped(method):
        def call(*args, **kwargs):
            if inside[0]:
                return method(*args, **kwargs)
            inside[0] = True
            try:
                return ctx.run(method, *args, **kwargs) if toggled else method(*args, **kwargs)
            finally:
                inside[0] = False
        return call

    for name in ("predict_proba_one", "predict_one", "learn_one"):
        if hasattr(model, name):
            setattr(model, name, wrapped(getattr(model, name)))
    for ex in se.explainers:
        ex.model_fn.__setstate__(ex.model_fn.__getstate__())


def run_window(se, window: list, emit_every: int = 10) -> None:
    for i, (x, y) in enumerate(window):
        se.process_one(x, y, report=(i + 1) % emit_every == 0)


def child(name: str, part: str, n_events: int, warmup: int) -> None:
    """One counted process: the setup, then the window through ``operator.call``."""
    data = events(name, warmup + n_events)
    window = data[warmup:]
    se = with_path(warm_explainer(name, data[:warmup]), "off")
    if part != "black_box":
        through_call(se, toggled=part == "ours")
    operator.call(run_window, se, window)  # what callgrind counts (less the model's calls, for ours)


def count(name: str, part: str, args: argparse.Namespace, out_dir: str) -> int:
    """Instructions of one child process under callgrind."""
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_dir}/{name}-{part}.out",
           "--collect-atstart=no", "--toggle-collect=_operator_call", "--toggle-collect=context_run",
           sys.executable, __file__, "--child", name, "--part", part, "--events", str(args.events),
           "--warmup", str(args.warmup)]
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    m = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode or m is None:
        raise RuntimeError(f"{name} {part} under callgrind failed:\n{done.stderr[-3000:]}")
    return int(m.group(1))


def main() -> None:
    """``bench_speed.py`` gives the black-box path's overhead as its CPU time per event beyond the
    model's clean time, timed a few seconds apart. On shared machines the clock of a core moves
    by up to a third between such windows, so an overhead target of a few per cent cannot be
    decided from it.
    Instructions do not depend on the clock or on the other tenants: ``valgrind --tool=callgrind``
    counts the same total for the same program and input, whatever else the machine does.

    What is counted, per model, at the default explainers (iPFI, iSAGE, iPDP; 119 evaluations an
    event with agrawal's 9 features), from the same warm state as ``bench_speed.py``, the stream
    explainer on ``--events`` events with ``fast_path = off`` and reports every 10 events (as a
    worker does), each count in a child process under callgrind that collects only inside
    ``operator.call`` and outside ``Context.run`` (``--collect-atstart=no
    --toggle-collect=_operator_call --toggle-collect=context_run``; a toggle of callgrind nests only
    across different functions):

    - ``black box``: the window, called through ``operator.call``: all its instructions;
    - ``ours``: the same window with every call of the model (``predict_proba_one``,
      ``predict_one``, ``learn_one``) made through ``contextvars.Context.run``, which toggles the
      collection off inside it: every instruction outside the model, and the wrapper that makes
      those calls (a Python frame per call);
    - ``wrapped``: the same window with the same wrappers calling the model directly, all counted:
      the black box plus the wrappers;
    - ``model``: wrapped less ours (the wrappers cancel), the model's own work as it ran in the
      window (the same inputs, interleaved with the explainers' work as they are);
    - ``overhead``: black box less model, in % of the model: everything the explainers do around
      the calls (building each input, storages, smoothing, standard errors, reports).

    The children run the same setup (imports, warm-up, copies; not counted) with
    ``PYTHONHASHSEED=0``. Both parts are measured in runs of the same shape, not the model calls
    replayed alone in another process: instruction counts of Python code depend on where objects
    lie in memory (the interpreter's type-attribute cache is indexed by object addresses, as are
    dicts keyed by ``id``), so two processes of different shapes differ by a few % even for the
    same calls. Under callgrind Python runs about 50 times slower: the three processes
    of a model run side by side, and take a few minutes for HAT and logistic regression, more for ARF(10).
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="hat,arf,logistic")
    ap.add_argument("--events", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--part", default="black_box", choices=PARTS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.part, args.events, args.warmup)
        return
    import river

    print(f"river {river.__version__}, Python {sys.version.split()[0]}; instructions (valgrind --tool=callgrind), "
          f"{args.events} events after {args.warmup}, default explainers, reports every 10 events")
    with tempfile.TemporaryDirectory() as out_dir:
        for name in args.models.split(","):
            with ThreadPoolExecutor(len(PARTS)) as pool:  # the counts do not depend on sharing the cores
                n = dict(zip(PARTS, pool.map(lambda part, name=name: count(name, part, args, out_dir), PARTS),
                             strict=True))
            bb, model = n["black_box"], n["wrapped"] - n["ours"]
            per = 1 / args.events
            print(f"\n{MODELS[name][1]}")
            print(f"  black box (fast_path=off): {bb * per / 1e6:9.3f} M instructions/event")
            print(f"  the model's calls in it:   {model * per / 1e6:9.3f} M instructions/event")
            print(f"  ours, counted in the run:  {n['ours'] * per / 1e6:9.3f} M instructions/event = "
                  f"{n['ours'] / model * 100:5.1f} % of the model's (an upper bound: with the wrappers)")
            print(f"  ours, black box less model:{(bb - model) * per / 1e6:9.3f} M instructions/event = "
                  f"{(bb - model) / model * 100:5.1f} % of the model's (without them; two processes' difference)")

if __name__ == "__main__":
    main()
