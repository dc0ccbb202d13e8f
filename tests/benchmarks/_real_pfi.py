"""The iPFI paper's elec2 feature-drift experiment ("fe. 1" of its Table 2, Figure 14), run on demand
(``python tests/benchmarks/_real_pfi.py [--models hat,arf] [--events N] [--gradual]``, or
:func:`main_pfi`): a river model (HAT at the product's settings, ARF with 10 trees) learns elec2
prequentially while ``nswprice`` and ``vicdemand`` exchange their values from event 20,000 on (at once,
or gradually over 5,000 events); at every event the project's :class:`~streamxai.core.explainers.ipfi.IPFI`
with uniform and with geometric sampling explains the current model before it learns the event (0-1
loss, ``alpha = 0.001``, a reservoir of 100, the paper's ten realizations of the sampling strategy as
``n_samples = 10`` draws per event and feature), and :class:`~streamxai.core.batch.pfi.IntervalPFI` gives
the paper's baseline, interval PFI: batch PFI with ten random permutations over each interval of 2,000
events, on the model as it is at the interval's end. The paper gives no interval length; 2,000 events
is the window ``N`` that ``alpha = 2 / (N + 1)`` assigns to ``alpha = 0.001`` (the paper's conversion),
so both estimates weigh about the same stretch of the stream, and the drift falls on an interval
boundary. The error is the paper's (Experiment A, used for Table 2): both vectors min-max normalised
over the six features, then the sum of the features' absolute differences, between iPFI and the
interval PFI as the figures draw it (the latest interval's value, held until the next), at every event
from the first interval's end on; its median ``Q2``, ``IQR``, ``Q1`` and ``Q3`` are printed over the
whole stream, before the drift (events before 20,000) and after it (from 20,000 on). Beside it: the
swapped features' unnormalised ``|iPFI - interval PFI|`` and that summed over the six features (the
normalisation maps the most important feature to 1 in both vectors, so the paper's error does not see
an over-estimate of the top feature), the paper's error at the intervals' ends only, and, for
reference, the paper's published rows (an ARF of 50 trees).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(_HERE, "..", "..")))
sys.path.insert(0, _HERE)

from _elec2 import FEATURES, N_EVENTS, elec2_events, require  # noqa: E402
from streamxai.core.batch.pfi import IntervalPFI  # noqa: E402
from streamxai.core.explainers.ipfi import IPFI  # noqa: E402
from streamxai.core.losses import get_loss  # noqa: E402
from streamxai.core.model import ModelFunction  # noqa: E402
from streamxai.modelspec import model_factory  # noqa: E402
from streamxai.settings import Settings  # noqa: E402

__all__ = ["main_pfi", "run", "Run"]

ALPHA = 0.001
RESERVOIR = 100
#: M, realizations of the sampling strategy averaged per event and feature (the paper's ten)
REALIZATIONS = 10
#: random permutations of each interval's batch PFI (the paper's ten)
PERMUTATIONS = 10
#: events per interval of interval PFI: the window N of alpha = 2 / (N + 1), rounded
INTERVAL = 2_000
SWAP = ("nswprice", "vicdemand")
AT = 20_000
#: events over which the gradual swap reaches every event
WIDTH = 5_000
SAMPLINGS = ("uniform", "geometric")
DRIFTS = ("sudden", "gradual")
#: the printed series (Run.series): the paper's error, then unnormalised differences
SERIES = ("error", *SWAP, "sum")
PARTS = ("whole stream", "before drift", "after drift")
SEED = 1

#: the paper's Table 2, elec2 rows (ARF of 50 trees, alpha 0.001): (Q2, IQR, Q1, Q3) per part
PAPER_TABLE2 = {
    ("sudden", "uniform"): ((0.270, 0.305, 0.042, 0.347), (0.041, 0.061, 0.033, 0.093), (0.353, 0.068, 0.311, 0.378)),
    ("sudden", "geometric"): ((0.037, 0.039, 0.033, 0.072), (0.037, 0.066, 0.032, 0.098), (0.037, 0.022, 0.036, 0.057)),
    ("gradual", "uniform"): ((0.158, 0.263, 0.050, 0.313), (0.048, 0.075, 0.025, 0.101), (0.321, 0.089, 0.283, 0.372)),
    ("gradual", "geometric"): ((0.037, 0.024, 0.027, 0.051), (0.040, 0.069, 0.026, 0.095), (0.037, 0.013, 0.028, 0.041)),
}


def model_spec(name: str) -> tuple[str, str, dict, int]:
    """``(label, import path, model_params, seed)`` of ``"hat"`` (the product's default model and
    parameters) or ``"arf"`` (river's ARF with 10 trees), seeded with the product's ``model_seed``."""
    settings = Settings()
    if name == "hat":
        return "HAT", settings.model, dict(settings.model_params), settings.model_seed
    if name == "arf":
        return "ARF(10)", "river.forest.ARFClassifier", {"n_models": 10}, settings.model_seed
    raise ValueError(f"model {name!r} is not one of 'hat', 'arf'")


@dataclass
class Run:
    """One prequential pass: iPFI of each sampling and the interval PFI it is compared with, at the
    events listed in ``t``."""

    model: str
    drift: str
    #: the first event of the drift
    at: int = AT
    width: int = 0
    interval: int = INTERVAL
    n: int = 0
    seconds: float = 0.0
    correct: int = 0
    #: the events compared (from the first interval's end on)
    t: list[int] = field(default_factory=list)
    #: the positions in ``t`` of the intervals' ends (where interval PFI is computed)
    ends: list[int] = field(default_factory=list)
    #: sampling -> iPFI at each event of ``t`` (one row of the features' values in FEATURES order)
    ipfi: dict[str, list[np.ndarray]] = field(default_factory=dict)
    #: the interval PFI held at each event of ``t`` (the latest interval's)
    reference: list[np.ndarray] = field(default_factory=list)

    def series(self, sampling: str, name: str) -> np.ndarray:
        """At each event of ``t``: ``"error"``, the paper's error (both vectors min-max normalised over
        the features, the sum of absolute differences); a feature's name, that feature's
        ``|iPFI - interval PFI|``; ``"sum"``, that summed over the features."""
        est, ref = np.array(self.ipfi[sampling]), np.array(self.reference)
        if name == "error":
            return np.abs(_minmax(est) - _minmax(ref)).sum(axis=1)
        if name == "sum":
            return np.abs(est - ref).sum(axis=1)
        j = FEATURES.index(name)
        return np.abs(est[:, j] - ref[:, j])

    def quartiles(self, sampling: str, name: str, part: str,
                  ends: bool = False) -> tuple[float, float, float, float] | None:
        """``(Q2, IQR, Q1, Q3)`` of one series over ``part`` of the stream (``ends``: at the
        intervals' ends only); ``None`` when no compared event of the run falls in it."""
        if not self.t:
            return None
        t, v = np.asarray(self.t), self.series(sampling, name)
        if ends:
            t, v = t[self.ends], v[self.ends]
        if part == "before drift":
            v = v[t < self.at]
        elif part == "after drift":
            v = v[t >= self.at]
        if v.size == 0:
            return None
        q1, q2, q3 = np.percentile(v, [25, 50, 75])
        return float(q2), float(q3 - q1), float(q1), float(q3)


def _minmax(v: np.ndarray) -> np.ndarray:
    """Each row min-max normalised to ``[0, 1]`` (a constant row to zeros), as ``pfi_error`` does."""
    lo, span = v.min(axis=1, keepdims=True), np.ptp(v, axis=1, keepdims=True)
    return np.divide(v - lo, span, out=np.zeros_like(v), where=span > 0)


def run(model: str, drift: str, events: int | None = None, width: int = WIDTH, at: int = AT,
        interval: int = INTERVAL, progress: bool = False) -> Run:
    """One model learning the swapped elec2 stream, explained by iPFI with both samplings against
    interval PFI (the module docstring); ``events`` cuts the stream."""
    label, path, params, seed = model_spec(model)
    river_model = model_factory(path, params, seed)()
    model_fn = ModelFunction(river_model)
    loss = get_loss("zero_one")
    explainers = {s: IPFI(model_fn, loss, FEATURES, alpha=ALPHA, n_samples=REALIZATIONS, storage=s,
                          storage_size=RESERVOIR, seed=SEED) for s in SAMPLINGS}
    baseline = IntervalPFI(model_fn, loss, FEATURES, interval=interval, n_repeats=PERMUTATIONS, seed=SEED)
    width = width if drift == "gradual" else 0
    stream: Iterable = elec2_events(swap=SWAP, at=at, width=width)
    if events is not None:
        stream = itertools.islice(stream, events)
    out = Run(label, drift, at=at, width=width, interval=interval, ipfi={s: [] for s in SAMPLINGS})
    reference = None
    start = time.perf_counter()
    for t, (x, y) in enumerate(stream):
        values = {s: e.explain_one(x, y) for s, e in explainers.items()}  # h_t, before it learns (x, y)
        batch = baseline.update(x, y)  # at an interval's end: batch PFI of h_t on the interval
        if batch is not None:
            reference = np.array([batch[f] for f in FEATURES])
            out.ends.append(len(out.t))
            if progress:
                print(f"  {label} {drift}: {t + 1:,} events, {time.perf_counter() - start:.0f} s", flush=True)
        if reference is not None:
            out.t.append(t)
            out.reference.append(reference)
            for s, v in values.items():
                out.ipfi[s].append(np.array([v[f] for f in FEATURES]))
        out.correct += river_model.predict_one(x) == y
        river_model.learn_one(x, y)
        out.n = t + 1
    out.seconds = time.perf_counter() - start
    return out


def _cells(q: Sequence[float] | None) -> str:
    return "  ".join(f"{v:6.3f}" for v in q) if q is not None else "  ".join(f"{'-':>6}" for _ in range(4))


def report(r: Run, trace: bool = False) -> None:
    """Print one run in the layout of the paper's Table 2, the paper's rows under ours (``trace``:
    and the swapped features' values at each interval's end, Figure 14 in numbers)."""
    kind = "sudden" if r.drift == "sudden" else f"gradual over {r.width:,} events"
    print(f"\nelec2 fe. 1{'' if r.drift == 'sudden' else ', gradual'}: {SWAP[0]} and {SWAP[1]} swapped from "
          f"event {r.at:,} ({kind}); {r.model}, {r.n:,} events, prequential accuracy {r.correct / max(r.n, 1):.3f}, "
          f"wall time {r.seconds:.0f} s")
    print(f"error of iPFI (alpha {ALPHA}, reservoir {RESERVOIR}, M {REALIZATIONS}) against interval PFI "
          f"({r.interval:,}-event intervals, {PERMUTATIONS} permutations) at each of {len(r.t):,} events; "
          f"'at ends': at the {len(r.ends)} intervals' ends only")
    print("error: the paper's (min-max normalised over the 6 features, |difference| summed); nswprice, vicdemand: "
          "|iPFI - interval PFI| of the feature, unnormalised (0-1 loss); sum: that summed over the 6 features; "
          "at ends: the paper's error at the intervals' ends; paper: its Table 2 row (ARF of 50 trees)")
    quart = "    Q2     IQR      Q1      Q3"
    print(f"{'sampling':<10} {'series':<10} | {' | '.join(f'{p:<30}' for p in PARTS)}")
    print(f"{'':<10} {'':<10} | {' | '.join(quart for _ in PARTS)}")
    for s in SAMPLINGS:
        for k in SERIES:
            cells = " | ".join(_cells(r.quartiles(s, k, p)) for p in PARTS)
            print(f"{s:<10} {k:<10} | {cells}")
        cells = " | ".join(_cells(r.quartiles(s, "error", p, ends=True)) for p in PARTS)
        print(f"{s:<10} {'at ends':<10} | {cells}")
        paper = PAPER_TABLE2[(r.drift, s)]
        print(f"{s:<10} {'paper':<10} | {' | '.join(_cells(q) for q in paper)}")
    if trace:
        print(f"at each interval's end, PFI of {' and '.join(SWAP)}: interval PFI, iPFI uniform, iPFI geometric")
        for i in r.ends:
            cells = "   ".join(" ".join(f"{v[i][FEATURES.index(f)]:6.3f}" for v in (r.reference, *r.ipfi.values()))
                               for f in SWAP)
            print(f"  {r.t[i] + 1:>6,}  {cells}")
    verdicts = []
    for name, what in (("error", "the paper's error"), ("sum", "the unnormalised sum")):
        u, g = (r.quartiles(s, name, "after drift") for s in SAMPLINGS)
        if u is None or g is None:
            print(f"{r.model}, {r.drift} swap: no events after the drift in this run")
            return
        verdicts.append(f"{what} {'yes' if g[0] < u[0] else 'NO'} ({g[0]:.3f} vs {u[0]:.3f})")
    paper = PAPER_TABLE2[(r.drift, "geometric")][2][0], PAPER_TABLE2[(r.drift, "uniform")][2][0]
    print(f"{r.model}, {r.drift} swap: does geometric sampling track interval PFI better than uniform after the "
          f"swap (after-drift Q2, geometric vs uniform)? {'; '.join(verdicts)}; the paper reports yes "
          f"({paper[0]:.3f} vs {paper[1]:.3f})")


def main_pfi(models: Sequence[str] = ("hat", "arf"), events: int | None = None,
             drifts: Sequence[str] = ("sudden",), at: int = AT, width: int = WIDTH, interval: int = INTERVAL,
             progress: bool = False, trace: bool = False) -> list[Run]:
    """Run and print the experiment for each model (``"hat"``, ``"arf"``) and drift (``"sudden"``,
    ``"gradual"``); ``events`` cuts the stream (a smoke run). Returns the runs."""
    require()
    for d in drifts:
        if d not in DRIFTS:
            raise ValueError(f"drift {d!r} is not one of {DRIFTS}")
    for m in models:
        model_spec(m)
    runs = []
    start = time.perf_counter()
    for m in models:
        for d in drifts:
            r = run(m, d, events=events, at=at, width=width, interval=interval, progress=progress)
            report(r, trace=trace)
            runs.append(r)
    print(f"\ntotal wall time {time.perf_counter() - start:.0f} s")
    return runs


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description="The iPFI paper's elec2 fe. 1 experiment (Table 2): iPFI with uniform and geometric sampling "
                    "against interval PFI while a river model learns elec2 with two features swapped.",
        epilog=f"A full run ({N_EVENTS:,} events; both samplings and interval PFI share one pass per model and "
               "drift) takes about 1.5 minutes for HAT and about 8 minutes for ARF(10) on one core; --gradual "
               "doubles that.")
    p.add_argument("--models", default="hat,arf", help="comma-separated: hat, arf (default: hat,arf)")
    p.add_argument("--events", type=int, default=None, help="cut the stream after N events (a smoke run)")
    p.add_argument("--gradual", action="store_true", help="also run the gradual swap (fe. 1, gradual)")
    p.add_argument("--at", type=int, default=AT, help=f"first event of the swap (default {AT:,}, the paper's)")
    p.add_argument("--width", type=int, default=WIDTH,
                   help=f"events over which the gradual swap reaches every event (default {WIDTH:,})")
    p.add_argument("--interval", type=int, default=INTERVAL,
                   help=f"events per interval of interval PFI (default {INTERVAL:,}, the window of alpha {ALPHA})")
    p.add_argument("--progress", action="store_true", help="print a line at each interval's end")
    p.add_argument("--trace", action="store_true",
                   help="print the swapped features' interval PFI and iPFI at each interval's end")
    a = p.parse_args(argv)
    drifts = ("sudden", "gradual") if a.gradual else ("sudden",)
    main_pfi(models=tuple(m.strip() for m in a.models.split(",") if m.strip()), events=a.events, drifts=drifts,
             at=a.at, width=a.width, interval=a.interval, progress=a.progress,
             trace=a.trace)


if __name__ == "__main__":
    main()
