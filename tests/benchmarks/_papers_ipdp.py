"""The iPDP paper's claims about tracking partial dependence after a drift, as ``bench_papers.py``
measures them against batch PD of the current model.

- Hyperplane (§4.2): ``Z = b1 X1 + b2 X2 + e``, ``Y = 1(sigmoid(Z) >= 0.1)``, ``X1 ~ N(100, 20)``,
  ``X2 ~ N(200, 40)``, ``b1 = 1``, ``b2 = -0.5`` until event 20,000, then ``X1 ~ N(200, 40)``,
  ``X2 ~ N(100, 20)``, ``b1 = -0.5``, ``b2 = 1`` (the paper's values; the second parameter is the
  variance). The paper leaves the noise ``e`` open: ``N(0, 1)`` here. A HAT learns the stream; iPDP
  (``alpha = 0.001``, 20 grid points between the minimum and maximum of the last 2,000 values)
  explains ``P(Y = 1)``. The claim: iPDP recovers the change of X1's effect from positive to
  negative and its move in feature space, where iPFI (its importance) shows no such change.
- elec2 (§4.1): an ARF of 10 trees learns elec2; iPDP of vicprice (``alpha = 0.001``, 10 grid points
  between the quantiles Q5 and Q95). The claim: no effect until about event 20,000 (vicprice is 0
  until then), an effect after it (the paper's plots at events 22,293, 35,893 and 43,957).

At each checkpoint the iPDP curve is compared with batch PD of the model as it is then, over the
last 2,000 events, at iPDP's own grid points: the largest absolute difference, the PD's range
(max - min over the grid) and the sign of each curve's least-squares slope.

>>> slope([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
-1.0
"""

from __future__ import annotations

import datetime
import random
import sys
import time
from collections import deque
from collections.abc import Iterator

import numpy as np
from _elec2 import FEATURES as ELEC2_FEATURES
from _elec2 import elec2_events
from _results import result_row
from river import forest, tree
from streamxai.core.batch.pdp import partial_dependence
from streamxai.core.explainers.ipdp import IPDP
from streamxai.core.explainers.ipfi import IPFI
from streamxai.core.model import ModelFunction

__all__ = ["run_ipdp_claims", "hyperplane", "slope"]

WINDOW = 2_000


def slope(grid, pd) -> float:
    """The least-squares slope of ``pd`` over ``grid``."""
    g = np.asarray(grid, float)
    return float(np.polyfit(g, np.asarray(pd, float), 1)[0]) if np.ptp(g) > 0 else 0.0


def hyperplane(n: int, at: int, seed: int) -> Iterator[tuple[dict, int]]:
    """The paper's hyperplane stream with its drift at ``at``."""
    rng = random.Random(seed)
    for t in range(n):
        (m1, v1, m2, v2, b1, b2) = (100, 20, 200, 40, 1.0, -0.5) if t < at else (200, 40, 100, 20, -0.5, 1.0)
        x1, x2 = rng.gauss(m1, v1 ** 0.5), rng.gauss(m2, v2 ** 0.5)
        z = b1 * x1 + b2 * x2 + rng.gauss(0.0, 1.0)
        p = 1.0 / (1.0 + np.exp(-z))
        yield {"x1": x1, "x2": x2}, int(p >= 0.1)


def _track(name: str, model, stream, features, explained, checkpoints, ipdp_kw, with_ipfi: bool) -> dict:
    fn = ModelFunction(model, output="proba_of", target_class=1)
    ipdp = IPDP(fn, features, features=explained, alpha=0.001, seed=1, **ipdp_kw)
    ipfi = IPFI(ModelFunction(model), "zero_one", features, alpha=0.001, n_samples=1, seed=1) if with_ipfi else None
    recent: deque = deque(maxlen=WINDOW)
    out: dict = {"checkpoints": []}
    start = time.perf_counter()
    for t, (x, y) in enumerate(stream):
        ipdp.explain_one(x)
        fi = ipfi.explain_one(x, y) if ipfi else None
        recent.append(x)
        if t + 1 in checkpoints:
            curves = ipdp.curves()
            for f in explained:
                grid, pd = curves[f]["grid"], curves[f]["pd"]
                batch = partial_dependence(fn, list(recent), f, grid)
                out["checkpoints"].append({
                    "event": t + 1, "feature": f, "grid": [round(v, 4) for v in grid],
                    "ipdp": [round(v, 4) for v in pd], "batch": [round(v, 4) for v in batch],
                    "max_abs_diff": round(float(np.max(np.abs(np.subtract(pd, batch)))), 4),
                    "batch_range": round(float(np.ptp(batch)), 4),
                    "slope_ipdp": slope(grid, pd), "slope_batch": slope(grid, batch),
                    "ipfi": round(fi[f], 4) if fi else None})
        model.learn_one(x, y)
    out["seconds"] = round(time.perf_counter() - start)
    print(f"\n{name} ({out['seconds']} s): at each checkpoint, iPDP against batch PD of the current model over the last "
          f"{WINDOW:,} events at iPDP's grid points")
    print(f"{'event':>7} {'feature':<9} {'grid':>17} {'max |diff|':>10} {'PD range':>9} {'slope iPDP':>11} "
          f"{'slope PD':>9}{' iPFI' if with_ipfi else ''}")
    for c in out["checkpoints"]:
        print(f"{c['event']:>7,} {c['feature']:<9} {c['grid'][0]:>8.3g}..{c['grid'][-1]:<7.3g} {c['max_abs_diff']:>10.3f} "
              f"{c['batch_range']:>9.3f} {c['slope_ipdp']:>+11.2e} {c['slope_batch']:>+9.2e}"
              + (f" {c['ipfi']:.3f}" if with_ipfi else ""))
    return out


def run_ipdp_claims(quick: bool = False) -> tuple[list[dict], dict]:
    """Both experiments; rows (one per checkpoint and feature) and details for the results file."""
    n, at = (8_000, 4_000) if quick else (40_000, 20_000)
    hp_checks = {at - 1_000, at + 1_000, at + 2_000, at + 5_000, n} if not quick else {at - 500, at + 2_000, n}
    hp = _track("hyperplane, HAT", tree.HoeffdingAdaptiveTreeClassifier(grace_period=50, seed=42),
                hyperplane(n, at, seed=1), ["x1", "x2"], ["x1", "x2"], hp_checks,
                {"grid_size": 20, "grid": "extreme", "window": WINDOW}, with_ipfi=True)
    elec_n = 10_000 if quick else 45_312
    el_checks = {10_000} if quick else {15_000, 22_293, 35_893, 43_957}
    el = _track("elec2, ARF(10), vicprice", forest.ARFClassifier(n_models=10, seed=42),
                (e for t, e in zip(range(elec_n), elec2_events(), strict=False)), list(ELEC2_FEATURES), ["vicprice"],
                el_checks, {"grid_size": 10, "grid": "quantile", "window": WINDOW}, with_ipfi=False)
    rows: list[dict] = []
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    for model, exp, drift in (("HAT (hyperplane)", hp, at), ("ARF(10) (elec2)", el, 20_000)):
        for c in exp["checkpoints"]:
            case = f"{model} | {c['feature']} | event {c['event']:,}"
            for measure, v in (("max |iPDP - batch PD|", c["max_abs_diff"]), ("batch PD range", c["batch_range"]),
                               ("slope iPDP", c["slope_ipdp"]), ("slope batch PD", c["slope_batch"])):
                rows.append({**result_row(case, measure, v, "P(y=1)" if "slope" not in measure else "per unit"),
                             "section": "ipdp", "model": model, "event": c["event"], "feature": c["feature"],
                             "after_drift": c["event"] > drift, "written": stamp,
                             "command": " ".join(["python", *sys.argv])})
    return rows, {"ipdp": {"hyperplane": hp, "elec2": el, "window": WINDOW}}
