"""The flattened trees' walk gives the same states in the same order with the compiled kernel and numpy, on
random trees and for whole explanations of a learning adaptive tree (equal to brute force either way)."""

from __future__ import annotations

import numpy as np
import pytest
from river import tree
from river.datasets import synth
from streamxai import LocalShapley
from streamxai.core import kernels
from streamxai.core.attribution import attribute, brute_force, flat_walk

needs_kernel = pytest.mark.skipif(kernels.KERNELS is None, reason="the compiled kernels are not built")


def random_trees(gen, n_trees, d):
    """Flattened trees as flat_walk builds them: breadth-first ids, a branch's children after it."""
    feature, threshold, child, todo = [], [], [], []
    for k in range(n_trees):
        start, size = len(feature), 1
        todo.append((2 * k, start))
        while len(feature) < start + size:
            if gen.random() < 0.6 and size < 15:
                first = start + size
                feature.append(int(gen.integers(d)))
                threshold.append(float(gen.choice([0.0, 0.5, gen.normal()])))
                child.append((first, first + 1))
                size += 2
            else:
                feature.append(-1)
                threshold.append(0.0)
                child.append((-1, -1))
    x_right = gen.random(len(feature)) < 0.5
    return np.array(feature), np.array(threshold), np.array(child).reshape(-1, 2), x_right, todo


@needs_kernel
@pytest.mark.parametrize("seed", range(8))
def test_tree_walk_gives_the_numpy_states(seed, monkeypatch):
    gen = np.random.default_rng(seed)
    d = int(gen.integers(1, 8))
    feature, threshold, child, x_right, todo = random_trees(gen, int(gen.integers(1, 5)), d)
    n = int(gen.integers(1, 40))
    z = np.where(gen.random((n, d)) < 0.5, gen.choice([0.0, 0.5, np.nan, -1.0, 2.0], size=(n, d)),
                 gen.normal(size=(n, d)))
    compiled = flat_walk._walk(feature, threshold, child, x_right, z, todo)
    monkeypatch.setattr(flat_walk, "KERNELS", None)
    numpy = flat_walk._walk(feature, threshold, child, x_right, z, todo)
    assert len(compiled) == len(numpy) == 5
    for c, p in zip(compiled, numpy, strict=True):
        assert c.dtype == p.dtype == np.int64 and c.tolist() == p.tolist()
    assert len(compiled[0]) >= n * len(todo)


@needs_kernel
def test_tree_walk_leaves_the_unusual_to_numpy():
    """Arrays of another type, order or length, an id out of range or pointing back, a feature
    beyond the rows, outputs too small or sharing memory: None, nothing written."""
    walk = kernels.KERNELS.tree_walk
    feature, threshold = np.array([0, -1, -1]), np.array([0.5, 0.0, 0.0])
    child, x_right = np.array([[1, 2], [-1, -1], [-1, -1]]), np.array([True, False, False])
    z, roots, trees = np.array([[0.0], [1.0]]), np.array([0]), np.array([0])
    outs = [np.full(4, -7) for _ in range(5)]
    args = [feature, threshold, child, x_right, z, roots, trees, *outs]
    for k, bad in [(0, feature.astype(np.int32)), (1, threshold.astype(np.float32)),
                   (2, np.array([[0, 2], [-1, -1], [-1, -1]])), (2, np.array([[1, 3], [-1, -1], [-1, -1]])),
                   (3, x_right.astype(np.int64)), (4, np.array([0.0, 1.0])), (4, z.astype(np.float32)),
                   (4, np.zeros((2, 2))[:, :1]), (5, np.array([3])), (6, np.array([0, 1])), (0, np.array([1, -1, -1])),
                   (7, np.full(1, -7)), (8, outs[0]), (9, np.full(4, -7.0))]:
        changed = list(args)
        changed[k] = bad
        assert walk(*changed) is None, k
        assert all((o == -7).all() for o in outs), k
    small = [np.full(2, -7) for _ in range(5)]  # room for the two points, not for the split
    assert walk(*args[:7], *small) is None and all((o == -7).all() for o in small)
    # x goes right; the point at 1.0 follows it, the point at 0.0 splits: with x (a holds the
    # feature) and on its own side (b holds it)
    assert walk(*args) == 3
    assert [o[:3].tolist() for o in outs] == [[2, 2, 1], [0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_adaptive_tree_values_are_exact_and_the_same_on_either_path(monkeypatch):
    """A learning adaptive tree's explanations equal fresh ones with the kernel and with numpy, the last brute force."""
    data = [({k: float(v) for k, v in x.items()}, y)
            for x, y in synth.Agrawal(classification_function=1, seed=3).take(700)]
    names = list(data[0][0])
    model = tree.HoeffdingAdaptiveTreeClassifier(grace_period=50, delta=0.01, seed=3)
    local = LocalShapley(model, names, storage_size=12, seed=3)
    n_explained = 0
    for i, (x, y) in enumerate(data):
        if i >= 440 and i % 60 == 0:
            values = local.explain_one(x)
            with monkeypatch.context() as m:
                m.setattr(flat_walk, "KERNELS", None)
                fresh = attribute(model, x, local.background, names, target_class=local.target)
            assert values == fresh.values and local.method == "tree"
            n_explained += 1
        local.learn_one(x)
        model.learn_one(x, y)
    x = data[-1][0]
    exact = attribute(model, x, local.background, names)
    want, base = brute_force(lambda r: model.predict_proba_one(r).get(exact.target, 0.0), x, local.background, names)
    assert max(abs(exact.values[f] - want[f]) for f in names) < 1e-9 and abs(exact.base - base) < 1e-9
    assert model.n_branches >= 1 and n_explained == 4
