"""Standard errors cost O(1) per feature per event and O(features) per report, and the typed records read
checkpoints of the positional lists."""

from __future__ import annotations

import pickle
import random

from streamxai.core.explainers import IPDP
from streamxai.core.model import ModelFunction
from streamxai.core.uncertainty import SmoothedStderr


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


def _product(x: dict) -> float:
    return x["a"] * x["b"] - x["c"]


def test_a_checkpointed_ipdp_rebuilds_its_tracker_caches_and_goes_on_exactly():
    """A restored iPDP remakes its tracker's caches (``_powers``, ``_blocks``) and goes on exactly."""
    names = ["a", "b", "c"]
    e = IPDP(ModelFunction(_product, output="value"), names, grid_size=4, seed=1, alpha=0.05)
    gen = random.Random(5)
    data = [{f: gen.random() for f in names} for _ in range(150)]
    for x in data[:100]:
        e.explain_one(x)
    se_state = e._se.__getstate__()
    assert "_blocks" not in se_state and se_state["_powers"] is None and e._se._blocks  # caches, not checkpointed
    restored = pickle.loads(pickle.dumps(e))
    for x in data[100:]:
        assert restored.explain_one(x) == e.explain_one(x)
    assert restored.curves() == e.curves() and restored.stderr == e.stderr
