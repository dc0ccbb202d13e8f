"""The standard errors cost O(1) per feature per event and O(features) per report:
a report asks each tracker for its moments once, whatever the grid size, and the typed
records read checkpoints written with the old positional lists."""

from __future__ import annotations

import pickle
import random

import pytest
from streamxai.core.explainers import IPDP
from streamxai.core.model import ModelFunction
from streamxai.core.uncertainty import PairSums, SlotUse, SmoothedStderr


def _count_moments(monkeypatch) -> list[int]:
    """Counts the passes over the moments (``_moments``)."""
    calls = [0]
    moments = SmoothedStderr._moments

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return moments(self, *args, **kwargs)

    monkeypatch.setattr(SmoothedStderr, "_moments", counted)
    return calls


def test_asking_every_feature_twice_computes_the_moments_once(monkeypatch):
    calls = _count_moments(monkeypatch)
    names = [f"f{i}" for i in range(11)]
    t = SmoothedStderr(names, alpha=0.05)
    gen = random.Random(0)
    for _ in range(100):
        t.add_increments([gen.gauss(0, 1) for _ in names])
    first = [t.stderr(f) for f in names] + [t.stderr(f) for f in names]
    assert calls[0] == 1
    t.add_increments([1.0] * len(names))  # an update invalidates the answer
    assert t.stderrs() != dict(zip(names, first[:11], strict=True))
    assert calls[0] == 2


def test_an_ipdp_report_does_not_grow_with_the_grid(monkeypatch):
    """Before: curves() asked for every grid point's standard error separately, and each
    question recomputed every series of the feature: grid x (grid + 1) per feature."""
    calls = _count_moments(monkeypatch)
    names = ["a", "b", "c"]
    e = IPDP(ModelFunction(lambda x: x["a"] * x["b"] + x["c"], output="value"), names, grid_size=25, seed=1)
    gen = random.Random(1)
    for _ in range(40):
        e.explain_one({f: gen.random() for f in names})
    calls[0] = 0
    curves, stderr = e.curves(), e.stderr
    assert calls[0] <= len(names)  # at most one per tracker
    assert all(len(c["se"]) == 25 for c in curves.values()) and set(stderr) == set(names)


def test_checkpoints_with_positional_lists_still_load():
    gen = random.Random(2)
    t = SmoothedStderr(["a", "b"], alpha=0.1)
    items = [{"a": gen.random(), "b": gen.random()} for _ in range(16)]
    for _ in range(200):
        deltas = [gen.gauss(0, 1), gen.gauss(0, 1)]
        t.add_increments(deltas)
        t.add_donors(items, [gen.randrange(16), gen.randrange(16)], deltas)
        t.stored(gen.randrange(16), items, deltas)
    state = t.__getstate__()
    assert isinstance(state["_pairs"], PairSums) and all(isinstance(v, SlotUse) for v in state["_slots"].values())
    # the layout before the typed records: 4-row lists, and [observation, counts, sums, own]
    old = dict(state)
    old["_pairs"] = [list(state["_pairs"].xy), list(state["_pairs"].x), list(state["_pairs"].y), list(state["_pairs"].n)]
    old["_owns"] = [list(state["_owns"].xy), list(state["_owns"].x), list(state["_owns"].y), list(state["_owns"].n)]
    old["_slots"] = {k: [u.observation, list(u.counts), list(u.sums), u.own] for k, u in state["_slots"].items()}
    old.pop("_cached")
    restored = SmoothedStderr.__new__(SmoothedStderr)
    restored.__setstate__(pickle.loads(pickle.dumps(old)))
    assert restored.stderrs() == t.stderrs()
    deltas = [0.5, -0.5]
    for u in (t, restored):
        u.add_increments(deltas)
        u.add_donors(items, [0, 4], deltas)
    assert restored.stderrs() == t.stderrs()



def test_a_checkpoint_from_before_the_factors_own_variance_still_loads():
    """States written before the variance factor had its own, slower variance: it starts from
    the estimate's (the factor the older version reported) and goes on at its own rate."""
    gen = random.Random(3)
    t = SmoothedStderr(["a", "b"], alpha=0.1)
    items = [{"a": gen.random(), "b": gen.random()} for _ in range(16)]

    def step(u, deltas, slots):
        u.add_increments(deltas)
        u.add_donors(items, slots, deltas)

    for _ in range(200):
        step(t, [gen.gauss(0, 1), gen.gauss(0, 3)], [gen.randrange(16), gen.randrange(16)])
    old = t.__getstate__()
    del old["_slow"], old["_slow_w2sum"]
    restored = SmoothedStderr.__new__(SmoothedStderr)
    restored.__setstate__(pickle.loads(pickle.dumps(old)))
    assert restored.stderrs() == t.stderrs()
    mean, var = t._moments()
    k_old = 1.0 + t._reuse(var, 1.0) / var  # what the older version reported
    # the same but for the (up to 64) increments still buffered, folded in at the slow rate
    assert restored.variance_factors() == pytest.approx(dict(zip("ab", k_old.tolist(), strict=True)), rel=0.02)
    for _ in range(100):
        deltas, slots = [gen.gauss(0, 1), gen.gauss(0, 3)], [gen.randrange(16), gen.randrange(16)]
        step(t, deltas, slots)
        step(restored, deltas, slots)
    assert restored.stderrs() == t.stderrs()
    # between the floor (1 - 3/4) and full correlation (1 + m^2 / L * 2 rho / (1 - rho) + 2 m, m = 2,
    # L = 16, rho = 15/16: 12.5), and drawing nearer to the uninterrupted tracker's
    bound = 1 + 4 / 16 * 2 * 15 + 4
    k, k_t = restored.variance_factors(), t.variance_factors()
    assert all(0.25 <= k[f] <= bound for f in "ab"), k
    assert all(abs(k[f] - k_t[f]) < abs(k_old[i] - k_t[f]) for i, f in enumerate("ab")), (k, k_t, k_old)


def _product(x: dict) -> float:
    return x["a"] * x["b"] - x["c"]


def test_an_ipdp_checkpoint_from_before_the_arrays_still_loads():
    """A checkpoint in the list form (one list per feature for iPDP's grid and PD, one tracker per
    feature) restores into the arrays."""
    names, m = ["a", "b", "c"], 4
    fn = ModelFunction(_product, output="value")
    e = IPDP(fn, names, grid_size=m, seed=1, alpha=0.05)
    gen = random.Random(3)
    data = [{f: gen.random() for f in names} for _ in range(150)]
    increments = []  # each event's series, as the tracker holds it (the row just written)
    for x in data[:100]:
        e.explain_one(x)
        increments.append(e._se._buffer[e._se._held - 1].tolist())
    old = pickle.loads(pickle.dumps(e)).__dict__
    old["_gx"] = {f: e._gx[i].tolist() for i, f in enumerate(names)}
    old["_pd"] = {f: e._pd[i].tolist() for i, f in enumerate(names)}
    old["_se"] = {}
    for i, f in enumerate(names):
        t = old["_se"][f] = SmoothedStderr([*map(str, range(m)), "importance"], e.alpha, start="zero")
        for d in increments:
            t.add_increments(d[i * (m + 1):(i + 1) * (m + 1)])
    for k in ("_row", "_frac_row"):
        del old[k]
    restored = IPDP.__new__(IPDP)
    restored.__setstate__(pickle.loads(pickle.dumps(old)))
    assert restored.curves() == e.curves() and restored.stderr == e.stderr
    for x in data[100:]:
        assert restored.explain_one(x) == e.explain_one(x)
    assert restored.curves() == e.curves() and restored.stderr == e.stderr


def test_a_checkpoint_from_before_the_kept_gradient_and_block_weights_still_loads():
    """A checkpoint without the PD curves' gradient (``_grad``), its tracker's block weights
    (``_powers``) or the block sums kept per size (``_blocks``, a cache no checkpoint holds)
    restores and goes on exactly as a state that has them."""
    names = ["a", "b", "c"]
    e = IPDP(ModelFunction(_product, output="value"), names, grid_size=4, seed=1, alpha=0.05)
    gen = random.Random(5)
    data = [{f: gen.random() for f in names} for _ in range(150)]
    for x in data[:100]:
        e.explain_one(x)
    old = pickle.loads(pickle.dumps(e)).__dict__
    del old["_grad"]
    se_state = old["_se"].__getstate__()
    assert "_blocks" not in se_state and e._se._blocks  # kept in the tracker, not in its checkpoint
    del se_state["_powers"]
    old["_se"] = SmoothedStderr.__new__(SmoothedStderr)
    old["_se"].__setstate__(pickle.loads(pickle.dumps(se_state)))
    restored = IPDP.__new__(IPDP)
    restored.__setstate__(old)  # (pickling it again would write the tracker's current state)
    for x in data[100:]:
        assert restored.explain_one(x) == e.explain_one(x)
    assert restored.curves() == e.curves() and restored.stderr == e.stderr
