"""The iPFI paper's Table 2 (supplement) as ``bench_papers.py`` runs it: a river model learns a
drifting stream prequentially; at every event iPFI with uniform and with geometric sampling explains
the model as it is before it learns the event, and interval PFI (batch PFI with ten random
permutations over each interval of events, on the model as it is at the interval's end) is the
baseline. The error is the paper's (Experiment A): both vectors min-max normalised over the
features, then the sum of the features' absolute differences, at every event from the first
interval's end on, against the latest interval's PFI (the dashed line the figures draw, held until
the next); ``Q2``, ``IQR``, ``Q1``, ``Q3`` over the whole stream, before and after the drift.

One pass serves both values of ``alpha``: the explainers run with ``alpha = 1`` (their value is then
the increment ``lambda_t`` of Algorithm 1, averaged over the ``M`` realizations) and each ``alpha``
smooths those increments with the paper's recursion ``phi_t = (1 - alpha) phi_{t-1} + alpha
lambda_t``, ``phi_t0 = lambda_t0`` -- the values an explainer built with that ``alpha`` and seed gives.

Two floors put the error in scale (:meth:`Pass.floors`): interval PFI against a second interval PFI
of the same events and model with other permutations (its own noise), and against the interval
before (how far the reference itself moves in one interval, with the model and the data).

>>> est = np.array([[1.0, 0.5, 0.0], [0.4, 0.2, 0.0]])
>>> paper_error(est, np.array([[2.0, 1.0, 0.0], [1.0, 0.0, 0.5]])).round(3).tolist()  # per event
[0.0, 1.0]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from streamxai.core.batch.pfi import IntervalPFI
from streamxai.core.explainers.ipfi import IPFI
from streamxai.core.losses import get_loss
from streamxai.core.model import ModelFunction
from streamxai.core.rng import derive_seed
from streamxai.core.storage.reservoir import GeometricReservoir, UniformReservoir

__all__ = ["Pass", "run_pass", "LOSSES", "paper_error", "raw_error", "scaled_error", "smooth", "minmax", "PARTS", "SAMPLINGS"]

SAMPLINGS = ("uniform", "geometric")
#: the loss of iPFI and interval PFI: name -> (the model's output, its target class, the loss); the paper's
#: ``||h(x) - y||`` with ``h`` the predicted label is the 0-1 loss, with ``h`` the probability of class 1
#: (labels 0 and 1) it is ``|P(1) - y|``
LOSSES = {"zero_one": ("label", None, "zero_one"), "proba": ("proba_of", 1, "absolute")}
PARTS = ("whole stream", "before drift", "after drift")


def minmax(v: np.ndarray) -> np.ndarray:
    lo, span = v.min(axis=1, keepdims=True), np.ptp(v, axis=1, keepdims=True)
    return np.divide(v - lo, span, out=np.zeros_like(v), where=span > 0)


def paper_error(est: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The paper's error at each event (rows): both rows min-max normalised, ``|difference|`` summed."""
    return np.abs(minmax(est) - minmax(ref)).sum(axis=1)


def raw_error(est: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``|iPFI - interval PFI|`` summed over the features at each event, unnormalised."""
    return np.abs(est - ref).sum(axis=1)


def scaled_error(est: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``|iPFI - interval PFI|`` summed over the features, over interval PFI's largest value: one scale
    for both vectors, so an over-estimate of the top feature counts (min-max maps it to 1 in both)."""
    top = np.abs(ref).max(axis=1)
    return np.divide(np.abs(est - ref).sum(axis=1), top, out=np.zeros(len(ref)), where=top > 0)


def smooth(increments: np.ndarray, alpha: float) -> np.ndarray:
    """The iPFI recursion over the rows of ``increments`` (``phi_t0 = lambda_t0``)."""
    out = np.empty_like(increments)
    phi = increments[0].copy()
    out[0] = phi
    b = 1.0 - alpha
    for i in range(1, len(increments)):
        phi = b * phi + alpha * increments[i]
        out[i] = phi
    return out


@dataclass
class Pass:
    """One prequential pass: the increments of each sampling at every event (from ``t0``), the
    interval PFI at each interval's end, and the prequential accuracy."""

    features: tuple[str, ...]
    at: int
    interval: int
    n: int = 0
    correct: int = 0
    seconds: float = 0.0
    #: events (positions in the stream) at which increments were recorded
    t: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    #: sampling -> increments, one row per event of ``t``
    increments: dict[str, np.ndarray] = field(default_factory=dict)
    #: positions of the intervals' ends and the interval PFI computed there
    ends: list[int] = field(default_factory=list)
    references: list[np.ndarray] = field(default_factory=list)
    #: sampling -> at each interval's end, the share of the storage's observations from the drift on
    #: (a reservoir of the explainer's class and seed fed the events' positions makes the same choices)
    drifted_share: dict[str, list[float]] = field(default_factory=dict)
    #: at each interval's end, interval PFI with other permutations (same events, same model)
    references_other: list[np.ndarray] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.correct / max(self.n, 1)

    def compared(self, sampling: str, alpha: float,
                 align: str = "latest") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(events, iPFI, interval PFI)`` from the first interval's end on; ``align``: ``"latest"``,
        the last interval PFI computed (the figures' dashed line, held until the next), or
        ``"covering"``, the PFI of the interval the event belongs to (computed at its end, later)."""
        phi = smooth(self.increments[sampling], alpha)
        held = np.full((len(self.t), len(self.features)), np.nan)
        for k, end in enumerate(self.ends):
            if align == "latest":
                held[self.t >= end] = self.references[k]
            else:
                held[(self.t > end - self.interval) & (self.t <= end) & (self.t >= self.ends[0])] = self.references[k]
        keep = ~np.isnan(held[:, 0])
        return self.t[keep], phi[keep], held[keep]

    def quartiles(self, sampling: str, alpha: float, error: Callable = paper_error, at_ends: bool = False,
                  align: str = "latest") -> dict[str, tuple[float, float, float, float] | None]:
        """``{part: (Q2, IQR, Q1, Q3)}`` of ``error`` (``at_ends``: at the intervals' ends only;
        ``align`` as in :meth:`compared`)."""
        t, est, ref = self.compared(sampling, alpha, align)
        v = error(est, ref)
        if at_ends:
            pick = np.isin(t, self.ends)
            t, v = t[pick], v[pick]
        out: dict[str, tuple[float, float, float, float] | None] = {}
        for part, mask in (("whole stream", t >= 0), ("before drift", t < self.at), ("after drift", t >= self.at)):
            w = v[mask]
            if w.size == 0:
                out[part] = None
                continue
            q1, q2, q3 = np.percentile(w, [25, 50, 75])
            out[part] = (float(q2), float(q3 - q1), float(q1), float(q3))
        return out

    def floors(self) -> dict[str, dict[str, tuple[float, float, float, float] | None]]:
        """``{floor: {part: (Q2, IQR, Q1, Q3)}}`` of the paper's error at the intervals' ends between
        interval PFI and ``"other permutations"`` (its own noise) and ``"previous interval"`` (its move
        over one interval); a part is judged by the later interval's end."""
        refs, ends = np.array(self.references), np.array(self.ends)
        pairs = {"previous interval": (refs[1:], refs[:-1], ends[1:])}
        if len(self.references_other) == len(refs):
            pairs["other permutations"] = (refs, np.array(self.references_other), ends)
        out: dict[str, dict[str, tuple[float, float, float, float] | None]] = {}
        for name, (a, b, t) in pairs.items():
            v = paper_error(a, b) if len(t) else np.zeros(0)
            out[name] = {}
            for part, mask in (("whole stream", t >= 0), ("before drift", t < self.at), ("after drift", t >= self.at)):
                w = v[mask]
                if w.size == 0:
                    out[name][part] = None
                    continue
                q1, q2, q3 = np.percentile(w, [25, 50, 75])
                out[name][part] = (float(q2), float(q3 - q1), float(q1), float(q3))
        return out

    def trace(self, feature: str, alpha: float) -> list[tuple[int, float, float, float]]:
        """At each interval's end: ``(event, interval PFI, iPFI uniform, iPFI geometric)`` of ``feature``."""
        j = self.features.index(feature)
        phis = {s: smooth(self.increments[s], alpha) for s in SAMPLINGS}
        rows = []
        for end, ref in zip(self.ends, self.references, strict=True):
            i = int(np.searchsorted(self.t, end))
            if i < len(self.t):
                rows.append((end, float(ref[j]), *(float(phis[s][i, j]) for s in SAMPLINGS)))
        return rows


def run_pass(model, stream: Iterable[tuple[dict, object]], features: Sequence[str], at: int, interval: int,
             realizations: int = 10, permutations: int = 10, storage_size: int = 100, seed: int = 1,
             progress: str | None = None, loss_name: str = "zero_one", freeze: int = 0) -> Pass:
    """Run ``model`` (a fresh river classifier) over ``stream``, recording iPFI's increments with
    both samplings and interval PFI, twice (other permutations), with the loss ``loss_name`` of
    :data:`LOSSES` (default 0-1, as the paper's classification streams); ``freeze`` > 0: the model
    learns no event from that one on (a diagnostic: the explainers then face a fixed model)."""
    features = tuple(features)
    output, target, loss_fn = LOSSES[loss_name]
    model_fn = ModelFunction(model, output=output, target_class=target)
    loss = get_loss(loss_fn)
    explainers = {s: IPFI(model_fn, loss, features, alpha=1.0, n_samples=realizations, storage=s,
                          storage_size=storage_size, seed=seed) for s in SAMPLINGS}
    baseline = IntervalPFI(model_fn, loss, features, interval=interval, n_repeats=permutations, seed=seed)
    other = IntervalPFI(model_fn, loss, features, interval=interval, n_repeats=permutations,
                        seed=derive_seed(seed, "other permutations"))
    out = Pass(features, at, interval, drifted_share={s: [] for s in SAMPLINGS})
    shadows = {s: cls(size=storage_size, seed=derive_seed(seed, "storage"))
               for s, cls in (("uniform", UniformReservoir), ("geometric", GeometricReservoir))}
    t_list: list[int] = []
    rows: dict[str, list[list[float]]] = {s: [] for s in SAMPLINGS}
    start = time.perf_counter()
    for t, (x, y) in enumerate(stream):
        for s, e in explainers.items():
            v = e.explain_one(x, y)  # the model before it learns (x, y)
            if e.n_explained:
                rows[s].append([v[f] for f in features])
        if explainers["uniform"].n_explained:
            t_list.append(t)
        for shadow in shadows.values():
            shadow.update({"t": t})
        batch = baseline.update(x, y)
        batch_other = other.update(x, y)
        if batch is not None:  # t is the last event of the interval: the model has not learned it yet
            out.ends.append(t)
            out.references.append(np.array([batch[f] for f in features]))
            out.references_other.append(np.array([batch_other[f] for f in features]))  # type: ignore[index]
            for s, shadow in shadows.items():
                out.drifted_share[s].append(sum(item["t"] >= at for item in shadow.items) / len(shadow))
            if progress:
                print(f"  {progress}: {t + 1:,} events, {time.perf_counter() - start:.0f} s", flush=True)
        out.correct += model.predict_one(x) == y
        if not freeze or t < freeze:
            model.learn_one(x, y)
        out.n = t + 1
    out.seconds = time.perf_counter() - start
    out.t = np.array(t_list)
    out.increments = {s: np.array(r) for s, r in rows.items()}
    return out
