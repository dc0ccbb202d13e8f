"""The iPFI section of ``bench_papers.py``: each setting of the supplement's Table 2 run with each
model, printed beside the paper's rows, and the rows for the results file."""

from __future__ import annotations

import datetime
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from _elec2 import CALENDAR, elec2_events
from _elec2 import FEATURES as ELEC2_FEATURES
from _papers_ipfi import PARTS, SAMPLINGS, Pass, minmax, paper_error, raw_error, run_pass, scaled_error
from _papers_streams import AGRAWAL_FEATURES, agrawal_feature_drift, agrawal_function_drift
from _papers_tables import IPFI_TABLE2
from _results import result_row
from river import forest, tree

__all__ = ["run_ipfi_table", "SETTINGS", "MODELS"]

SEED = 1
#: events per interval of interval PFI: the window N of alpha = 2 / (N + 1) for alpha = 0.001
INTERVAL = 2_000
#: the storage length L, the realizations M averaged per event and interval PFI's permutations (the paper's)
STORAGE, REALIZATIONS, PERMUTATIONS = 100, 10, 10


@dataclass(frozen=True)
class Setting:
    label: str
    what: str
    features: tuple[str, ...]
    n: int
    at: int
    alphas: tuple[float, ...]
    stream: Callable[[int, int], Iterator[tuple[dict, object]]]
    #: the paper's row this setting is compared with (default: the label)
    paper: str = ""
    #: > 0: the model learns no event from this one on (a diagnostic, not the paper's setting)
    freeze: int = 0

    @property
    def row(self) -> str:
        return self.paper or self.label


def _elec2(width: int, calendar: bool = False, partner: str = "vicdemand") -> Callable[[int, int], Iterator]:
    def stream(n: int, at: int) -> Iterator:
        events = elec2_events(swap=("nswprice", partner), at=at, width=width, seed=SEED, calendar=calendar)
        for t, event in enumerate(events):
            if t >= n:
                return
            yield event
    return stream


SETTINGS = {
    "fu1": Setting("agrawal fu. 1", "river's function 1 (age, salary; the paper's concept 1) until the drift, then "
                   "function 2 (age, education; concept 2), as the paper's Figure 3 describes",
                   AGRAWAL_FEATURES, 20_000, 10_000, (0.001, 0.01),
                   lambda n, at: agrawal_function_drift(1, 2, at, n, SEED)),
    "fu2": Setting("agrawal fu. 2", "river's function 2 until the drift, then function 3 (the paper names no "
                   "functions for fu. 2: the next pair is the choice made here)",
                   AGRAWAL_FEATURES, 20_000, 10_000, (0.001, 0.01),
                   lambda n, at: agrawal_function_drift(2, 3, at, n, SEED)),
    "fe1": Setting("agrawal fe. 1", "river's function 2 (age, education); from the drift on age and salary, and "
                   "education (elevel) and car exchange their values, as the paper's Figure 3 describes",
                   AGRAWAL_FEATURES, 20_000, 10_000, (0.001, 0.01),
                   lambda n, at: agrawal_feature_drift(2, (("age", "salary"), ("elevel", "car")), at, n, SEED)),
    "elec2": Setting("elec2 fe. 1", "nswprice and vicdemand exchange their values from event 20,000 on",
                     ELEC2_FEATURES, 45_312, 20_000, (0.001,), _elec2(0)),
    "elec2-gradual": Setting("elec2 fe. 1, gradual", "as fe. 1, for a share of the events growing linearly to all "
                             "over 5,000 events (the paper gives no width)", ELEC2_FEATURES, 45_312, 20_000, (0.001,),
                             _elec2(5_000)),
    "elec2-calendar": Setting("elec2 fe. 1, 8 features", "as fe. 1, with the papers' date and day attributes rebuilt "
                              "(8 features, as the papers' elec2 has)", CALENDAR + ELEC2_FEATURES, 45_312, 20_000,
                              (0.001,), _elec2(0, calendar=True), paper="elec2 fe. 1"),
}

# the paper swaps the top feature "with a random feature": other partners than vicdemand, as alternatives
for _partner in ("period", "nswdemand", "transfer"):
    SETTINGS[f"elec2-{_partner}"] = Setting(
        f"elec2 fe. 1, nswprice and {_partner}", f"nswprice and {_partner} exchange their values from event 20,000 on",
        ELEC2_FEATURES, 45_312, 20_000, (0.001,), _elec2(0, partner=_partner), paper="elec2 fe. 1")

# a diagnostic beside the paper's row: the model stops learning at event 28,000, so from about 32,000
# on both estimators face one fixed model and only the data moves (what a model that has settled would give)
SETTINGS["elec2-frozen"] = Setting(
    "elec2 fe. 1, model frozen from 28,000", "as fe. 1; the model learns no event from 28,000 on (a diagnostic)",
    ELEC2_FEATURES, 45_312, 20_000, (0.001,), _elec2(0), paper="elec2 fe. 1", freeze=28_000)

#: what a run without --settings runs: the paper's rows (the other swap partners run on request)
DEFAULT_SETTINGS = ("fu1", "fu2", "fe1", "elec2", "elec2-gradual", "elec2-calendar")

#: label, builder of a fresh model (seeded as the product seeds its models)
MODELS: dict[str, tuple[str, Callable[[], object]]] = {
    "hat": ("HAT", lambda: tree.HoeffdingAdaptiveTreeClassifier(grace_period=50, seed=42)),
    "arf10": ("ARF(10)", lambda: forest.ARFClassifier(n_models=10, seed=42)),
    "arf50": ("ARF(50)", lambda: forest.ARFClassifier(n_models=50, binary_split=True, seed=42)),
}


def _cells(q: Sequence[float] | None) -> str:
    return "  ".join(f"{v:6.3f}" for v in q) if q is not None else "  ".join(f"{'-':>6}" for _ in range(4))


def _quick(s: Setting) -> Setting:
    """A smoke run's version: 4,000 events (elec2: 8,000), the drift in the middle."""
    n = 4_000 if s.features == AGRAWAL_FEATURES else 8_000
    return Setting(s.label, s.what, s.features, n, n // 2, s.alphas, s.stream, s.paper, s.freeze * n // s.n)


def contributions(p: Pass, sampling: str, alpha: float) -> dict[str, float]:
    """Each feature's median share of the paper's error after the drift (its normalised |difference|)."""
    t, est, ref = p.compared(sampling, alpha)
    c = np.abs(minmax(est) - minmax(ref))[t >= p.at]
    return {f: float(v) for f, v in zip(p.features, np.median(c, axis=0), strict=True)} if len(c) else {}


def report(key: str, s: Setting, model: str, p: Pass, realizations: int = REALIZATIONS,
           permutations: int = PERMUTATIONS) -> tuple[list[dict], dict]:
    """Print one setting's table for one model; its rows and details."""
    print(f"\n{s.label} ({s.what}); {model}, {p.n:,} events, drift at {p.at:,}, prequential accuracy {p.accuracy:.3f}, "
          f"{p.seconds:.0f} s")
    print(f"iPFI (L {STORAGE}, M {realizations}, 0-1 loss unless the label says otherwise) against interval PFI ({p.interval:,}-event intervals, "
          f"{permutations} permutations, the model at the interval's end); Q2 IQR Q1 Q3 of the error. ours: the paper's error "
          "against the latest interval PFI; at ends: at the intervals' ends only; covering: against the PFI of "
          "the interval the event is in; unnormalised: |difference| summed; top-scaled: that over interval "
          "PFI's largest value")
    print(f"{'sampling':<10} {'alpha':<6} {'series':<12} | " + " | ".join(f"{x:<30}" for x in PARTS))
    rows: list[dict] = []
    orders = {}
    for alpha in s.alphas:
        for sampling in SAMPLINGS:
            paper = IPFI_TABLE2.get((s.row, sampling, alpha))
            ours = p.quartiles(sampling, alpha)
            series = {"ours": ours, "paper": dict(zip(PARTS, paper, strict=True)) if paper else None,
                      "at ends": p.quartiles(sampling, alpha, at_ends=True),
                      "covering": p.quartiles(sampling, alpha, align="covering"),
                      "unnormalised": p.quartiles(sampling, alpha, error=raw_error),
                      "top-scaled": p.quartiles(sampling, alpha, error=scaled_error)}
            for name, q in series.items():
                if q is not None:
                    print(f"{sampling:<10} {alpha:<6} {name:<12} | " + " | ".join(_cells(q[x]) for x in PARTS))
            for part in PARTS:
                q = ours[part]
                if q is None:
                    continue
                base = dict(zip(("Q2", "IQR", "Q1", "Q3"), paper[PARTS.index(part)], strict=True)) if paper else {}
                for i, stat in enumerate(("Q2", "IQR", "Q1", "Q3")):
                    row = result_row(f"{s.label} | {sampling} | alpha {alpha} | {part}", stat, round(q[i], 4),
                                     "error", base.get(stat))
                    rows.append({**row, "section": "ipfi", "model": model, "setting": s.label, "paper_row": s.row,
                                 "sampling": sampling, "alpha": alpha, "part": part, "series": "paper's error"})
                for name in ("at ends", "covering", "unnormalised", "top-scaled"):
                    qq = series[name][part]
                    if qq is not None:
                        row = result_row(f"{s.label} | {sampling} | alpha {alpha} | {part}", f"Q2 ({name})",
                                         round(qq[0], 4), "error")
                        rows.append({**row, "section": "ipfi", "model": model, "setting": s.label, "paper_row": s.row,
                                     "sampling": sampling, "alpha": alpha, "part": part, "series": name})
        after = {smp: p.quartiles(smp, alpha)["after drift"] for smp in SAMPLINGS}
        if all(after.values()):
            paper_after = {smp: IPFI_TABLE2[(s.row, smp, alpha)][2][0] for smp in SAMPLINGS}
            ours_geo = after["geometric"][0] < after["uniform"][0]  # type: ignore[index]
            paper_geo = paper_after["geometric"] < paper_after["uniform"]
            orders[str(alpha)] = {"ours": "geometric" if ours_geo else "uniform",
                                  "paper": "geometric" if paper_geo else "uniform"}
            print(f"alpha {alpha}: lower after-drift Q2: ours {orders[str(alpha)]['ours']} "
                  f"({after['geometric'][0]:.3f} geometric vs {after['uniform'][0]:.3f} uniform), "  # type: ignore[index]
                  f"paper {orders[str(alpha)]['paper']} ({paper_after['geometric']:.3f} vs {paper_after['uniform']:.3f})")
    frozen = {}
    if s.freeze:  # from two intervals after the freeze on, both estimators see one fixed model
        start = s.freeze + 2 * p.interval
        for smp in SAMPLINGS:
            t, est, ref = p.compared(smp, s.alphas[0])
            v, ends = paper_error(est, ref), np.isin(t, p.ends)
            frozen[smp] = {name: [round(float(x), 4) for x in np.percentile(v[mask & (t >= start)], [50, 25, 75])]
                           for name, mask in (("every event", t >= 0), ("at ends", ends)) if (mask & (t >= start)).any()}
            print(f"{smp}: the paper's error from event {start:,} on (the model frozen), Q2 Q1 Q3: "
                  + "; ".join(f"{k} {' '.join(f'{x:.3f}' for x in q)}" for k, q in frozen[smp].items()))
        refs, ends = np.array(p.references), np.array(p.ends)
        for name, other in (("previous interval", refs[:-1]), ("other permutations", np.array(p.references_other)[1:])):
            v = paper_error(refs[1:], other)[ends[1:] >= start]
            if v.size:
                frozen[name] = [round(float(x), 4) for x in np.percentile(v, [50, 25, 75])]
                print(f"interval PFI against {name} from event {start:,} on, Q2 Q1 Q3: "
                      + " ".join(f"{x:.3f}" for x in frozen[name]))
    floors = p.floors()
    print("interval PFI against itself, the paper's error at the intervals' ends (Q2 IQR Q1 Q3; the floor under "
          "any estimator's error):")
    for name, q in floors.items():
        print(f"  {name:<18} | " + " | ".join(_cells(q[x]) for x in PARTS))
    shares = {smp: [round(v, 3) for v in p.drifted_share[smp]] for smp in SAMPLINGS}
    ends_after = [i for i, e in enumerate(p.ends) if e >= p.at]
    if ends_after:
        print("share of each storage's observations from the drift on, at the intervals' ends after it "
              "(theory: uniform (t - drift) / t, geometric 1 - (1 - 1/L)^(t - drift)):")
        for i in ends_after[:3] + ends_after[-1:]:
            dt = p.ends[i] + 1 - p.at
            print(f"  event {p.ends[i] + 1:>6,}: uniform {shares['uniform'][i]:.2f} (theory {dt / (p.ends[i] + 1):.2f}), "
                  f"geometric {shares['geometric'][i]:.2f} (theory {1 - (1 - 1 / STORAGE) ** dt:.2f})")
    contrib = {smp: contributions(p, smp, s.alphas[0]) for smp in SAMPLINGS}
    for smp in SAMPLINGS:
        top = sorted(contrib[smp].items(), key=lambda kv: -kv[1])[:3]
        if top:
            print(f"{smp}: features with the largest median share of the error after the drift: "
                  + ", ".join(f"{f} {v:.3f}" for f, v in top))
    details = {"setting": s.label, "what": s.what, "model": model, "events": p.n, "drift_at": p.at,
               "realizations": realizations, "permutations": permutations,
               "accuracy": round(p.accuracy, 4), "seconds": round(p.seconds), "interval": p.interval,
               "orders_after_drift": orders, "freeze": s.freeze or None, "frozen_part": frozen or None,
               "floors": {name: {part: [round(v, 4) for v in q] if q else None for part, q in f.items()}
                          for name, f in floors.items()},
               "ends": [e + 1 for e in p.ends], "drifted_share": shares,
               "contributions_after_drift": {smp: {f: round(v, 4) for f, v in c.items()} for smp, c in contrib.items()},
               "trace": {f: [[round(v, 4) for v in r] for r in p.trace(f, s.alphas[0])] for f in p.features}}
    return rows, {f"ipfi | {key} | {model}": details}


def run_ipfi_table(models: Sequence[str], settings: Sequence[str] | None = None, quick: bool = False,
                   realizations: int = REALIZATIONS, permutations: int = PERMUTATIONS,
                   interval: int = INTERVAL, loss: str = "zero_one") -> tuple[list[dict], dict]:
    """Run the chosen settings (default: all) with each model; rows and details for the results file.
    Fewer ``realizations`` and ``permutations`` than the paper's make a model affordable that is not
    otherwise (their noise adds to the error); another ``interval`` is an alternative baseline, another
    ``loss`` (:data:`_papers_ipfi.LOSSES`) an alternative reading of the paper's; the model's label then
    says so."""
    unknown = [m for m in models if m not in MODELS] + [k for k in settings or () if k not in SETTINGS]
    if unknown:
        raise SystemExit(f"unknown models or settings {unknown}: models {sorted(MODELS)}, settings {sorted(SETTINGS)}")
    rows: list[dict] = []
    details: dict = {"ipfi": {"interval": INTERVAL, "storage": STORAGE, "realizations": REALIZATIONS,
                              "permutations": PERMUTATIONS, "seed": SEED,
                              "models": {k: v[0] for k, v in MODELS.items()}}}
    cheap = (realizations, permutations) != (REALIZATIONS, PERMUTATIONS)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    for key in settings or DEFAULT_SETTINGS:
        s = _quick(SETTINGS[key]) if quick else SETTINGS[key]
        for m in models:
            label, build = MODELS[m]
            if cheap:
                label += f", M {realizations}, {permutations} permutations"
            if interval != INTERVAL:
                label += f", {interval:,}-event intervals"
            if loss != "zero_one":
                label += ", loss on P(1)"
            print(f"\n... {s.label}, {label}", flush=True)
            p = run_pass(build(), s.stream(s.n, s.at), s.features, s.at, interval // 2 if quick else interval,
                         realizations=realizations, permutations=permutations, storage_size=STORAGE, seed=SEED,
                         progress=label, loss_name=loss, freeze=s.freeze)
            got, info = report(key, s, label, p, realizations, permutations)
            for r in got:
                r["written"] = stamp
                r["command"] = " ".join(["python", *sys.argv])
            rows += got
            details.update(info)
    return rows, details
