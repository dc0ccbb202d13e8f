"""The floor of black-box evaluation: what calling a model as a black box costs at the least,
against the model's clean cost, in one run. Run on demand:

    python tests/benchmarks/bench_blackbox_floor.py [--models logistic,hat,arf] [--events 300]
        [--warmup 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_speed, the same stream and model
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_speed import AGRAWAL, MODELS, black_box_limit, events, warm_explainer  # noqa: E402

D = len(AGRAWAL)
GRID = 10  # iPDP's grid points per feature (the default)
INNER = 2  # iSAGE's donors per chain (the default)
#: evaluations per event of the default explainers: iPFI 1 + d, iSAGE 1 + 2 d, iPDP 10 d
EVALUATIONS = {"ipfi": 1 + D, "isage": 1 + INNER * D, "ipdp": GRID * D}


# ways of building ``x`` with feature ``f`` set to ``v``; the cheapest is used
def by_copy(x: dict, f: str, v: float) -> dict:
    r = x.copy()
    r[f] = v
    return r


def by_unpacking(x: dict, f: str, v: float) -> dict:
    return {**x, f: v}


def by_union(x: dict, f: str, v: float) -> dict:
    return x | {f: v}


WAYS = {"x.copy(); r[f] = v": by_copy, "{**x, f: v}": by_unpacking, "x | {f: v}": by_union}


def cheapest_way(x: dict, n: int = 200_000) -> tuple[str, dict[str, float]]:
    """The cheapest of :data:`WAYS` on this machine, and each one's CPU seconds per row (median of 5)."""
    per_row = {}
    for name, way in WAYS.items():
        times = []
        for _ in range(5):
            t0 = time.process_time()
            for _ in range(n // 100):
                for _ in range(100):
                    way(x, "age", 1.0)
            times.append((time.process_time() - t0) / n)
        per_row[name] = statistics.median(times)
    return min(per_row, key=per_row.__getitem__), per_row


def plans(data: list, warmup: int) -> list[tuple]:
    """Per event of the window, what its inputs hold, decided before any clock runs:
    iPFI's (feature, value of a past event), iSAGE's order and two donors (past events), iPDP's
    (feature, grid value) over the range each feature took in the warm-up."""
    lo = {f: min(x[f] for x, _ in data[:warmup]) for f in AGRAWAL}
    hi = {f: max(x[f] for x, _ in data[:warmup]) for f in AGRAWAL}
    grid_pairs = [(f, lo[f] + (hi[f] - lo[f]) * k / (GRID - 1)) for f in AGRAWAL for k in range(GRID)]
    out = []
    for t in range(warmup, len(data)):
        x = data[t][0]
        past = data[t - 1 - (t * 7919) % warmup][0]
        pfi_pairs = [(f, past[f]) for f in AGRAWAL]
        shift = t % D
        order = AGRAWAL[shift:] + AGRAWAL[:shift]
        donors = [data[t - 2][0], data[t - 3][0]]
        out.append((x, pfi_pairs, order, donors, grid_pairs))
    return out


def build(plan: tuple, way) -> list[dict]:
    """The event's 119 inputs: iPFI's, iSAGE's chain (each row the previous one with one more
    feature from the donor, from the last coalition back), iPDP's."""
    x, pfi_pairs, order, donors, grid_pairs = plan
    rows = [x]
    rows += [way(x, f, v) for f, v in pfi_pairs]
    rows.append(x)
    for donor in donors:
        row = x
        for f in reversed(order):
            row = way(row, f, donor[f])
            rows.append(row)
    rows += [way(x, f, v) for f, v in grid_pairs]
    return rows


def time_inputs(window_plans: list, way) -> float:
    """CPU seconds per event to build every event's inputs (and drop them)."""
    t0 = time.process_time()
    for plan in window_plans:
        build(plan, way)
    return (time.process_time() - t0) / len(window_plans)


def time_calls(model, window: list, inputs: list[list[dict]]) -> float:
    """CPU seconds per event of the calls on prebuilt inputs, then ``learn_one``, on a pickled copy."""
    m = pickle.loads(pickle.dumps(model))
    predict, learn = m.predict_proba_one, m.learn_one
    t0 = time.process_time()
    for (x, y), rows in zip(window, inputs, strict=True):
        list(map(predict, rows))
        learn(x, y)
    return (time.process_time() - t0) / len(window)


def time_clean_block(model, window: list, n_evals: int) -> float:
    """CPU seconds per event of ``n_evals`` calls on the event's own ``x`` and ``learn_one``, one
    clock for the whole window (``black_box_limit`` reads the clock three times per event, and a
    reading of ``time.process_time`` is a system call that costs about a microsecond here, which
    its per-call cost then includes)."""
    m = pickle.loads(pickle.dumps(model))
    predict, learn = m.predict_proba_one, m.learn_one
    t0 = time.process_time()
    for x, y in window:
        list(map(predict, [x] * n_evals))
        learn(x, y)
    return (time.process_time() - t0) / len(window)


def time_in_place(model, window: list, window_plans: list) -> float:
    """:func:`time_floor` with the inputs built in place: one copy of ``x`` per replaced feature
    (iPFI, iPDP) or per donor (iSAGE's chain), set to each value in turn between calls -- only
    sound for a model that keeps no reference to its input, which a black box does not promise."""
    m = pickle.loads(pickle.dumps(model))
    predict, learn = m.predict_proba_one, m.learn_one
    t0 = time.process_time()
    for (x, y), (_, pfi_pairs, order, donors, grid_pairs) in zip(window, window_plans, strict=True):
        predict(x)
        r = x.copy()
        for f, v in pfi_pairs:
            r[f] = v
            predict(r)
            r[f] = x[f]
        predict(x)
        for donor in donors:
            r = x.copy()
            for f in reversed(order):
                r[f] = donor[f]
                predict(r)
        f0 = None
        for f, v in grid_pairs:
            if f != f0:
                r, f0 = x.copy(), f
            r[f] = v
            predict(r)
        learn(x, y)
    return (time.process_time() - t0) / len(window)


def time_floor(model, window: list, window_plans: list, way) -> float:
    """CPU seconds per event of building the inputs, calling the model on them and learning."""
    m = pickle.loads(pickle.dumps(model))
    predict, learn = m.predict_proba_one, m.learn_one
    t0 = time.process_time()
    for (x, y), plan in zip(window, window_plans, strict=True):
        list(map(predict, build(plan, way)))
        learn(x, y)
    return (time.process_time() - t0) / len(window)


def measure(name: str, args: argparse.Namespace, way) -> dict[str, float]:
    data = events(name, args.warmup + args.events)
    window = data[args.warmup:]
    model = warm_explainer(name, data[:args.warmup]).model
    window_plans = plans(data, args.warmup)
    n_evals = sum(EVALUATIONS.values())
    assert len(build(window_plans[0], way)) == n_evals
    inputs = [build(p, way) for p in window_plans]
    times: dict[str, list[float]] = {"clean": [], "predict": [], "learn": [], "block": [], "inputs": [],
                                     "calls": [], "floor": [], "in_place": []}
    for r in range(args.repeats):
        steps = ["clean", "block", "inputs", "calls", "floor", "in_place"]
        for step in steps if r % 2 == 0 else reversed(steps):
            if step == "clean":
                limit, predict_s, learn_s = black_box_limit(model, window, n_evals, True)
                times["clean"].append(limit)
                times["predict"].append(predict_s)
                times["learn"].append(learn_s)
            elif step == "block":
                times["block"].append(time_clean_block(model, window, n_evals))
            elif step == "in_place":
                times["in_place"].append(time_in_place(model, window, window_plans))
            elif step == "inputs":
                times["inputs"].append(time_inputs(window_plans, way))
            elif step == "calls":
                times["calls"].append(time_calls(model, window, inputs))
            else:
                times["floor"].append(time_floor(model, window, window_plans, way))
    res = {k: statistics.median(v) for k, v in times.items()}
    res["evals"] = n_evals
    return res


def report(name: str, res: dict[str, float], args: argparse.Namespace) -> None:
    us = 1e6
    clean, n = res["clean"], res["evals"]
    print(f"\n{MODELS[name][1]}: {n} evaluations/event (iPFI {EVALUATIONS['ipfi']}, iSAGE {EVALUATIONS['isage']}, "
          f"iPDP {EVALUATIONS['ipdp']}), {args.events} events after {args.warmup}, median of {args.repeats}")
    print(f"  model time (clean, bench_speed's limit): {n} x predict {res['predict'] * us:.2f} us + learn "
          f"{res['learn'] * us:.1f} us = {clean * us:8.1f} us/event")
    share = res["inputs"] / clean * 100
    print(f"  inputs alone (119 dicts, no call):          {res['inputs'] * us:8.1f} us/event = {share:5.1f} % of "
          f"model time ({res['inputs'] / n * 1e9:.0f} ns per input)")
    print(f"  calls on the inputs + learn:                {res['calls'] * us:8.1f} us/event = "
          f"{res['calls'] / clean:5.2f}x the model time")
    floor = res["floor"]
    print(f"  floor (inputs + calls + learn):             {floor * us:8.1f} us/event: overhead "
          f"{(floor - clean) * us:.1f} us/event = {(floor - clean) / clean * 100:5.1f} % of model time")
    block = res["block"]
    print(f"  model time, one clock per window:           {block * us:8.1f} us/event = {block / clean:5.2f}x the "
          f"clean figure; against it the floor's overhead is {(floor - block) / block * 100:5.1f} %, the inputs "
          f"{res['inputs'] / block * 100:5.1f} %")
    inp = res["in_place"]
    print(f"  floor with inputs set in place (unsound):   {inp * us:8.1f} us/event: overhead "
          f"{(inp - clean) / clean * 100:5.1f} % of model time ({(inp - block) / block * 100:5.1f} % against one "
          f"clock per window)")
    if share > 10.0:
        print(f"  => building the inputs alone costs {share:.1f} % of the model time: 'our overhead at most 10 %' is "
              f"out of reach for a Python black box of this cost")
    else:
        print(f"  => the inputs cost {share:.1f} % of the model time: 10 % is within reach of a Python black box")


def main() -> None:
    """``bench_speed.py`` counts as our overhead the black-box path's CPU per event beyond the
    model's clean cost: evaluations x ``predict_proba_one`` timed on the event's own ``x`` +
    ``learn_one`` (:func:`bench_speed.black_box_limit`). But an explainer cannot call the model on
    ``x`` itself 119 times: each evaluation needs its own input, ``x`` with one or several features
    replaced. This benchmark times only what no black-box explainer can avoid, per event of the
    same stream and model state as ``bench_speed.py`` (the default explainers, 9 features):

    - the inputs: iPFI's ``x`` and its 9 rows with one feature from a past event, iSAGE's ``x``
      and its chain of 2 x 9 rows (each the previous row with one more feature from one of 2
      donors, as :func:`streamxai.core.model.chain_rows` builds them), iPDP's 9 x 10 rows with one
      feature on a grid -- each a fresh dict, built the cheapest way Python allows (the cheapest of
      the ways timed first, on this machine); which values go in is decided before the clock runs;
    - the calls: ``predict_proba_one`` on each input (``list(map(...))``, no per-row Python code
      of ours), then ``learn_one`` on a copy of the model made as the explainers' is (pickled);

    and prints, each against the clean model time measured in the same round (median of
    ``--repeats`` rounds, each timing all of them one after the other in alternating order):

    - ``inputs alone``: building the 119 dicts, nothing called -- if this alone exceeds 10 % of
      the model time, "our overhead at most 10 %" is out of reach for a black box of that cost
      written in Python, whatever the explainers do around the calls;
    - ``calls on the inputs``: the 119 calls on the prebuilt inputs plus ``learn_one``, against
      evaluations x the clean per-call cost + learn (a model may cost more on varied inputs than
      on one input called over and over);
    - ``floor``: both together, and its excess over the model time in % of it: the least
      overhead a Python black-box explainer can reach.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="logistic,hat,arf")
    ap.add_argument("--events", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    unknown = set(names) - set(MODELS) | ({"htr"} & set(names))
    if unknown:
        ap.error(f"models {sorted(unknown)} are not classifiers of bench_speed.py; choose from logistic, hat, arf")
    import river

    x = events("logistic", 1)[0][0]
    way_name, per_row = cheapest_way(x)
    print(f"river {river.__version__}, Python {sys.version.split()[0]}; CPU time per event in one process")
    print("  one input (x, 9 floats, with one feature set): "
          + ", ".join(f"{k} {v * 1e9:.0f} ns" for k, v in per_row.items()) + f"; used: {way_name}")
    for name in names:
        report(name, measure(name, args, WAYS[way_name]), args)


if __name__ == "__main__":
    main()
