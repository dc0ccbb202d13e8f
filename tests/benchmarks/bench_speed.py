"""Explanation speed: the fast path against black-box evaluation and against what black-box
evaluation can reach at best, in one run on the same stream and model.

    python tests/benchmarks/bench_speed.py [--models hat,arf,logistic,htr] [--events 300]
        [--warmup 1000] [--repeats 3] [--main-src DIR] [--same-as DIR] [--kafka]
        [--kafka-events 8000] [--kafka-repeats 5] [--kafka-against KEY=VALUE] [--kafka-main PYTHON]
        [--kafka-only] [--kafka-backlog]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = "--child" in sys.argv
#: the checkout whose code a child runs (main's, for the same-run baseline); its folder on PYTHONPATH
SOURCE_ENV = "STREAMXAI_BENCH_SOURCE"
if not CHILD:  # this checkout's pipeline and the tests' helpers
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _results import RESULTS_DIR  # noqa: E402 - after the path set-up above

if CHILD and os.environ.get(SOURCE_ENV):
    from _source import use_source

    use_source(os.environ[SOURCE_ENV])  # `import streamxai` is that checkout's, not the editable install's

AGRAWAL = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]
FRIEDMAN = [f"x{i}" for i in range(10)]

#: name -> (settings of the stream, label)
MODELS = {
    "hat": ({"model": "river.tree.HoeffdingAdaptiveTreeClassifier", "model_params": {"grace_period": 50}},
            "HoeffdingAdaptiveTreeClassifier(grace_period=50), agrawal (the defaults)"),
    "arf": ({"model": "river.forest.ARFClassifier", "model_params": {"n_models": 10}},
            "ARFClassifier(n_models=10), agrawal"),
    "logistic": ({"model": "river.linear_model.LogisticRegression", "model_params": {}},
                 "LogisticRegression(), agrawal"),
    "htr": ({"model": "river.tree.HoeffdingTreeRegressor", "model_params": {"grace_period": 50},
             "features": FRIEDMAN, "task": "regression", "output": "value", "loss": "squared"},
            "HoeffdingTreeRegressor(grace_period=50), Friedman"),
}


def stream_settings(name: str) -> dict:
    fields = {"features": AGRAWAL, "alpha": 0.001, "storage_size": 100, "grid_size": 10, "emit_every": 10}
    fields.update(MODELS[name][0])
    return fields


def events(name: str, n: int) -> list[tuple[dict, object]]:
    from river.datasets import synth

    if name == "htr":
        return [({f"x{k}": v for k, v in x.items()}, y) for x, y in synth.Friedman(seed=7).take(n)]
    return [({k: float(v) for k, v in x.items()}, int(y)) for x, y in synth.Agrawal(classification_function=1,
                                                                                      seed=7).take(n)]


def warm_explainer(name: str, warmup: list):
    """The stream's explainer after ``warmup`` events learnt and stored, none explained."""
    from streamxai.plan import stream_explainer
    from streamxai.settings import Settings

    se = stream_explainer(Settings(**stream_settings(name)), "bench")
    for x, y in warmup:
        se.process_one(x, y, explain=False)
    return se


def explain_window(se, window: list, emit_every: int = 10) -> tuple[float, list]:
    """CPU seconds to explain and learn ``window`` (reports every ``emit_every`` events)."""
    out = []
    t0 = time.process_time()
    for i, (x, y) in enumerate(window):
        out.append(se.process_one(x, y, report=(i + 1) % emit_every == 0))
    return time.process_time() - t0, out


def digest(out: list) -> str:
    """A hash of every field of every reported value of a window (``--same-as``)."""
    import hashlib

    fields = ("explainer", "feature", "value", "n_explained", "curve", "stderr", "n_seen", "var_factor")
    rows = [(*(getattr(v, f, None) for f in fields), repr(getattr(v, "block", None)))
            for values in out for v in values]
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def child_main(args: argparse.Namespace) -> None:
    """Run by ``--main-src``: the in-process loop with the code in that checkout (main's; ``_source.py``); with
    ``--same-as``, the digests of that code's explanations on either path instead."""
    data = events(args.child, args.warmup + args.events)
    warm = warm_explainer(args.child, data[:args.warmup])
    if args.digests:
        digests = {m: digest(explain_window(with_path(warm, m), data[args.warmup:])[1]) for m in ("auto", "off")}
        print(json.dumps({**digests, "ran": ran()}))
        return
    if args.child_path:  # one path (fast_path = auto or off), timed as this checkout's rounds are
        got = lockstep(warm, data[args.warmup:], (args.child_path,), args.child != "htr",
                       limit=args.child_path == "off")
        print(json.dumps({"per_event": got[args.child_path], "limit": got.get("limit"), "ran": ran()}))
        return
    # the stream explainer as built, its default path
    times = [explain_window(pickle.loads(pickle.dumps(warm)), data[args.warmup:])[0] for _ in range(args.repeats)]
    print(json.dumps({"per_event": statistics.median(times) / args.events, "ran": ran()}))


def ran() -> dict:
    """Which code a child ran: the checkout ``streamxai`` came from and its bookkeeping path."""
    from _source import source_of
    from streamxai.core import kernels

    return {"source": source_of(), "kernels": kernels.PATH}


def child_output(done: subprocess.CompletedProcess, src: str) -> dict:
    """A child's last line, after checking that it ran the code in ``src``, with the same
    bookkeeping path (compiled kernels or Python) as this process: a comparison of the code,
    not of whether its kernels are built."""
    from streamxai.core import kernels

    out = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(out["ran"]["source"]) != Path(src).resolve():
        raise RuntimeError(f"the child ran the code in {out['ran']['source']}, not in {src}")
    if out["ran"]["kernels"] != kernels.PATH:
        raise RuntimeError(f"the code in {src} ran its bookkeeping on the {out['ran']['kernels']} path, this "
                           f"checkout on the {kernels.PATH} path; build its kernels (pip install -e {src})")
    return out


def child_run(src: str, name: str, args: argparse.Namespace, *extra: str) -> dict:
    """What :func:`child_main` printed, run by the code in ``src`` in a child process."""
    env = dict(os.environ, PYTHONPATH=src, **{SOURCE_ENV: src})
    cmd = [sys.executable, __file__, "--child", name, "--events", str(args.events), "--warmup", str(args.warmup),
           "--repeats", "1", *extra]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=src, check=False)
    if done.returncode:
        raise RuntimeError(f"main's code failed:\n{done.stderr[-2000:]}")
    return child_output(done, src)


def worker_stream(name: str, n: int) -> tuple[list, dict]:
    """``n`` events of one stream as a worker takes them, and the settings of the worker's runs
    (``--kafka``)."""
    from streamxai.schemas import FeatureEvent

    evs = [FeatureEvent(stream_id="bench", seq=i, ts=1.7e9 + i, x=x, y=y) for i, (x, y) in enumerate(events(name, n))]
    return evs, {**stream_settings(name), "explain_groups": 1, "session_timeout_s": 30.0}


def with_path(warm, mode: str):
    se = pickle.loads(pickle.dumps(warm))
    for ex in se.explainers:
        ex.model_fn.fast_path = mode
    return se


def evaluations_per_event(se, before: dict, n: int) -> float:
    return sum(ex.model_fn.n_evaluations - before[ex.name] for ex in se.explainers) / n


def black_box_limit(model, window: list, per_event_evals: float, classifier: bool, k: int = 5) -> tuple[float, float, float]:
    """(seconds per event, predict per call, learn per event) of the model on its own: a copy
    made as the explainers' is (pickled and read back; a ``deepcopy`` lays a tree's nodes out
    in memory so that it predicts 6-13 % faster than the model that learnt them, or than any
    pickled copy, which would count as our overhead).

    One clock reading per window, not per event: a reading of ``time.process_time`` costs about
    0.9 us here, and read around each event's ``k`` predicts it added a fifth of logistic
    regression's 0.8 us predict to the clean time, which made our overhead look 20 points
    smaller than it was. The window is timed twice on fresh copies,
    ``k`` predicts and a learn per event, then the learns alone; the predicts are the difference."""
    blob = pickle.dumps(model)
    m = pickle.loads(blob)
    predict = m.predict_proba_one if classifier else m.predict_one
    learn = m.learn_one
    t0 = time.process_time()
    for x, y in window:
        for _ in range(k):
            predict(x)
        learn(x, y)
    both = time.process_time() - t0
    learn = pickle.loads(blob).learn_one
    t0 = time.process_time()
    for x, y in window:
        learn(x, y)
    tl = time.process_time() - t0
    predict_s, learn_s = max(both - tl, 0.0) / (k * len(window)), tl / len(window)
    return per_event_evals * predict_s + learn_s, predict_s, learn_s


def same_as(src: str, name: str, args: argparse.Namespace) -> None:
    """Print whether the code in ``src`` explains the window exactly as this checkout does
    (every field of every reported value, on either path): run in a child process."""
    env = dict(os.environ, PYTHONPATH=src, **{SOURCE_ENV: src})
    cmd = [sys.executable, __file__, "--child", name, "--events", str(args.events), "--warmup", str(args.warmup),
           "--digests"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=src, check=False)
    if done.returncode:
        raise RuntimeError(f"the code in {src} failed:\n{done.stderr[-2000:]}")
    theirs = child_output(done, src)
    data = events(name, args.warmup + args.events)
    warm = warm_explainer(name, data[:args.warmup])
    for mode in ("auto", "off"):
        ours = digest(explain_window(with_path(warm, mode), data[args.warmup:])[1])
        print(f"  explanations ({'fast path' if mode == 'auto' else 'black box'}) the same as the code in {src}: "
              f"{'yes, bit for bit' if ours == theirs[mode] else 'NO'}")


def lockstep(warm, window: list, modes: tuple[str, ...], classifier: bool, chunk: int = 50,
             k: int = 5, limit: bool = True) -> dict:
    """One round: the stream explainer on each path of ``modes`` (copies of ``warm``) and the
    model alone (:func:`black_box_limit`'s two copies: ``k`` predicts and a learn per event,
    and the learns alone), all moving through ``window`` together, ``chunk`` events at a time,
    in alternating order from one chunk to the next.

    On these shared machines a core's CPU clock runs up to a third slower or faster from one
    second to the next (on a virtual machine, time the host gives other tenants can count as
    ours), so a black box timed over its whole window and its limit timed after it can differ
    by tens of per cent for no reason of theirs; taken in turns of ``chunk`` events, each sees
    the same seconds. A chunk of 50 events is a few milliseconds of the cheapest model, against
    the microsecond of a clock reading at each end. Returns CPU seconds per event for each mode, ``limit``,
    ``predict`` (per call) and ``learn`` (unless ``limit`` is false: the modes alone), the
    evaluations per event (of the black box when it is among ``modes``) and each mode's
    reported values."""
    ses = {m: with_path(warm, m) for m in modes}
    first = ses["off"] if "off" in ses else ses[modes[0]]
    before = {ex.name: ex.model_fn.n_evaluations for ex in first.explainers}
    # the model the explainers evaluate, as it is after the warm-up (``warm.model`` is its untrained prototype)
    blob = pickle.dumps(warm.current_model)
    m_both, m_learns = pickle.loads(blob), pickle.loads(blob)
    predict = m_both.predict_proba_one if classifier else m_both.predict_one
    learn_both, learn_alone = m_both.learn_one, m_learns.learn_one
    spent = dict.fromkeys((*modes, "both", "learns") if limit else modes, 0.0)
    outs: dict[str, list] = {m: [] for m in modes}
    order = list(spent)
    clock = time.process_time
    for c, start in enumerate(range(0, len(window), chunk)):
        part = window[start:start + chunk]
        for key in order if c % 2 == 0 else order[::-1]:
            if key == "both":
                t0 = clock()
                for x, y in part:
                    for _ in range(k):
                        predict(x)
                    learn_both(x, y)
            elif key == "learns":
                t0 = clock()
                for x, y in part:
                    learn_alone(x, y)
            else:
                se, out = ses[key], outs[key]
                t0 = clock()
                for i, (x, y) in enumerate(part, start):
                    out.append(se.process_one(x, y, report=(i + 1) % 10 == 0))
            spent[key] += clock() - t0
    n = len(window)
    evals = evaluations_per_event(first, before, n)
    res: dict = {m: spent[m] / n for m in modes}
    res.update(evals=evals, outs=outs)
    if limit:
        predict_s, learn_s = max(spent["both"] - spent["learns"], 0.0) / (k * n), spent["learns"] / n
        res.update(limit=evals * predict_s + learn_s, predict=predict_s, learn=learn_s)
    if "auto" in ses and ses["auto"].evaluation_path != "fast":
        raise AssertionError("fast_path = auto did not take the fast path")
    return res


def in_process(name: str, args: argparse.Namespace) -> dict:
    """Per event, the median over ``--repeats`` rounds; each round times the black box, the
    fast path and the model alone in turns of 50 events (:func:`lockstep`), then main's code
    when given (its default path and its black box against its own limit, timed the same way
    in a child process)."""
    data = events(name, args.warmup + args.events)
    window = data[args.warmup:]
    warm = warm_explainer(name, data[:args.warmup])
    times: dict[str, list[float]] = {"off": [], "auto": [], "limit": [], "predict": [], "learn": [], "main": [],
                                     "main_off": [], "main_limit": []}
    outs: dict[str, list] = {}
    evals = 0.0
    for r in range(args.repeats):
        got = lockstep(warm, window, ("off", "auto") if r % 2 == 0 else ("auto", "off"), name != "htr")
        for key in ("off", "auto", "limit", "predict", "learn"):
            times[key].append(got[key])
        evals, outs = got["evals"], got["outs"]
        if args.main_src:  # its default path and its black box, in alternating order
            for key in (("main", "main_off") if r % 2 == 0 else ("main_off", "main")):
                ran_main = child_run(args.main_src, name, args, "--child-path", "off" if key == "main_off" else "auto")
                times[key].append(ran_main["per_event"])
                if key == "main_off":
                    times["main_limit"].append(ran_main["limit"])
    if outs["off"] != outs["auto"]:
        raise AssertionError(f"{name}: the fast path's explanations differ from the black box's")
    res = {k: statistics.median(v) for k, v in times.items() if v}
    res["evals"] = evals
    # each round's black box against its own limit, timed in the same turns: the figure to read
    res["bb_ratios"] = sorted(limit / off for off, limit in zip(times["off"], times["limit"], strict=True))
    res["main_bb_ratios"] = sorted(limit / off for off, limit in zip(times["main_off"], times["main_limit"],
                                                                     strict=True))
    res["overheads"] = sorted(1 / x - 1 for x in res["bb_ratios"])
    return res


def print_in_process(name: str, res: dict, args: argparse.Namespace) -> None:
    rate = {k: 1.0 / res[k] for k in ("off", "auto", "limit", "main", "main_off") if k in res}
    print(f"\n{MODELS[name][1]}: {res['evals']:.0f} evaluations/event, {args.events} events after {args.warmup}, "
          f"median of {args.repeats}")
    print(f"  model alone: predict {res['predict'] * 1e6:.1f} us/call, learn {res['learn'] * 1e6:.1f} us/event")
    if "main" in rate:
        mine = res["main_bb_ratios"]
        print(f"  main's code (today)       {rate['main']:9.1f} events/s   (its default path)")
        print(f"  main's black box          {rate['main_off']:9.1f} events/s   "
              f"{statistics.median(mine):5.2f}x its limit (median of the rounds, each against the limit timed "
              f"in its turns: {', '.join(f'{x:.2f}' for x in mine)})")
    line = f"  black box (fast_path=off) {rate['off']:9.1f} events/s   {rate['off'] / rate['limit']:5.2f}x the limit"
    if "main_off" in rate:
        line += f", {rate['off'] / rate['main_off']:5.2f}x main's black box"
    print(line)
    print(f"  black-box limit           {rate['limit']:9.1f} events/s   (evaluations x predict + learn)")
    line = (f"  fast path (auto)          {rate['auto']:9.1f} events/s   {rate['auto'] / rate['off']:5.2f}x black box, "
            f"{rate['auto'] / rate['limit']:5.2f}x the limit")
    if "main" in rate:
        line += f", {rate['auto'] / rate['main']:5.2f}x main"
    print(line)
    overhead = res["off"] - res["limit"]
    model_time = res["limit"]
    print(f"  black-box overhead: {overhead * 1e6:7.1f} us/event = {overhead / model_time * 100:5.1f} % of model time")
    rounds = res["overheads"]
    print(f"  black-box overhead per round (its black box against its own limit): median "
          f"{statistics.median(rounds) * 100:5.1f} %, from {rounds[0] * 100:.1f} to {rounds[-1] * 100:.1f} % "
          f"over {len(rounds)} rounds")
    ratios = res["bb_ratios"]
    print(f"  black box against the limit, per round: median {statistics.median(ratios):5.2f}x "
          f"({', '.join(f'{x:.2f}' for x in ratios)})")


def main() -> None:
    """For each model, at the default explainers (iPFI, iSAGE, iPDP; alpha 0.001, reservoirs of
    100, grid 10), after ``--warmup`` events learnt (storages filled, nothing explained), the
    next ``--events`` events are explained and learnt with reports every ``emit_every`` (10)
    events, as a worker does, from copies of the same state. It prints, in events/s of CPU time
    (``time.process_time``, median of ``--repeats`` rounds, each round timing them in turns of
    50 events, :func:`lockstep`):

    - ``black box``: ``fast_path = off``, the model called for every row;
    - ``fast path``: ``fast_path = auto`` (the values are checked equal to the black box's);
    - ``black-box limit``: what black-box evaluation reaches with no overhead of ours at all:
      evaluations per event x the model's own ``predict_proba_one`` (``predict_one``) time per
      call + its ``learn_one`` time per event, both measured on a copy of the same model (made
      as the explainers' copy is: pickled) over the same events;
    - ``main``, with ``--main-src DIR``: the same loop run by the code in DIR (a copy of main's
      files with its kernels built, e.g. main's worktree) in a child process that imports
      ``streamxai`` from DIR (``_source.py``), on its default path and on the black box (its
      black box against the same limit: the figure the black box is judged by, before and after);

    and the ratios between them. ``--same-as DIR`` checks that the code in DIR (e.g. main's)
    gives exactly this checkout's explanations, every field of every report, on either path
    (:func:`same_as`). ``--kafka`` adds, per model, one worker on a local broker
    (``fast_path = auto``) against the in-process loop doing that worker's work per event: its
    model, explain and change handlers, handler to handler, with checkpoints, in this process
    (events/s of wall time, and of CPU time: the worker process's from ``/proc``; the worker's
    clock starts when the broker has acknowledged the first event, not while the benchmark's
    producer starts).

    How ``--kafka`` measures, and why:

    - **8,000 events a run.** The change handler does not watch a stream's first 1,000 events
      (``change_warmup``) and its windows fill after them, so an event costs least there. The worker's fixed start-up (each internal hop's first fetch) weighs on a short run too. A
      stream running for hours is past both.
      ``--kafka-events 2000`` gives the quicker, harsher figure.
    - **Each round: the in-process loop and the reference, the worker, the reference and the
      in-process loop again**; the mean of the two loops is the round's baseline, the mean of the two
      references (``streamxai.reference.run_in_process``: the same join, explainers and change
      detector, no messages, metrics or checkpoints) the core's own work, against which the
      worker's and the loop's CPU are also given. A core of these shared machines runs the same loop up to a
      third faster or slower from one minute to the next, so the figure to read is the median of the
      rounds' paired ratios, printed with its middle half.
    - **Nothing of the benchmark's own on the two cores while the worker is timed** but a look at
      its metrics page now and then (``_worker_runs._change_done``), not a read of the
      explanations topic, which would put messages through the broker and this process.
    - **Where the worker's main thread spent the run** (``/proc``): on a core, waiting for one
      (the broker, the clients' threads and this process share the cores), and neither (waiting for
      a fetch, or for the GIL while aiokafka's consumer thread parses one).
    - ``--kafka-backlog``: the events are all on the broker before the worker starts, and its clock
      starts at its first prediction rather than at the broker's first event, as for a worker
      that starts behind a backlog (start-up and group join are not counted either way).
    - ``--kafka-against KEY=VALUE[,KEY=VALUE]``: every round also runs a worker with other settings
      (in turn first or second), to compare a setting in the same rounds; ``--kafka-main PYTHON``
      likewise a worker run by another interpreter, with the code its environment imports (another
      checkout's), against the same in-process loop and this checkout's worker.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="hat,arf,logistic,htr")
    ap.add_argument("--events", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--main-src", default="", help="a copy of main's files: also time the same loop with that code")
    ap.add_argument("--same-as", default="", help="also check that the code in this directory explains identically")
    ap.add_argument("--digests", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kafka", action="store_true", help="also one Kafka worker against its work in-process")
    ap.add_argument("--kafka-events", type=int, default=8000)
    ap.add_argument("--kafka-repeats", type=int, default=5)
    ap.add_argument("--kafka-backlog", action="store_true",
                    help="the events on the broker before the worker starts; its clock starts at its first prediction")
    ap.add_argument("--kafka-only", action="store_true", help="skip the in-process comparisons of the paths")
    ap.add_argument("--kafka-against", default="",
                    help="also, each round, a worker with these settings (KEY=VALUE[,KEY=VALUE]; e.g. output_linger_ms=5)")
    ap.add_argument("--kafka-main", default="", metavar="PYTHON",
                    help="also, each round, a worker run by this interpreter, with the code its environment imports "
                         "(e.g. /work/main/.venv/bin/python: main's worker against this checkout's in the same rounds)")
    ap.add_argument("--results", default=str(RESULTS_DIR / "bench_speed.json"), metavar="FILE",
                    help="write the in-process rates to this results file for the docs' performance page "
                         "(default docs/results/bench_speed.json; '' writes none)")
    ap.add_argument("--kafka-results", default=str(RESULTS_DIR / "bench_worker.json"), metavar="FILE",
                    help="with --kafka: write the worker's and the handlers' rates against the in-process reference "
                         "to this results file (default docs/results/bench_worker.json; '' writes none)")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--child-path", default="", choices=("", "auto", "off"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args)
        return
    names = [m for m in args.models.split(",") if m]
    unknown = set(names) - set(MODELS)
    if unknown:
        ap.error(f"unknown models {sorted(unknown)}; choose from {sorted(MODELS)}")
    import river

    print(f"river {river.__version__}, Python {sys.version.split()[0]}; CPU time per event in one process")
    measured = {}
    for name in names if not args.kafka_only else ():
        measured[name] = in_process(name, args)
        print_in_process(name, measured[name], args)
        if args.same_as:
            same_as(args.same_as, name, args)
    if measured and args.results:
        print(f"results: {write_speed_results(args.results, measured, args)}")
    if args.kafka:
        kafka(names, args)


def write_speed_results(path: str, measured: dict[str, dict], args: argparse.Namespace) -> Path:
    """The in-process rates of each model as a results file (``_results.py``): the fast path and
    the black box, each against the black-box limit measured in the same rounds."""
    from _results import result_row, write_results

    rows = []
    for name, res in measured.items():
        label = MODELS[name][1]
        limit = 1.0 / res["limit"]
        rows.append(result_row(label, "fast path (fast_path = auto)", 1.0 / res["auto"], "events/s", baseline=limit))
        rows.append(result_row(label, "black box (fast_path = off)", 1.0 / res["off"], "events/s", baseline=limit))
    return write_results(
        path, "bench_speed",
        f"Explanation speed in one process (iPFI, iSAGE, iPDP; {args.events} events after {args.warmup}, "
        f"median of {args.repeats} rounds)",
        "the black-box limit of the same model in the same rounds: model evaluations per event times its own "
        "predict time, plus its learn time (CPU time; a ratio above 1 is faster than any black-box explainer can be)",
        rows)


def kafka(names: list[str], args: argparse.Namespace) -> None:
    """One worker on a local broker against its work done in this process, per model: the
    medians of ``--kafka-repeats`` rounds (each round runs the in-process loop, the worker and
    the in-process loop again, the mean of the two loops its baseline)."""
    import tempfile

    from _worker_runs import broker_for, in_process_worker, kafka_workers, reference_run
    from helpers.pipeline_runs import make_settings

    tmp = tempfile.mkdtemp(prefix="streamxai-bench-speed-")
    measured: dict[str, dict[str, float]] = {}  # model -> CPU seconds an event: reference, handlers, worker
    print(f"\nOne Kafka worker (roles model, explain, change; fast_path = auto; {args.kafka_events} events of one "
          f"stream) against the same handlers in this process (wall time; CPU time of the worker process); "
          f"median of {args.kafka_repeats}")
    with broker_for(tmp) as bootstrap:
        for name in names:
            evs, fields = worker_stream(name, args.kafka_events)
            counters: dict[str, float] = {}
            # the modules a worker imports as it starts, before its clock (its model's, scipy's
            # through river.optim: 659 modules, about 1 s of CPU): imported here before the rounds,
            # or the first round's in-process loop pays them (1,193 against 665 us an event)
            in_process_worker(make_settings(bootstrap, f"{tmp}/{name}-warm-up", **fields), evs[:20])
            # and one worker's run, not timed: a fresh broker's JVM compiles its request paths as the
            # first runs go through it, on the cores the worker runs on (its compiler threads took
            # 0.6-1.1 s of CPU per run of 2,000 events over the first seven runs with C2, see
            # _JVM_FLAGS in pipeline/local/broker.py), which is the broker's start-up, not the worker's cost
            kafka_workers(make_settings(bootstrap, f"{tmp}/{name}-warm-up-worker", **fields), evs, 1, tmp)
            # label -> (settings the worker runs with beyond the stream's, the interpreter that runs it: "" this one)
            variants: dict[str, tuple[dict, str]] = {"": ({}, "")}
            if args.kafka_against:
                variants[f" ({args.kafka_against})"] = (dict(kv.split("=", 1) for kv in args.kafka_against.split(",")), "")
            if args.kafka_main:
                variants[" (main)"] = ({}, args.kafka_main)
            runs: dict[str, dict[str, list]] = {v: {"wall_in": [], "cpu_in": [], "wall_k": [], "cpu_k": [],
                                                    "broker": [], "sched": [], "cpu_ref": []} for v in variants}
            for r in range(args.kafka_repeats):
                # the in-process loop before and after the worker(s), their mean the baseline: a
                # machine that slows or speeds up over the round moves both sides alike
                before = in_process_worker(make_settings(bootstrap, f"{tmp}/{name}-local{r}a", **fields), evs)
                ref_before = reference_run(make_settings(bootstrap, f"{tmp}/{name}-ref{r}a", **fields), evs)
                timed = {}
                for v, (extra, python) in list(variants.items())[::1 if r % 2 == 0 else -1]:  # each first every other round
                    s = make_settings(bootstrap, f"{tmp}/{name}-worker{r}{len(timed)}", **fields)
                    s = s.replace(**{k: type(getattr(s, k))(x) for k, x in extra.items()})
                    timed[v] = kafka_workers(s, evs, 1, tmp, counters=counters if not v else None,
                                             broker_cpu=runs[v]["broker"], sched=runs[v]["sched"], python=python,
                                             backlog=args.kafka_backlog)
                ref_after = reference_run(make_settings(bootstrap, f"{tmp}/{name}-ref{r}b", **fields), evs)
                after = in_process_worker(make_settings(bootstrap, f"{tmp}/{name}-local{r}b", **fields), evs)
                for v, (wall_k, cpu_k) in timed.items():
                    runs[v]["cpu_ref"].append((ref_before[1] + ref_after[1]) / 2)
                    for k, x in zip(("wall_in", "cpu_in", "wall_k", "cpu_k"),
                                    ((before[0] + after[0]) / 2, (before[1] + after[1]) / 2, wall_k, cpu_k), strict=True):
                        runs[v][k].append(x)
            n = len(evs)
            for v, rounds in runs.items():
                _print_kafka_rounds(f"{name}{v}", rounds, n)
            if runs[""]["cpu_ref"]:
                measured[name] = {k: statistics.median(runs[""][k]) / n for k in ("cpu_ref", "cpu_in", "cpu_k")}
                for k in ("cpu_in", "cpu_k"):
                    measured[name][f"{k}_over_ref"] = statistics.median(_over_ref(runs[""], k))
            if len(runs) > 1:  # each variant's worker against this code's, paired within the rounds
                for v, rounds in list(runs.items())[1:]:
                    paired = sorted(a / b for a, b in zip(rounds["cpu_k"], runs[""]["cpu_k"], strict=True))
                    print(f"    worker CPU{v} / this code's worker, paired by round: median {statistics.median(paired):.3f} "
                          f"(rounds {', '.join(f'{x:.2f}' for x in paired)})")
            if counters:  # taken from the straight runs only
                print(f"    message operations per event: {message_operations(counters, n * args.kafka_repeats)}")
    if measured and args.kafka_results:
        print(f"results: {write_worker_results(args.kafka_results, measured, args)}")


def write_worker_results(path: str, measured: dict[str, dict[str, float]], args: argparse.Namespace) -> Path:
    """``--kafka``'s rates as a results file (``_results.py``): per model, one worker and its
    handlers in process, each against the in-process reference of the same rounds (events per
    CPU second, the medians of the rounds; a ratio of 0.8 is a worker at 1.25 times the
    reference's CPU an event), and each one's CPU an event over the reference's, the median of
    the rounds' own ratios (the figure the benchmark judges by)."""
    from _results import result_row, write_results

    rows = []
    for name, cpu in measured.items():
        label = MODELS[name][1]
        ref = 1.0 / cpu["cpu_ref"]
        rows.append(result_row(label, "one Kafka worker (model, explain, change), CPU time", 1.0 / cpu["cpu_k"],
                               "events/s", baseline=ref))
        rows.append(result_row(label, "the worker's handlers in one process, CPU time", 1.0 / cpu["cpu_in"],
                               "events/s", baseline=ref))
        rows.append(result_row(label, "the worker's CPU an event over the reference's, median of the rounds",
                               round(cpu["cpu_k_over_ref"], 3), "x"))
        rows.append(result_row(label, "the handlers' CPU an event over the reference's, median of the rounds",
                               round(cpu["cpu_in_over_ref"], 3), "x"))
    return write_results(
        path, "bench_speed --kafka",
        (f"One worker started behind a backlog of {args.kafka_events} events of one stream, timed from its first prediction, "
         if args.kafka_backlog else f"One worker on a backlog of {args.kafka_events} events of one stream, ") +
        f"broker on the same machine (iPFI, iSAGE, iPDP; median of {args.kafka_repeats} rounds)",
        "the in-process reference (streamxai.reference.run_in_process: the same join, explainers and change "
        "detector, no messages) in the same rounds, CPU time", rows)


def _over_ref(rounds: dict[str, list], key: str) -> list[float]:
    """Each round's CPU of ``key`` over the same round's reference's, sorted: the machine moves a
    round's sides alike, so the median of these pairs is the figure to judge by, not a ratio of
    the medians (rounds that differ by a third would make those disagree)."""
    return sorted(a / b for a, b in zip(rounds[key], rounds["cpu_ref"], strict=True))


def _print_kafka_rounds(label: str, rounds: dict[str, list], n: int) -> None:
    """One worker's rounds against the in-process loop's (``kafka``), ``n`` events a round."""
    wall_in, cpu_in, wall_k, cpu_k = (statistics.median(rounds[k]) for k in ("wall_in", "cpu_in", "wall_k", "cpu_k"))
    ratios = sorted(a / b for a, b in zip(rounds["wall_in"], rounds["wall_k"], strict=True))
    print(f"  {label:9s} in-process {n / wall_in:8.1f} events/s ({n / cpu_in:8.1f} per CPU s); "
          f"Kafka worker {n / wall_k:8.1f} events/s ({n / cpu_k:8.1f} per CPU s); "
          f"ratio {wall_in / wall_k:4.2f} (CPU {cpu_in / cpu_k:4.2f}); ratios of the rounds "
          f"{', '.join(f'{x:.2f}' for x in ratios)}")
    # each round pairs the two a few seconds apart, while a core of these shared machines runs
    # the same loop up to a third faster or slower from one minute to the next: the median of
    # the paired ratios is the figure to read, with its middle half
    q1, med, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
    print(f"    median of the rounds' ratios {med:.3f} (middle half {q1:.2f}-{q3:.2f}, "
          f"{sum(x >= 0.9 for x in ratios)} of {len(ratios)} rounds at 0.9 or more)")
    print(f"    CPU per event: in-process {cpu_in / n * 1e6:.0f} us, worker {cpu_k / n * 1e6:.0f} us "
          f"(+{(cpu_k - cpu_in) / n * 1e6:.0f} us)")
    if rounds["cpu_ref"]:
        # the reference (the core alone) on both sides of the worker in each round, as the handlers' loop
        cpu_ref = statistics.median(rounds["cpu_ref"])
        to_ref, in_ref = _over_ref(rounds, "cpu_k"), _over_ref(rounds, "cpu_in")
        print(f"    against the in-process reference (run_in_process: the same join, explainers and change detector, "
              f"{cpu_ref / n * 1e6:.0f} us of CPU an event): worker {statistics.median(to_ref):.3f}x it "
              f"(rounds {', '.join(f'{x:.2f}' for x in to_ref)}), handlers in process {statistics.median(in_ref):.3f}x")
    if rounds["sched"]:
        # where the worker's main thread (the agents) spent the run: on a core, waiting for one
        # (the broker, the clients' threads and this process on the same two cores), neither
        # (waiting for a fetch, or for the GIL while the consumer's thread parses one)
        on, queued, switched = (statistics.median(x[i] for x in rounds["sched"]) for i in range(3))
        print(f"    worker's main thread per event (medians): on a core {on / n * 1e6:.0f} us, waiting for a core "
              f"{queued / n * 1e6:.0f} us, neither {(wall_k - on - queued) / n * 1e6:.0f} us; switched out while "
              f"runnable {switched:.0f} times a run")
    if rounds["broker"]:
        print(f"    the local broker on the same cores meanwhile: {statistics.median(rounds['broker']) / n * 1e6:.0f} us "
              f"of CPU per event (median of the rounds; the in-process loop has no broker to share them with)")


def message_operations(counters: dict[str, float], n: int) -> str:
    """The worker's message operations per event (consumed and produced), in all and per topic,
    from its ``messages_in`` / ``messages_out`` counters over ``n`` events."""
    per: dict[str, float] = {}
    for k, v in counters.items():
        if k.startswith(("messages_in{", "messages_out{")):
            way = "in" if k.startswith("messages_in") else "out"
            topic = k.split("topic=", 1)[1].rstrip("}").rsplit(".", 1)[-1]
            per[f"{topic} {way}"] = per.get(f"{topic} {way}", 0) + v / n
    shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items()) if v >= 0.005)
    return f"{sum(per.values()):.2f} ({shown})"


if __name__ == "__main__":
    main()
