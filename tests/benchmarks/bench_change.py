"""Change-event benchmark, run on demand: ``python tests/benchmarks/bench_change.py [--quick] [--only NAME]
[--seeds 10,20,...] [--regression-seeds 5,15,...] [--cache DIR] [--min-effects 0.2,0.1,0.2/0.1,...]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from river import drift as river_drift  # noqa: E402
from river import tree  # noqa: E402
from river.datasets import synth  # noqa: E402
from streamxai.core.change.events import INPUTS, KINDS  # noqa: E402
from streamxai.core.change.test import two_sample_z  # noqa: E402
from streamxai.core.increments import Block  # noqa: E402
from streamxai.core.losses import get_loss  # noqa: E402
from streamxai.core.model import ModelFunction  # noqa: E402
from streamxai.core.stream import StreamExplainer  # noqa: E402
from streamxai.handlers.change import stream_detector  # noqa: E402
from streamxai.local.demo import demo_plan, demo_settings  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402
from streamxai.modelspec import build_model  # noqa: E402
from streamxai.plan import explainer_specs  # noqa: E402
from streamxai.settings import AGRAWAL_FEATURES, Settings  # noqa: E402

Event = tuple[dict[str, Any], Any]


@dataclass
class Scenario:
    name: str
    settings: Settings
    events: Callable[[], Iterator[Event]]
    n: int
    drifts: list[int]
    #: features whose importance changes at each drift
    changed: list[set[str]]
    #: events a drift lasts (a gradual one); its window is [drift, drift + duration + window)
    duration: int = 0
    model: Callable[[], Any] | None = None  # default: the settings' model
    note: str = ""
    #: the detection target this scenario checks, printed with the result
    target: str = ""


@dataclass
class Result:
    name: str
    n: int
    #: seq, explainer, feature, cut, level before, level after, kind
    changes: list[tuple[int, str, str, int, float, float, str]] = field(default_factory=list)
    episodes: list[Any] = field(default_factory=list)  # closed
    #: (seq of the message that announced it, the episode): each episode when its kind was decided
    opened: list[tuple[int, Any]] = field(default_factory=list)
    adwin: list[int] = field(default_factory=list)
    seconds: float = 0.0
    detector_seconds: float = 0.0
    #: every explanation the detector saw, for the speed comparison
    feed: list[tuple] = field(default_factory=list)


# --- models -----------------------------------------------------------------------------------
class Frozen:
    """A pre-trained river classifier that no longer learns."""

    def __init__(self, model: Any):
        self.model = model

    def learn_one(self, x: dict, y: Any) -> None:
        pass

    def predict_one(self, x: dict) -> Any:
        return self.model.predict_one(x)

    def predict_proba_one(self, x: dict) -> dict:
        return self.model.predict_proba_one(x)


class Switched:
    """Model A until ``at`` events were seen, then model B (both frozen): a redeployment."""

    def __init__(self, a: Any, b: Any, at: int):
        self.a, self.b, self.at, self.seen = a, b, at, 0

    def _m(self) -> Any:
        return self.a if self.seen < self.at else self.b

    def learn_one(self, x: dict, y: Any) -> None:
        self.seen += 1

    def predict_one(self, x: dict) -> Any:
        return self._m().predict_one(x)

    def predict_proba_one(self, x: dict) -> dict:
        return self._m().predict_proba_one(x)


def trained_regressor(events: Iterator[Event], n: int) -> Any:
    m = tree.HoeffdingAdaptiveTreeRegressor(seed=1)
    for _, (x, y) in zip(range(n), events, strict=False):
        m.learn_one(x, y)
    return m


def trained(events: Iterator[Event], n: int, **params: Any) -> Any:
    m = tree.HoeffdingTreeClassifier(grace_period=50, **params)
    for _, (x, y) in zip(range(n), events, strict=False):
        m.learn_one(x, y)
    return m


# --- streams ----------------------------------------------------------------------------------
def uniform(seed: int, names: tuple[str, ...] = ("a", "b", "c", "d")) -> Iterator[dict[str, float]]:
    rng = random.Random(seed)
    while True:
        yield {f: rng.random() for f in names}


def threshold_stream(seed: int, drift_at: int | None = None, swap_at: int | None = None,
                     width: int = 0) -> Iterator[Event]:
    """``y = a > 0.5`` (10% label noise); after ``drift_at`` ``y = b > 0.5`` (a sigmoid mix over
    ``width`` events, as river's ConceptDriftStream); after ``swap_at`` a and c trade values."""
    import math

    rng = random.Random(seed + 1)
    for t, x in enumerate(uniform(seed)):
        new = False
        if drift_at is not None:
            p = 1.0 / (1.0 + math.exp(-4.0 * (t - drift_at) / width)) if width else float(t >= drift_at)
            new = rng.random() < p
        y = int((x["b"] if new else x["a"]) > 0.5)
        if rng.random() < 0.1:
            y = 1 - y
        if swap_at is not None and t >= swap_at:
            x["a"], x["c"] = x["c"], x["a"]
        yield x, y


def stagger(seed: int, at: tuple[int, int]) -> Iterator[Event]:
    gens = [iter(synth.STAGGER(classification_function=k, seed=seed + k)) for k in range(3)]
    t = 0
    while True:
        k = 0 if t < at[0] else (1 if t < at[1] else 2)
        x, y = next(gens[k])
        yield dict(x), int(y)
        t += 1


def friedman(seed: int, at: int, scale: float = 1000.0) -> Iterator[Event]:
    for x, y in synth.FriedmanDrift(drift_type="gra", position=(at, 10**9), seed=seed):
        yield {f"x{k}": float(v) for k, v in x.items()}, scale * float(y)


def friedman_local(seed: int, at: tuple[int, int, int], scale: float = 1000.0) -> Iterator[Event]:
    """river FriedmanDrift ``lea``: the concept changes in two regions of the input space that
    expand at each of the three drifts (1.6%, 5.4% and 18% of the events)."""
    for x, y in synth.FriedmanDrift(drift_type="lea", position=at, seed=seed):
        yield {f"x{k}": float(v) for k, v in x.items()}, scale * float(y)


def agrawal(seed: int) -> Iterator[Event]:
    for x, y in synth.Agrawal(classification_function=1, seed=seed):
        yield {k: float(v) for k, v in x.items()}, int(y)


def demo_stream(n: int) -> Iterator[Event]:
    """The demo's drifting stream (``streamxai demo``, ``n`` events): agrawal function 1 -> 2
    at a third, ``elevel`` and ``car`` swapped at two thirds."""
    p = demo_plan(n)
    for e in agrawal_events("demo", n, p.drift_at, p.swap_at, seed=42, f_before=p.f_before, f_after=p.f_after,
                            swap=p.swap):
        yield e.x, e.y


def redundant(seed: int) -> Iterator[Event]:
    """``a1`` and ``a2`` are the same signal with independent noise; ``y = signal > 0.5``."""
    rng = random.Random(seed)
    while True:
        s = rng.random()
        x = {"a1": s + rng.gauss(0, 0.05), "a2": s + rng.gauss(0, 0.05), "c": rng.random(), "d": rng.random()}
        yield x, int(s > 0.5)


def _only(events: Iterator[Event], keep: str) -> Iterator[Event]:
    """The same events with every feature but ``keep`` made uninformative (for training)."""
    rng = random.Random(99)
    for x, y in events:
        yield {f: (v if f == keep else rng.random()) for f, v in x.items()}, y


# --- scenarios --------------------------------------------------------------------------------
def base_settings(**over: Any) -> Settings:
    s = dict(features=["a", "b", "c", "d"], grid_size=5, emit_every=10)
    s.update(over)
    return Settings(**s)


def regression_settings(**over: Any) -> Settings:
    return base_settings(**{"features": [f"x{k}" for k in range(10)], "task": "regression", "output": "value",
                            "loss": "squared", "model": "river.tree.HoeffdingAdaptiveTreeRegressor",
                            "model_params": {}, **over})


def scenarios(scale: float) -> list[Scenario]:
    n = int(12_000 * scale)
    d = n // 2
    s4 = base_settings()
    frozen_n = int(100_000 * scale)
    never = (10**9, 10**9 + 1, 10**9 + 2)  # drift positions beyond the stream: stationary Friedman
    out = [
        Scenario("abrupt", s4, lambda: threshold_stream(1, drift_at=d), n, [d], [{"a", "b"}]),
        Scenario("swap", s4, lambda: threshold_stream(2, swap_at=d), n, [d], [{"a", "c"}]),
        Scenario("gradual", s4, lambda: threshold_stream(3, drift_at=d, width=3000), n, [d - 1500], [{"a", "b"}],
                 duration=3000, note="the mix of the new concept goes from 12% to 88% over 3000 events"),
        Scenario("categorical", base_settings(features=["size", "color", "shape"],
                                              categorical=["size", "color", "shape"]),
                 lambda: stagger(4, (n // 3, 2 * n // 3)), n, [n // 3, 2 * n // 3],
                 # concept 0 (small and red) -> 1 (green or circle) -> 2 (medium or large): all three move each time
                 [{"size", "color", "shape"}, {"size", "color", "shape"}]),
        regression_gra(5, scale),
        regression_local(10, scale),
        Scenario("frozen", s4, lambda: threshold_stream(6), frozen_n, [], [],
                 model=lambda: Frozen(trained(threshold_stream(60), 5000)),
                 target="<= 1 change event per 100,000 events, every explainer watched (iPDP included)"),
        Scenario("frozen-regression", regression_settings(), lambda: friedman_local(12, never), frozen_n // 2, [], [],
                 model=lambda: Frozen(trained_regressor(friedman_local(62, never), 5000)),
                 target="no change event (a frozen regression model, squared loss)"),
        Scenario("learning", s4, lambda: threshold_stream(7), frozen_n // 2, [], [],
                 target="no alert after the warm-up"),
        Scenario("learning-regression", regression_settings(), lambda: friedman_local(13, never), frozen_n // 2, [], [],
                 note="a stationary Friedman stream under a Hoeffding adaptive tree regressor that keeps learning",
                 target="no alert after the warm-up"),
        Scenario("learning-agrawal", Settings(features=list(AGRAWAL_FEATURES)), lambda: agrawal(9), int(18_000 * scale), [], [],
                 note="the demo's control: a Hoeffding adaptive tree still learning agrawal function 1",
                 target="no alert after the warm-up"),
        Scenario("demo", Settings(features=list(AGRAWAL_FEATURES), **demo_settings(int(18_000 * scale))),
                 lambda: demo_stream(int(18_000 * scale)), int(18_000 * scale),
                 [demo_plan(int(18_000 * scale)).drift_at, demo_plan(int(18_000 * scale)).swap_at],
                 [{"salary", "age", "elevel"}, {"elevel", "car"}],
                 note="streamxai demo's drifting stream in process, at the demo's settings",
                 target="the concept drift paged"),
        Scenario("worse", s4, lambda: threshold_stream(11, drift_at=d), n, [d], [{"a", "b"}],
                 model=lambda: Frozen(trained(threshold_stream(61), 5000)),
                 note="the label switches from a > 0.5 to b > 0.5 and the deployed model does not learn",
                 target="a degradation alert within 500 events"),
        Scenario("flat", base_settings(features=["a1", "a2", "c", "d"]), lambda: redundant(8), n, [d], [{"a1", "a2"}],
                 model=lambda: Switched(trained(_only(redundant(80), "a1"), 5000),
                                        trained(_only(redundant(81), "a2"), 5000), d),
                 target="a reliance_shift alert"),
    ]
    return out


def regression_gra(seed: int, scale: float = 1.0) -> Scenario:
    """``regression`` (Friedman ``gra``) on the stream of ``seed`` (5: the table's), named
    ``regression@SEED``."""
    n = int(12_000 * scale)
    return Scenario("regression" if seed == 5 else f"regression@{seed}", regression_settings(),
                    lambda: friedman(seed, n // 2), n, [n // 2], [{f"x{k}" for k in range(10)}])


def regression_local(seed: int, scale: float = 1.0) -> Scenario:
    """``regression-local`` on the stream of ``seed`` (10: the table's; others are named
    ``regression-local@SEED``)."""
    at = (int(10_000 * scale), int(20_000 * scale), int(25_000 * scale))
    return Scenario("regression-local" if seed == 10 else f"regression-local@{seed}", regression_settings(),
                    lambda: friedman_local(seed, at), int(30_000 * scale), list(at),
                    [{f"x{k}" for k in range(5)}] * 3,
                    note="local drifts: two regions of 0.8% of the space each, expanding at every drift",
                    target="median delay <= 1,000 events")


def _min_effect(text: str) -> tuple[float, float]:
    """``--min-effects`` value: (classification, squared loss)."""
    a, _, b = text.partition("/")
    return float(a), float(b or a)


# --- running ----------------------------------------------------------------------------------
def record(sc: Scenario) -> Result:
    """The explainers' pass over ``sc``: every explanation message the detector will see, and
    loss-ADWIN's detections (the detector does not feed back into the explainers)."""
    s = sc.settings
    model = sc.model() if sc.model else build_model(s.model, s.model_params, s.model_seed)
    se = StreamExplainer.on_worker(model, s.features, explainer_specs(s), seed=s.explain_seed, stream_id=sc.name,
                                   categorical=s.categorical, inputs=s.change_inputs)
    adwin = river_drift.ADWIN(delta=0.002)
    fn = ModelFunction(se.current_model, output=s.output)
    loss_fn = get_loss(s.loss)
    res = Result(sc.name, sc.n)
    t0 = time.perf_counter()
    for seq, (x, y) in zip(range(sc.n), sc.events(), strict=False):
        loss = float(loss_fn(y, fn(x)))
        adwin.update(loss)
        if adwin.drift_detected:
            res.adwin.append(seq)
        report = (seq + 1) % s.emit_every == 0
        values = se.process_one(x, y, report=report, loss=loss, position=seq)
        faults = se.take_faults()
        if faults:  # what the watch of the inputs found, as the drift feed carries it before the report
            res.feed.append((INPUTS, None, seq, faults, None, None, None, None))
        if report:
            res.feed += [(v.explainer, v.feature, seq, v.block, v.curve, v.model_loss, v.var_factor, v.value)
                         for v in values]
    res.seconds = time.perf_counter() - t0
    return res


def recorded(sc: Scenario, cache: str) -> Result:
    """:func:`record` of ``sc``, kept in ``cache`` (a pickle per scenario and length)."""
    import pickle

    path = os.path.join(cache, f"{sc.name}-{sc.n}.pickle")
    if os.path.exists(path):
        with open(path, "rb") as f:
            kept = pickle.load(f)
        return Result(sc.name, sc.n, adwin=kept["adwin"], seconds=kept["seconds"], feed=kept["feed"])
    res = record(sc)
    os.makedirs(cache, exist_ok=True)
    with open(path + ".tmp", "wb") as f:  # plain values: readable from any script that imports this one
        pickle.dump({"adwin": res.adwin, "seconds": res.seconds, "feed": res.feed}, f)
    os.replace(path + ".tmp", path)
    return res


def detect(sc: Scenario, rec: Result, settings: Settings | None = None) -> Result:
    """The explanation messages of ``rec`` through the change detector of ``settings`` (default:
    the scenario's), as the change agent sees them."""
    det = stream_detector(settings or sc.settings)
    res = Result(sc.name, sc.n, adwin=rec.adwin, seconds=rec.seconds, feed=rec.feed)
    t1 = time.perf_counter()
    for explainer, feature, seq, block, curve, model_loss, var_factor, _ in rec.feed:
        if explainer == INPUTS:
            changes, episodes = det.input_faults(block)
        else:
            changes, episodes = det.update(explainer, feature, seq, block, curve, model_loss, var_factor)
        for c in changes:
            res.changes.append((c.seq, c.explainer, c.feature, c.cut_seq, c.before.mean, c.after.mean, c.kind))
        res.episodes += [e for e in episodes if e.status == "closed"]
        res.opened += [(seq, e) for e in episodes if e.first]
    for e in det.flush():
        if e.first:
            res.opened.append((e.closed_seq, e))
        res.episodes.append(e)
    res.detector_seconds = time.perf_counter() - t1
    return res


#: a change detects a drift if its new regime starts at most this many events before it
NEAR = 500
#: the delay target (events after the drift); "chance" applies the same criterion where nothing drifted
WITHIN = 1000


def windows(sc: Scenario, window: int) -> list[tuple[int, int]]:
    return [(d, d + sc.duration + window) for d in sc.drifts]


def placebo_positions(sc: Scenario, wins: list[tuple[int, int]]) -> list[int]:
    """Every ``WITHIN`` events after the warm-up, the positions whose next ``WITHIN`` events
    lie outside every drift window: where a change "found within ``WITHIN``" is chance (a
    learning model's explanation moves anyway)."""
    start = sc.settings.change_warmup + NEAR
    return [p for p in range(start, sc.n - WITHIN, WITHIN)
            if all(p + WITHIN < lo or p >= hi for lo, hi in wins)]


def found_within(changes: list, p: int) -> bool:
    """A change confirmed within ``WITHIN`` events of ``p`` whose new regime starts at most
    ``NEAR`` events before it."""
    return any(p <= c[0] <= p + WITHIN and c[3] >= p - NEAR for c in changes)


def losses_after(res: Result, lo: int, hi: int) -> Block | None:
    """The model's losses of events ``[lo, hi)`` from the recorded reports (each report's block
    counts the events since the one before)."""
    out, seen = None, set()
    for _, _, seq, _, _, model_loss, _, _ in res.feed:
        if model_loss is None or seq in seen or not lo <= seq < hi:
            continue
        seen.add(seq)
        out = model_loss if out is None else out + model_loss
    return out


#: events after an alert's cut over which the look-ahead compares the loss with its side before
AHEAD = (500, 2000, 5000)


def look_ahead(res: Result, e: Any) -> str:
    """Did the loss stay higher after an alerting episode's cut? The loss over ``AHEAD`` events
    from the cut against the side before its kind was decided on: ratio and z."""
    parts = []
    for h in AHEAD:
        after = losses_after(res, e.cut_seq, e.cut_seq + h)
        if e.loss_before is None or after is None or after.n < 2 or e.cut_seq + h > res.n:
            parts.append(f"+{h}: n/a")
            continue
        parts.append(f"+{h}: x{after.mean / e.loss_before.mean:.2f} z {two_sample_z(e.loss_before, after):.2f}")
    return ", ".join(parts)


def report(sc: Scenario, res: Result, window: int) -> dict[str, Any]:
    wins = windows(sc, window)
    inside = [c for c in res.changes if any(lo <= c[0] < hi for lo, hi in wins)]
    false = len(res.changes) - len(inside)
    first = sc.drifts[0] if sc.drifts else sc.n
    false_learning = sum(1 for c in res.changes if c[0] < first)  # before the first drift: the model learning
    adwin_false = sum(1 for q in res.adwin if not any(lo <= q < hi for lo, hi in wins))
    per100k = 100_000 / sc.n
    delays, adwin_delays, fired, good = [], [], [], 0
    for (lo, hi), want in zip(wins, sc.changed, strict=True):
        mine = [c for c in res.changes if lo <= c[0] < hi]
        # a detection of this drift: a change in its window whose new regime starts near it (a
        # change cut long before it is the model's earlier learning, found by chance now)
        found = [c for c in mine if c[3] >= lo - NEAR]
        delays.append(found[0][0] - lo if found else None)
        ad = [q for q in res.adwin if lo <= q < hi]
        adwin_delays.append(ad[0] - lo if ad else None)
        fired.append(sorted({f"{c[1]}/{c[2]}" for c in mine}))
        good += sum(1 for c in mine if c[2] in want)
    spots = placebo_positions(sc, wins)
    return {
        "within": sum(1 for x in delays if x is not None and x <= WITHIN), "chance": sum(found_within(res.changes, p) for p in spots),
        "spots": len(spots),
        "delays": delays, "adwin_delays": adwin_delays, "false_per_100k": false * per100k,
        "adwin_false_per_100k": adwin_false * per100k, "n_changes": len(res.changes), "n_adwin": len(res.adwin),
        "precision": good / len(inside) if inside else None, "fired": fired,
        "episodes": len(res.episodes), "false_before_first_drift": false_learning,
        "kinds": {k: sum(1 for _, e in res.opened if e.kind == k) for k in KINDS},
        "alerts": [(q, e.kind, e.first_seq) for q, e in res.opened if e.alert],
        "alert_delays": [next((q - lo for q, e in res.opened if e.alert and lo <= q < hi and e.cut_seq >= lo - NEAR),
                              None) for lo, hi in wins],
        "alerts_outside": sum(1 for q, e in res.opened if e.alert and not any(lo <= q < hi for lo, hi in wins)
                              and q >= sc.settings.change_warmup),
        "ahead": [(q, e.kind, e.cut_seq, look_ahead(res, e)) for q, e in res.opened
                  if e.alert and not any(lo <= q < hi for lo, hi in wins) and q >= sc.settings.change_warmup],
    }


def change_path_speed(sc: Scenario, res: Result, repeats: int = 3) -> tuple[float, float]:
    """Microseconds per explanation message: this detector vs today's change path before it
    (river's ADWIN, delta 0.002, checking every point, on each series' smoothed value), on the
    same messages."""
    def ours() -> None:
        det = stream_detector(sc.settings)
        for item in res.feed:
            if item[0] != INPUTS:
                det.update(*item[:7])

    def adwin() -> None:
        dets: dict[tuple[str, str], Any] = {}
        for e, f, _, _, _, _, _, value in res.feed:
            if e == INPUTS:
                continue
            d = dets.get((e, f))
            if d is None:
                d = dets[(e, f)] = river_drift.ADWIN(delta=0.002, grace_period=10, clock=1)
            d.update(value)

    best = []
    for fn in (ours, adwin):
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        best.append(min(times) / len(res.feed) * 1e6)
    return best[0], best[1]


def _delays(xs: list[int | None]) -> str:
    return ",".join("-" if x is None else str(x) for x in xs) or "n/a"


def table(runs: list[tuple[Scenario, Result]], window: int, detail: bool = True) -> list:
    """Report each run (``detail``: its change events and alerts), then one row per scenario."""
    rows = []
    for sc, res in runs:
        r = report(sc, res, window)
        rows.append((sc, res, r))
        if not detail:
            continue
        print(f"{sc.name}: {sc.n} events in {res.seconds:.0f}s (detector {res.detector_seconds:.1f}s); "
              f"change events {r['n_changes']} ({r['false_before_first_drift']} before the first drift), "
              f"episodes by kind {r['kinds']}, alerts {len(r['alerts'])}, loss-ADWIN detections {r['n_adwin']}"
              + (f"; target: {sc.target}" if sc.target else ""), flush=True)
        for (d, want), fired, dl, ad, al in zip(zip(sc.drifts, sc.changed, strict=True), r["fired"], r["delays"],
                                                r["adwin_delays"], r["alert_delays"], strict=True):
            print(f"  drift at {d}: delay {dl} (loss-ADWIN {ad}), alert after {al}; fired {fired}; changed {sorted(want)}")
        for c in res.changes[:12]:
            print(f"    change seq {c[0]} {c[1]}/{c[2]} cut {c[3]} {c[4]:.4g} -> {c[5]:.4g} ({c[6]})")
        for q, kind, first in r["alerts"][:8]:
            print(f"    alert at seq {q}: {kind} (first change at {first})")
    print()
    print(f"{'scenario':<22}{'delay':>16}{'ADWIN delay':>16}{'alert after':>13}{'false/100k':>11}{'ADWIN f/100k':>13}"
          f"{'events':>7}{'ADWIN':>6}{'learn/degr/shift':>17}{'alerts out':>11}{'<=1k':>6}{'chance':>8}")
    all_delays = []
    for sc, _res, r in rows:
        k = r["kinds"]
        kinds = f"{k['learning']}/{k['degradation']}/{k['reliance_shift']}"
        within = f"{r['within']}/{len(sc.drifts)}" if sc.drifts else "-"
        print(f"{sc.name:<22}{_delays(r['delays']):>16}{_delays(r['adwin_delays']):>16}{_delays(r['alert_delays']):>13}"
              f"{r['false_per_100k']:>11.1f}{r['adwin_false_per_100k']:>13.1f}{r['n_changes']:>7}{r['n_adwin']:>6}"
              f"{kinds:>17}{r['alerts_outside']:>11}{within:>6}{r['chance']:>4}/{r['spots']:<3}")
        all_delays += [x for x in r["delays"] if x is not None]
    for sc, _res, r in rows:
        for q, kind, cut, ahead in r["ahead"]:
            print(f"  {sc.name}: alert out at {q} ({kind}, cut {cut}), the loss after the cut against before: {ahead}")
    print(f"delay: first change event after each drift whose new regime starts at most {NEAR} events before it; "
          "alert after: the first such alerting episode's open message; alerts out: alerts after the warm-up "
          "outside every drift window")
    print(f"<=1k: drifts found within {WITHIN} events; chance: positions without a drift (every {WITHIN} events "
          f"after the warm-up, outside the drift windows) where a change meets the same criterion")
    local = [(sc, r) for sc, _, r in rows if sc.name.startswith("regression-local")]
    if local:
        medians, every = [], []
        for sc, r in local:
            ds = [x if x is not None else window for x in r["delays"]]
            medians.append(statistics.median(ds))
            every += ds
            print(f"{sc.name}: median delay {medians[-1]} events (a missed drift counts as the window, {window})")
        if len(local) > 1:
            print(f"regression-local over {len(local)} seeds: medians {medians}, their median {statistics.median(medians)}; "
                  f"median over all {len(every)} drifts {statistics.median(every)}; found within {WITHIN}: "
                  f"{sum(r['within'] for _, r in local)}/{len(every)} drifts, by chance "
                  f"{sum(r['chance'] for _, r in local)}/{sum(r['spots'] for _, r in local)} positions")
    if all_delays:
        print(f"median delay {statistics.median(all_delays)} events, max {max(all_delays)} "
              f"(window {window}; a missed drift shows as '-')")
    return rows


def main() -> None:
    """In-process (a :class:`~streamxai.core.stream.StreamExplainer` and the change agent's
    :class:`~streamxai.core.change.StreamChangeDetector`, built from settings exactly as the
    pipeline builds them; no Kafka), on scenarios built from river's generators and by hand:

    - ``abrupt``: label ``a > 0.5`` switches to ``b > 0.5`` (concept switch);
    - ``swap``: the values of the used feature ``a`` and the unused ``c`` are exchanged;
    - ``gradual``: the same concept switch as ``abrupt`` over 3,000 events (river ConceptDriftStream);
    - ``categorical``: river STAGGER, concept 0 -> 1 -> 2 (three categorical features);
    - ``regression``: river FriedmanDrift ``gra`` (relevant and irrelevant features trade places),
      target times 1000, squared loss;
    - ``frozen``: stationary stream, a model trained beforehand and then frozen (the false-alarm target);
    - ``learning``: stationary stream, a model that keeps learning;
    - ``learning-regression``: a stationary Friedman stream, a regression tree that keeps learning;
    - ``learning-agrawal``: the demo's control stream (agrawal function 1, the default model and
      all 27 series), whose model keeps improving for thousands of events;
    - ``flat``: two redundant, equally informative features; the deployed (frozen) model changes from
      one that uses ``a1`` to one that uses ``a2`` -- accuracy stays flat while the reliance moves;
    - ``worse``: the ``abrupt`` concept switch under a frozen model: its loss rises;
    - ``regression-local``: river FriedmanDrift ``lea`` at 10,000, 20,000 and 25,000 (the concept
      changes in two regions of 1.6%, then 5.4%, then 18% of the inputs), target times 1000;
    - ``frozen-regression``: a stationary Friedman stream under a frozen Hoeffding tree regressor;
    - ``demo``: ``streamxai demo``'s drifting stream (agrawal function 1 -> 2 at 6,000, ``elevel``
      and ``car`` swapped at 12,000) at the demo's settings, in process.

    Per scenario it prints, for the explanation detector at default drift settings and for the
    baseline measured in the same run (river ADWIN, delta 0.002, on the model's prequential loss):
    the detection delay after each drift (the first change event within ``--window`` events whose
    new regime starts at most 500 events before the drift), the false change events per 100,000
    events (outside every drift window), the series that fired in each drift window versus the
    features that changed, the change events with their kinds, the episodes by kind, the alerts and
    when the first alert of each drift came. Scenarios with a detection target print it
    (``target:``).

    Each scenario goes through its explainers once (``--cache``: kept there and reused); the
    explanation messages are then replayed through the detector, once per ``--min-effects`` value
    (the same messages: candidates are compared on the same run, the first one the baseline; ``A/B``:
    ``A`` for classification, ``B`` for squared loss). Every alert after the warm-up
    outside the drift windows is printed with its look-ahead: the loss over the 500, 2,000 and 5,000
    events from its cut against the side before it was told on (did the model really get worse?).
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a quarter of the events (a smoke run)")
    ap.add_argument("--only", default="", help="comma-separated scenario names")
    ap.add_argument("--window", type=int, default=3000, help="events after a drift in which change events count")
    ap.add_argument("--seeds", default="10",
                    help="comma-separated stream seeds of regression-local (10: the table's; each other one adds "
                         "a scenario regression-local@SEED)")
    ap.add_argument("--cache", default="",
                    help="keep each scenario's pass through the explainers here and reuse it (a pickle per scenario)")
    ap.add_argument("--regression-seeds", default="",
                    help="comma-separated stream seeds of the regression (Friedman gra) scenario (5: the table's; "
                         "each other one adds a scenario regression@SEED)")
    ap.add_argument("--min-effects", default="",
                    help="comma-separated change_min_effect values: replay every scenario's explanations through the "
                         "detector under each (default: the scenario's settings); A/B: A for classification, B for "
                         "squared loss")
    args = ap.parse_args()
    scale = 0.25 if args.quick else 1.0
    chosen = []
    for sc in scenarios(scale):
        if not args.only or sc.name in args.only.split(","):
            chosen.append(sc)
            if sc.name == "regression-local":
                chosen += [regression_local(int(x), scale) for x in args.seeds.split(",") if int(x) != 10]
            if sc.name == "regression" and args.regression_seeds:
                chosen += [regression_gra(int(x), scale) for x in args.regression_seeds.split(",") if int(x) != 5]
    candidates = [_min_effect(x) for x in args.min_effects.split(",")] if args.min_effects else [None]
    recs = []
    for sc in chosen:
        rec = recorded(sc, args.cache) if args.cache else record(sc)
        recs.append((sc, rec))
        print(f"{sc.name}: {sc.n} events through the explainers in {rec.seconds:.0f}s", flush=True)
    for me in candidates:
        if me is not None:
            shown = f"change_min_effect {me[0]}" + (f" (squared loss: {me[1]})" if me[1] != me[0] else "")
            print(f"\n=== {shown} ===")
        rows = table([(sc, detect(sc, rec, None if me is None else sc.settings.replace(
            change_min_effect=me[sc.settings.loss == "squared"])))
                      for sc, rec in recs], args.window, detail=len(candidates) == 1)
    if rows:
        sc, res, _ = rows[0]
        us, us_adwin = change_path_speed(sc, res)
        print(f"change path on {sc.name}'s {len(res.feed)} explanation messages: {us:.1f} us per message, "
              f"ADWIN on the smoothed values (the previous change path) {us_adwin:.1f} us: ratio {us / us_adwin:.2f}")


if __name__ == "__main__":
    main()
