"""One contract test over every stateful core component: each Component of ``streamxai.core`` is
registered in :data:`CASES` (a seeded factory, a seeded input stream, and a ``step`` returning what one
input's calls produced), and the checks run over all: inputs are never mutated and returned containers
are not internal state; pickle and snapshot/restore mid-stream give exactly the uninterrupted outputs;
one seed gives the same outputs (also under another ``PYTHONHASHSEED``), another seed other outputs;
outputs are plain and survive the wire format; ``clone()`` keeps the parameters and drops learned state;
no mutable default arguments; and every component is registered."""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import os
import pickle
import pkgutil
import random
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import streamxai.core
from river import base as river_base
from river import linear_model, tree
from streamxai.core.attribution import LocalShapley
from streamxai.core.attribution.series import LocalSeries
from streamxai.core.base import Component
from streamxai.core.batch import IntervalPFI, SlidingWindowSAGE
from streamxai.core.budget import EventSampler, LagShedder
from streamxai.core.change import SeriesTest, SeriesWindow, StreamChangeDetector
from streamxai.core.change.dependence import SerialVariance
from streamxai.core.change.inputs import InputMonitor
from streamxai.core.explainers import IPDP, IPFI, ISAGE, Explainer
from streamxai.core.increments import Block
from streamxai.core.labels import LabelJoin
from streamxai.core.model import ModelFunction
from streamxai.core.prequential import PrequentialModel
from streamxai.core.removal import ConditionalRemoval, MarginalRemoval, Removal
from streamxai.core.storage import ExtremeValueStorage, FrequencyStorage, GeometricReservoir, UniformReservoir
from streamxai.core.storage.frequency import category_key
from streamxai.core.storage.reservoir import _Reservoir
from streamxai.core.stream import ExplainerSpec, StreamExplainer
from streamxai.core.uncertainty import SmoothedStderr
from streamxai.local.demo_stream import agrawal_events
from streamxai.plan import prequential_model, stream_explainer
from streamxai.schemas import dumps_obj
from streamxai.settings import AGRAWAL_FEATURES, Settings

SEED = 7
NUMERIC = ["a", "b", "c"]
COLOURS = ["red", "green", "blue", "cyan", "grey", "pink"]
COLOUR_EFFECT = {"red": 1.0, "green": 2.0, "blue": -1.0, "cyan": 0.5, "grey": 0.0, "pink": -2.0}


# models: module-level functions (they pickle by reference) and small pre-trained river models
def threshold_label(x: dict) -> int:
    return int(x["a"] + 0.5 * x["b"] > 0.8)


def linear_value(x: dict) -> float:
    return 3.0 * x["a"] + x["b"] - 0.5 * x["a"] * x["c"]


def colour_value(x: dict) -> float:
    return x["a"] + COLOUR_EFFECT[x["colour"]]


def numeric_xs(n: int, seed: int) -> list[dict]:
    """``a, c`` uniform, ``b`` depends on ``a``; ``a`` shifts up halfway (grids and storages move)."""
    rng = random.Random(seed)
    xs = []
    for i in range(n):
        a = rng.random()
        b = 0.7 * a + 0.3 * rng.random()
        c = rng.random()
        xs.append({"a": a + (0.5 if i >= n // 2 else 0.0), "b": b, "c": c})
    return xs


def labelled(xs: list[dict], f: Callable[[dict], Any]) -> list[tuple[dict, Any]]:
    return [(x, f(x)) for x in xs]


def trained_linear_regression() -> linear_model.LinearRegression:
    m = linear_model.LinearRegression()
    for x in numeric_xs(60, seed=3):
        m.learn_one(x, linear_value(x))
    return m


def trained_logistic_regression() -> linear_model.LogisticRegression:
    m = linear_model.LogisticRegression()
    for x in numeric_xs(60, seed=4):
        m.learn_one(x, bool(threshold_label(x)))
    return m


def trained_tree() -> tree.HoeffdingTreeClassifier:
    m = tree.HoeffdingTreeClassifier(grace_period=10, delta=0.1)
    for x in numeric_xs(200, seed=15):
        m.learn_one(x, bool(threshold_label(x)))
    return m


# steps: the component's calls for one input, and what they produced ------------------------
def explain_step(ex: Explainer, item: tuple[dict, Any], i: int) -> dict:
    """Explain most events; every 7th is only observed (an event skipped under a budget)."""
    x, y = item
    if i % 7 == 6:
        ex.observe_one(x, y)
        ret = None
    else:
        ret = ex.explain_one(x, y)
    out = {"explain": ret, "values": dict(ex.values), "n_explained": ex.n_explained,
           "n_evaluations": ex.n_evaluations, "stderr": ex.stderr}
    if isinstance(ex, IPDP):
        out["curves"] = ex.curves()
    return out


def local_step(ex: LocalShapley, x: dict, i: int) -> dict:
    """Explain the row against the rows stored so far, then store it."""
    values = ex.explain_one(x)
    ex.learn_one(x)
    return {"values": values, "base": ex.base_value, "prediction": ex.prediction, "target": ex.target,
            "method": ex.method, "stderr": ex.stderr, "n_evaluations": ex.n_evaluations, "background": ex.background}


def local_series_step(series: LocalSeries, values: dict, i: int) -> dict:
    """Fold in one prediction's attributions; the report it completes, if any."""
    report = series.add(values)
    return {"report": [[v.explainer, v.feature, v.value, v.n_explained, v.block.to_dict()] for v in report],
            "n_explained": series.n_explained}


def signed_values(n: int, seed: int) -> list[dict]:
    """Attributions of both signs, as a prediction's local values are."""
    return [{f: v - 0.6 for f, v in x.items()} for x in numeric_xs(n, seed)]


def interval_step(ex: IntervalPFI, item: tuple[dict, Any], i: int) -> dict:
    return {"explain": ex.update(*item), "values": dict(ex.values), "n_intervals": ex.n_intervals,
            "n_evaluations": ex.model_fn.n_evaluations}


def reservoir_step(r: _Reservoir, x: dict, i: int) -> dict:
    drawn = dict(r.sample(random.Random(i))) if len(r) else None
    r.update(x)
    return {"sample": drawn, "items": [dict(it) for it in r.items], "n_seen": r.n_seen}


def extreme_step(s: ExtremeValueStorage, v: float, i: int) -> dict:
    s.update(v)
    return {"min": s.min, "max": s.max, "len": len(s), "n_seen": s.n_seen}


def frequency_step(s: FrequencyStorage, v: float, i: int) -> dict:
    s.update(v)
    counts = s.counts
    return {
        "stored": s.values,
        "counts": [[c, counts[c]] for c in sorted(counts, key=category_key)],
        "frequent": s.frequent(3),
        "quantiles": [s.quantile(q) for q in (0.0, 0.05, 0.5, 0.95, 1.0)],
        "n_seen": s.n_seen,
        "n_replaced": s.n_replaced,
    }


def removal_step(rem: Removal, x: dict, i: int) -> dict:
    """Draw for ``x`` from the past (as iSAGE does), then store ``x``."""
    draws = None
    if rem.ready:
        rng = random.Random(i)
        names = list(rem.feature_names)
        order = names[i % len(names):] + names[: i % len(names)]
        draws = {
            "rows": rem.sample_rows(x, order[1:], 2, rng),
            "chain": rem.sample_chain(x, order, 1, rng),
            "one": rem.sample(x, {order[0]}, rng),
        }
    rem.update(x)
    out: dict[str, Any] = {"draws": draws, "ready": rem.ready}
    if isinstance(rem, ConditionalRemoval):
        out["n_nodes"] = [t.n_nodes for t in rem.trees.values()]
    return out


def change_step(m: StreamChangeDetector, item: tuple, i: int) -> dict:
    from streamxai.handlers.change import change_episode, change_event

    explainer, feature, seq, block, curve = item
    changes, episodes = m.update(explainer, feature, seq, Block(*block), curve, Block(*block))
    return {"changes": [change_event("s", c).to_dict() for c in changes],
            "episodes": [change_episode("s", e).to_dict() for e in episodes]}


def series_test_step(m: SeriesTest, item: tuple, i: int) -> dict:
    _, feature, seq, (n, mean, m2), _ = item
    cut = m.add(seq - n + 1, seq, Block(n, mean, m2), 0.05) if feature == "a" else None
    return {"cut": None if cut is None else [cut.seq, cut.before.mean, cut.after.mean, cut.z], "checks": m.checks}


def serial_variance_step(v: SerialVariance, item: tuple, i: int) -> dict:
    _, _, _, (n, mean, m2), _ = item
    v.add(Block(n, mean, m2))
    return {"factor": v.factor}


def window_step(w: SeriesWindow, item: tuple, i: int) -> dict:
    _, _, seq, (n, mean, m2), _ = item
    w.add(seq - n + 1, seq, Block(n, mean, m2))
    return {"n": w.n, "buckets": [[b.block.n, b.block.mean, b.block.m2, b.seq_lo, b.seq_hi, b.level] for b in w.buckets],
            "split": [m and m.mean for m in w.split(seq - 30)]}


def stderr_step(t: SmoothedStderr, item: tuple[list, list], i: int) -> dict:
    """One event's increments of two features; every other event drew donors from a list."""
    deltas, pool = item
    t.add_increments(deltas)
    if i % 2:
        t.add_donors(pool, [i % len(pool), (i * 7) % len(pool)], deltas)
    return {"stderr": t.stderrs(), "n": t.n}


def stderr_stream() -> list[tuple[list, list]]:
    rng = random.Random(23)
    pool = [{"k": k} for k in range(5)]  # the same objects throughout: slots are kept by identity
    return [([rng.gauss(0.0, 1.0), rng.random()], pool) for _ in range(100)]


def sampler_step(s: EventSampler, item: tuple[str, int], i: int) -> dict:
    return {"selected": s.selected(*item)}


def shedder_step(s: LagShedder, waited: float, i: int) -> dict:
    return {"shed": s.shed(waited), "n_shed": s.n_shed}


def prequential_step(m: PrequentialModel, item: tuple[dict, Any], i: int) -> dict:
    y_pred, loss = m.process_one(*item)
    return {"y_pred": y_pred, "loss": loss, "version": m.version}


def join_step(j: LabelJoin, item: tuple, i: int) -> dict:
    """A feature event ``("f", seq, x, y)`` or a label ``("l", seq, y)``, arriving at time ``i``."""
    if item[0] == "f":
        res = j.on_features(item[1], item[2], item[3], ts=float(item[1]), at=float(i))
    else:
        res = j.on_label(item[1], item[2], at=float(i), ref=i)
    return {"steps": [[s.kind, s.seq, s.position, dict(s.x), s.y, s.loss] for s in res.steps],
            "prediction": dataclasses.asdict(res.prediction) if res.prediction else None,
            "outcomes": [dataclasses.asdict(o) for o in res.outcomes],
            "refused": [[r.seq, r.reason, r.ref] for r in res.refused], "held": res.held, "duplicate": res.duplicate,
            "waiting": j.waiting, "version": j.model_version, "position": j.position}


def delayed_stream_step(se: StreamExplainer, item: tuple, i: int) -> dict:
    kind, x, y = item
    out = se.step(kind, x, y, explain=i % 5 != 4, loss=0.5 if y is not None else None)
    return {"explanations": plain_values(out), "model_version": se.model_version, "n_seen": se.n_seen}


def model_fn_step(f: ModelFunction, x: dict, i: int) -> dict:
    swapped = {**x, "a": x["c"], "c": x["a"]}
    return {"one": f(x), "many": f.many([x, swapped]), "n_evaluations": f.n_evaluations}


def stream_step(se: StreamExplainer, item: tuple[dict, Any], i: int) -> dict:
    x, y = item
    out = se.process_one(x, y, explain=i % 5 != 4)
    return {"explanations": plain_values(out), "model_version": se.model_version, "n_seen": se.n_seen}


def plain_values(out: list) -> list[dict]:
    """Explanation values with their blocks as the explain handler sends them."""
    def plain(v: Any) -> Any:
        return v.to_dict() if isinstance(v, Block) else v

    return [{f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)} for v in out]


# streams -----------------------------------------------------------------------------------
def colour_stream() -> list[tuple[dict, float]]:
    """Categories whose frequencies change halfway, so the frequent set (the grid) moves."""
    rng = random.Random(21)
    early, late = [6, 5, 4, 1, 1, 1], [1, 1, 2, 5, 6, 6]
    xs = [{"a": rng.random(), "colour": rng.choices(COLOURS, early if i < 50 else late)[0]} for i in range(100)]
    return labelled(xs, colour_value)


def mixed_xs() -> list[dict]:
    """Numeric ``a, b`` (``b`` a noisy copy of ``a``) and a categorical ``k`` depending on ``a``."""
    rng = random.Random(31)
    xs = []
    for _ in range(100):
        a = rng.random()
        xs.append({"a": a, "b": a + 0.05 * rng.random(), "k": "lo" if a + 0.2 * rng.random() < 0.6 else "hi"})
    return xs


def input_stream() -> list[dict]:
    """Two features over 300 events: a stuck from event 30 to 100 and from 150, b's unit changed from
    event 200 (a monitor that has seen events before finds the first, a fresh one has no reference yet)."""
    rng = random.Random(43)
    return [{"a": 7.0 if 30 <= i < 100 or i >= 150 else rng.gauss(5.0, 1.0),
             "b": rng.random() * (1000.0 if i >= 200 else 1.0)} for i in range(300)]


def input_step(m: InputMonitor, x: dict, i: int) -> dict:
    return {"faults": [[f.feature, f.what, f.seq, f.start, f.detail] for f in m.update(i, x)]}


def change_stream() -> list[tuple]:
    """Blocks of 5 increments of two iPFI series and one iPDP series (with curves); a and the
    curve step at event 200, so changes and an episode happen within the stream."""
    rng = random.Random(41)
    items = []
    for t in range(80):
        seq = 5 * t + 4
        for ex, f, lv in (("ipfi", "a", 0.1 if t < 40 else 0.8), ("ipfi", "b", 0.3), ("ipdp", "a", 0.2)):
            xs = [lv + rng.gauss(0.0, 0.05) for _ in range(5)]
            mean = sum(xs) / 5
            curve = {"grid": [0.0, 1.0], "pd": [0.1, 0.2 if t < 40 else 0.9]} if ex == "ipdp" else None
            items.append((ex, f, seq, (5, mean, sum((x - mean) ** 2 for x in xs)), curve))
    return items


def lag_stream() -> list[float]:
    """Seconds events waited; about half over the 1 s limit."""
    rng = random.Random(17)
    return [rng.uniform(0.0, 2.0) for _ in range(100)]


def agrawal_stream(n: int, seed: int, unlabelled: tuple[int, ...] = ()) -> list[tuple[dict, Any]]:
    evs = agrawal_events("s", n=n, drift_at=n // 2, seed=seed)
    return [(ev.x, None if ev.seq in unlabelled else ev.y) for ev in evs]


def arrivals_stream(n: int = 120, delay: int = 7) -> list[tuple]:
    """Feature events (every 4th labelled inline) and labels ``delay`` later: early, twice, unknown, a tenth never."""
    evs = list(agrawal_events("s", n=n, drift_at=n // 2, seed=22))
    out: list[tuple] = []
    for ev in evs:
        if ev.seq == 30:
            out.append(("l", 31, evs[31].y))  # overtakes its event
        out.append(("f", ev.seq, ev.x, ev.y if ev.seq % 4 == 0 else None))
        q = ev.seq - delay
        if q >= 0 and q % 4 and q % 10 != 3 and q != 31:
            out.append(("l", q, evs[q].y))
        if ev.seq in (50, 80):
            out.append(("l", ev.seq - 12, evs[ev.seq - 12].y))  # again / in line already
    out.append(("l", n + 500, 1))
    return out


def small_join(seed: int) -> LabelJoin:
    s = small_settings(seed)
    return LabelJoin(prequential_model(s), s.features, s.categorical, max_label_delay=20)


def delayed_steps(n: int = 60, delay: int = 5) -> list[tuple]:
    """The predict step of every event and, ``delay`` events later, its learn step."""
    evs = list(agrawal_events("s", n=n, drift_at=n // 2, seed=23))
    out: list[tuple] = []
    for ev in evs:
        out.append(("predict", ev.x, None))
        if ev.seq >= delay:
            old = evs[ev.seq - delay]
            out.append(("learn", old.x, old.y))
    return out


def small_settings(seed: int) -> Settings:
    """A tree that splits within the short streams, so the explained model changes under the checks."""
    return Settings(
        features=list(AGRAWAL_FEATURES),
        model="river.tree.HoeffdingTreeClassifier",
        model_params={"grace_period": 10, "delta": 0.1, "tau": 0.3},
        model_seed=seed,
        explain_seed=seed,
        alpha=0.05,
        storage_size=20,
        grid_size=4,
        categorical=["elevel"],
    )


# the registry ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    make: Callable[[int], Component]  # a fresh instance for a seed
    stream: Callable[[], list]  # seeded inputs, the same for every seed of the component
    step: Callable[[Any, Any, int], dict]  # calls for input i, returns what they produced
    seeded: bool  # the seed drives random draws: another seed changes the outputs
    stateful: bool = True  # outputs depend on the inputs seen before
    mutable_input: bool = True  # inputs are dicts (scalars cannot be mutated)


CASES = [
    Case("IPFI-label-geometric",
         lambda s: IPFI(ModelFunction(threshold_label), "zero_one", NUMERIC, alpha=0.1, n_samples=2,
                        storage_size=10, seed=s),
         lambda: labelled(numeric_xs(100, seed=1), threshold_label), explain_step, seeded=True),
    Case("IPFI-value-uniform-river",
         lambda s: IPFI(ModelFunction(trained_linear_regression(), output="value"), "squared", NUMERIC,
                        features=["a", "c"], alpha=0.1, storage="uniform", storage_size=10, seed=s),
         lambda: labelled(numeric_xs(100, seed=2), linear_value), explain_step, seeded=True),
    Case("ISAGE-interventional",
         lambda s: ISAGE(ModelFunction(linear_value, output="value"), "squared", NUMERIC, alpha=0.1,
                         n_inner_samples=2, storage_size=10, seed=s),
         lambda: labelled(numeric_xs(100, seed=5), linear_value), explain_step, seeded=True),
    Case("ISAGE-observational-river",
         lambda s: ISAGE(ModelFunction(trained_logistic_regression(), output="proba_of", target_class=True),
                         "cross_entropy", NUMERIC, alpha=0.1, removal="observational", storage_size=10, seed=s),
         lambda: labelled(numeric_xs(100, seed=6), threshold_label), explain_step, seeded=True),
    Case("IPDP-extreme",
         lambda s: IPDP(ModelFunction(linear_value, output="value"), NUMERIC, alpha=0.1, grid_size=4,
                        window=30, seed=s),
         lambda: labelled(numeric_xs(100, seed=8), linear_value), explain_step, seeded=False),
    Case("IPDP-quantile-river",
         lambda s: IPDP(ModelFunction(trained_linear_regression(), output="value"), NUMERIC, features=["a", "b"],
                        alpha=0.1, grid_size=4, grid="quantile", storage_size=10, window=40, seed=s),
         lambda: labelled(numeric_xs(100, seed=9), linear_value), explain_step, seeded=True),
    Case("IPDP-categorical",
         lambda s: IPDP(ModelFunction(colour_value, output="value"), ["a", "colour"], alpha=0.1, grid_size=3,
                        grid="quantile", storage_size=8, window=24, categorical=["colour"], seed=s),
         colour_stream, explain_step, seeded=True),
    Case("SlidingWindowSAGE",
         lambda s: SlidingWindowSAGE(ModelFunction(linear_value, output="value"), "squared", NUMERIC, window=20,
                                     stride=10, n_inner_samples=2, seed=s),
         lambda: labelled(numeric_xs(100, seed=10), linear_value), explain_step, seeded=True),
    Case("IntervalPFI",
         lambda s: IntervalPFI(ModelFunction(threshold_label), "zero_one", NUMERIC, interval=20, n_repeats=2, seed=s),
         lambda: labelled(numeric_xs(100, seed=11), threshold_label), interval_step, seeded=True),
    Case("UniformReservoir", lambda s: UniformReservoir(size=10, seed=s),
         lambda: numeric_xs(120, seed=12), reservoir_step, seeded=True),
    Case("GeometricReservoir", lambda s: GeometricReservoir(size=10, seed=s),
         lambda: numeric_xs(120, seed=13), reservoir_step, seeded=True),
    Case("ExtremeValueStorage", lambda s: ExtremeValueStorage(window=20),
         lambda: [x["a"] for x in numeric_xs(150, seed=14)], extreme_step, seeded=False, mutable_input=False),
    Case("FrequencyStorage", lambda s: FrequencyStorage(size=10, entrance_probability=0.3, seed=s),
         lambda: [round(x["b"], 1) for x in numeric_xs(150, seed=15)], frequency_step, seeded=True,
         mutable_input=False),
    Case("MarginalRemoval", lambda s: MarginalRemoval(NUMERIC, storage_size=10, seed=s),
         lambda: numeric_xs(100, seed=16), removal_step, seeded=True),
    Case("ConditionalRemoval",
         lambda s: ConditionalRemoval(["a", "b", "k"], storage_size=10,
                                      tree_params={"grace_period": 10, "delta": 0.5}, seed=s),
         mixed_xs, removal_step, seeded=True),
    Case("StreamChangeDetector",
         lambda s: StreamChangeDetector([("ipfi", "a"), ("ipfi", "b"), ("ipdp", "a")], delta=0.01, min_samples=20,
                                        warmup=20, episode_gap=60),
         change_stream, change_step, seeded=False),
    Case("SeriesTest", lambda s: SeriesTest(delta=0.01, min_samples=20), change_stream, series_test_step,
         seeded=False),
    Case("SeriesWindow", lambda s: SeriesWindow(max_increments=100), change_stream, window_step, seeded=False),
    Case("SerialVariance", lambda s: SerialVariance(batch=10, kept=8, min_pairs=3), change_stream,
         serial_variance_step, seeded=False),
    Case("InputMonitor", lambda s: InputMonitor(["a", "b"], recent=20, reference=60, every=5), input_stream,
         input_step, seeded=False),
    Case("SmoothedStderr", lambda s: SmoothedStderr(["a", "b"], alpha=0.1, start="zero"),
         stderr_stream, stderr_step, seeded=False, mutable_input=False),
    Case("EventSampler", lambda s: EventSampler(rate=0.5, seed=s),
         lambda: [("s", seq) for seq in range(150)], sampler_step, seeded=True, stateful=False,
         mutable_input=False),
    Case("LagShedder", lambda s: LagShedder(max_lag_s=1.0),
         lag_stream, shedder_step, seeded=False, mutable_input=False),
    Case("PrequentialModel",
         lambda s: prequential_model(small_settings(s)),
         lambda: agrawal_stream(120, seed=18, unlabelled=(3, 50)), prequential_step, seeded=False),
    Case("ModelFunction",
         lambda s: ModelFunction(trained_logistic_regression(), output="proba_of", target_class=True),
         lambda: numeric_xs(60, seed=19), model_fn_step, seeded=False),
    Case("LocalShapley-tree", lambda s: LocalShapley(trained_tree(), NUMERIC, storage_size=10, seed=s),
         lambda: numeric_xs(60, seed=16), local_step, seeded=True),
    Case("LocalShapley-sampled", lambda s: LocalShapley(linear_value, NUMERIC, storage_size=5, max_evaluations=40, seed=s),
         lambda: numeric_xs(40, seed=17), local_step, seeded=True),
    Case("LocalSeries", lambda s: LocalSeries(NUMERIC, emit_every=4), lambda: signed_values(30, seed=22),
         local_series_step, seeded=False),
    Case("StreamExplainer",
         lambda s: stream_explainer(small_settings(s), "s"),
         lambda: agrawal_stream(60, seed=20, unlabelled=(10,)), stream_step, seeded=True),
    Case("StreamExplainer-delayed-labels",
         lambda s: stream_explainer(small_settings(s).replace(emit_every=3), "s"),
         delayed_steps, delayed_stream_step, seeded=True),
    Case("LabelJoin", small_join, arrivals_stream, join_step, seeded=False),
]

# Component bugs this test found are pinned as strict xfails here (none open).
EXPLAINER_CASES = [c for c in CASES if isinstance(c.make(SEED), (Explainer, IntervalPFI))]


def params(cases: list[Case], known: dict[str, str] | None = None) -> list:
    known = known or {}
    return [
        pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=known[c.id])]
                     if c.id in known else [])
        for c in cases
    ]


# helpers -----------------------------------------------------------------------------------
def run(obj: Any, case: Case, stream: list, start: int = 0, *, check_inputs: bool = False,
        vandalise: bool = False) -> list[dict]:
    """Outputs of ``obj`` over ``stream`` (input ``i`` is ``stream[i - start]``), each deep-copied
    when produced so that later changes of a returned object are caught too."""
    outs = []
    for j, item in enumerate(stream):
        i = start + j
        before = copy.deepcopy(item) if check_inputs else None
        out = case.step(obj, item, i)
        if check_inputs:
            assert item == before and repr(item) == repr(before), (
                f"{case.id} mutated its input at event {i}: {before!r} became {item!r}"
            )
        outs.append(copy.deepcopy(out))
        if vandalise:
            for v in out.values():
                _clear(v)
    return outs


def _clear(obj: Any) -> None:
    """Empty every container in ``obj`` (what a careless caller could do to a result)."""
    if isinstance(obj, dict):
        for v in obj.values():
            _clear(v)
        obj.clear()
    elif isinstance(obj, list):
        for v in obj:
            _clear(v)
        obj.clear()


def first_difference(got: list, want: list, start: int = 0) -> str:
    if len(got) != len(want):
        return f"{len(got)} outputs instead of {len(want)}"
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        if g != w:
            return f"first difference at event {start + j}:\n  got  {g!r}\n  want {w!r}"
    return "no difference"


def assert_same(got: list, want: list, what: str, start: int = 0) -> None:
    assert got == want, f"{what}: {first_difference(got, want, start)}"


def assert_plain(obj: Any, path: str = "out") -> None:
    """Only JSON's own types: dicts with str keys, lists, str, int, float, bool, None."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            assert type(k) is str, f"{path} has the non-str key {k!r} ({type(k).__name__})"
            assert_plain(v, f"{path}[{k!r}]")
    elif isinstance(obj, list):
        for n, v in enumerate(obj):
            assert_plain(v, f"{path}[{n}]")
    else:
        assert type(obj) in (str, int, float, bool, type(None)), (
            f"{path} is {obj!r} of type {type(obj).__module__}.{type(obj).__name__}, not a plain Python type"
        )


@functools.cache
def reference(case: Case, seed: int = SEED) -> list[dict]:
    """Outputs of a fresh instance over the whole stream (computed once; do not modify)."""
    return run(case.make(seed), case, case.stream())


def digests() -> dict[str, str]:
    """A digest of every case's outputs (also computed in a subprocess, see below)."""
    return {c.id: hashlib.sha256(repr(reference(c)).encode()).hexdigest() for c in CASES}


def component_classes() -> set[type]:
    """Every Component subclass defined in a module of ``streamxai.core``."""
    found = set()
    for info in pkgutil.walk_packages(streamxai.core.__path__, "streamxai.core."):
        mod = importlib.import_module(info.name)
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, Component) and obj.__module__ == mod.__name__:
                found.add(obj)
    return found


# abstract bases: checked through their registered subclasses
NOT_REGISTERED = {Component, Explainer, Removal, _Reservoir}


# the checks --------------------------------------------------------------------------------
def test_every_component_is_registered():
    registered = {type(c.make(SEED)) for c in CASES}
    missing = component_classes() - registered - NOT_REGISTERED
    assert not missing, f"register {sorted(c.__qualname__ for c in missing)} in CASES of {__name__}"


@pytest.mark.parametrize("case", params([c for c in CASES if c.mutable_input]))
def test_input_is_not_mutated(case):
    stream = case.stream()
    run(case.make(SEED), case, stream, check_inputs=True)


@pytest.mark.parametrize("case", params(CASES))
def test_returned_containers_are_not_internal_state(case):
    """Emptying every dict and list a step returned must not change later outputs."""
    stream = case.stream()
    assert_same(run(case.make(SEED), case, stream, vandalise=True), reference(case),
                f"{case.id} returned its internal state")


@pytest.mark.parametrize("case", params(CASES))
def test_pickle_round_trip_mid_stream(case):
    stream = case.stream()
    ref = reference(case)
    for k in (1, len(stream) // 2 + 1):
        a = case.make(SEED)
        run(a, case, stream[:k])
        copies = {
            "pickle": pickle.loads(pickle.dumps(a)),
            "snapshot/restore": type(a).restore(a.snapshot()),
        }
        for how, b in copies.items():
            assert type(b) is type(a) and b is not a
            assert_same(run(b, case, stream[k:], k), ref[k:], f"{how} after {k} events", k)
        assert_same(run(a, case, stream[k:], k), ref[k:], f"original after being pickled at {k}", k)


@pytest.mark.parametrize("case", params(CASES))
def test_same_seed_same_outputs(case):
    ref = reference(case)
    assert_same(run(case.make(SEED), case, case.stream()), ref, "second instance with the same seed")
    if case.seeded:
        assert reference(case, SEED + 1) != ref, f"{case.id}: seed {SEED + 1} gives the outputs of seed {SEED}"


def test_same_outputs_in_another_process():
    """Workers are separate processes: outputs must not depend on ``PYTHONHASHSEED``."""
    here = Path(__file__).resolve()
    code = f"import json, sys; sys.path.insert(0, {str(here.parent)!r}); import {here.stem} as t; print(json.dumps(t.digests()))"
    root = here.parents[3]  # the checkout (this file is in tests/unit/core/)
    env = {**os.environ, "PYTHONHASHSEED": "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = digests()
    differ = sorted(k for k in ours if theirs.get(k) != ours[k])
    assert not differ, f"outputs differ across processes for {differ}"


@pytest.mark.parametrize("case", params(CASES))
def test_outputs_survive_the_wire_format(case):
    for i, out in enumerate(reference(case)):
        assert_plain(out, f"{case.id} output {i}")
        assert orjson.loads(dumps_obj(out)) == out, f"{case.id} output {i} changed through the wire format"
        for key in ("explain", "values", "stderr"):  # explainer values are floats, not ints or numpy scalars
            for feature, v in (out.get(key) or {}).items():
                assert type(v) is float, f"{case.id} output {i}: {key}[{feature!r}] is {v!r}"
        for ev in out.get("explanations", ()):
            assert type(ev["value"]) is float, f"{case.id} output {i}: {ev!r}"
        for feature, curve in (out.get("curves") or {}).items():
            assert sorted(curve) == ["grid", "pd", "se"], (feature, curve)
            assert len(curve["grid"]) == len(curve["pd"]) == len(curve["se"]), (feature, curve)
            assert all(type(p) is float for p in curve["se"]), (feature, curve)
            assert all(type(p) is float for p in curve["pd"]), (feature, curve)


# parameters a clone may share with the original: immutable values, functions and classes
ATOMIC = (int, float, str, bool, tuple, frozenset, type(None), types.FunctionType, types.BuiltinFunctionType, type)


@pytest.mark.parametrize("case", params(CASES))
def test_clone_has_the_same_parameters(case):
    stream = case.stream()
    a = case.make(SEED)
    run(a, case, stream[: len(stream) // 2])
    c = a.clone()
    assert type(c) is type(a) and c is not a
    assert repr(c) == repr(a)
    pa, pc = a._get_params(), c._get_params()
    assert list(pc) == list(pa)
    for name, v in pa.items():
        w = pc[name]
        assert type(w) is type(v), name
        if isinstance(v, ATOMIC):
            assert w == v, name
        else:
            assert w is not v, f"clone shares the parameter {name} ({type(v).__name__}) with the original"
            assert repr(w) == repr(v), name


@pytest.mark.parametrize("case", params(CASES))
def test_clone_has_no_learned_state(case):
    stream = case.stream()
    ref = reference(case)
    half = len(stream) // 2
    a = case.make(SEED)
    run(a, case, stream[:half])
    c = a.clone()
    got, want = run(c, case, stream), ref
    if case in EXPLAINER_CASES:  # the counter is checked by test_clone_resets_the_evaluation_counter
        got, want = without_evaluations(got), without_evaluations(want)
    assert_same(got, want, f"clone of {case.id} after {half} events vs a fresh instance")
    assert_same(run(a, case, stream[half:], half), ref[half:], "original after cloning", half)


@pytest.mark.parametrize("case", params(CASES))
def test_clone_speaks_rivers_idiom(case):
    """river's idiom: ``clone(params)`` takes ``_get_params()``, ``clone(include_attributes=True)`` goes on as the
    original, ``repr`` lists the parameters one a line."""
    stream = case.stream()
    half = len(stream) // 2
    a = case.make(SEED)
    run(a, case, stream[:half])
    assert isinstance(a, river_base.Base)
    assert repr(a).startswith(f"{type(a).__name__} (")
    assert all(f"\n  {name}=" in repr(a).expandtabs(2) for name in a._get_params())
    fresh = run(a.clone(a._get_params()), case, stream)
    copied = run(a.clone(include_attributes=True), case, stream[half:], half)
    want = reference(case)
    if case in EXPLAINER_CASES:  # a clone counts its own evaluations
        fresh, want, copied = without_evaluations(fresh), without_evaluations(want), without_evaluations(copied)
    assert_same(fresh, want, f"clone of {case.id} with its own parameters vs a fresh instance")
    original = run(a, case, stream[half:], half)
    assert_same(copied, without_evaluations(original) if case in EXPLAINER_CASES else original,
                f"clone of {case.id} with its attributes vs the original", half)


def test_a_stream_explainer_clones_its_model_as_rivers_wrappers_do():
    model = linear_model.LinearRegression()
    se = StreamExplainer(model, NUMERIC, [ExplainerSpec("ipfi", output="value", loss="squared", alpha=0.1)], seed=1)
    for x, y in labelled(numeric_xs(30, seed=2), linear_value):
        se.process_one(x, y)
    assert se.model is model and model.weights == {} and se.current_model.weights != {}
    other = se.clone({"emit_every": 5})
    assert other.emit_every == 5 and other.model_version == 0 and other.current_model.weights == {}
    assert other.model is not model and repr(other.model) == repr(model)
    assert "\n  model=LinearRegression (" in repr(se).expandtabs(2)
    worker = StreamExplainer.on_worker(model, NUMERIC, se.specs, units=["a"], fast_path="off", inputs=True)
    twin = worker.clone()
    assert (twin.units, twin.fast_path, twin.inputs) == (["a"], "off", True)
    assert [ex.features for ex in twin.explainers] == [["a"]] and twin.evaluation_path == "black_box"
    assert "units" not in twin._get_params()  # worker knobs are not parameters


@pytest.mark.parametrize("case", params(EXPLAINER_CASES))
def test_clone_resets_the_evaluation_counter(case):
    stream = case.stream()
    a = case.make(SEED)
    run(a, case, stream[: len(stream) // 2])
    assert a.model_fn.n_evaluations > 0
    assert a.clone().model_fn.n_evaluations == 0


def without_evaluations(outs: list[dict]) -> list[dict]:
    return [{k: v for k, v in out.items() if k != "n_evaluations"} for out in outs]


@pytest.mark.parametrize("case", params([c for c in CASES if c.stateful]))
def test_outputs_reveal_learned_state(case):
    """Guards the registry: without it the pickle and clone checks could not fail."""
    stream = case.stream()
    a = case.make(SEED)
    run(a, case, stream[: len(stream) // 2])
    assert run(a, case, stream) != reference(case), f"{case.id}: outputs do not show what it has learned"


@pytest.mark.parametrize("cls", sorted({type(c.make(SEED)) for c in CASES}, key=lambda t: t.__name__),
                         ids=lambda t: t.__name__)
def test_no_mutable_default_arguments(cls):
    bad = []
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_") and name != "__init__":
            continue
        for p in inspect.signature(fn).parameters.values():
            if isinstance(p.default, (list, dict, set, bytearray)):
                bad.append(f"{name}({p.name}={p.default!r})")
    assert not bad, f"{cls.__name__} has mutable defaults: {bad}; default to None or a tuple"
