"""The compiled kernels never touch memory they do not own: wrong shapes get False/None or a TypeError, and
Python code run midway (__hash__, __eq__, comparisons, __init__) that shrinks what the kernel checked gets
an error, never an out-of-bounds access."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from streamxai.core import kernels

pytestmark = pytest.mark.skipif(kernels.KERNELS is None, reason="the compiled kernels are not built")
K = kernels.KERNELS


class Trap:
    """A key equal to ``name`` that runs ``action`` at its ``at``-th hash (Python code run by a
    kernel's dictionary lookups)."""

    def __init__(self, name, at, action):
        self.name, self.at, self.action, self.calls = name, at, action, 0

    def __hash__(self):
        self.calls += 1
        if self.calls == self.at:
            self.action()
        return hash(self.name)

    def __eq__(self, other):
        return other == self.name or (isinstance(other, Trap) and other.name == self.name)


def fold_args(nf=2, g=3):
    return [np.ones((nf, g)), np.zeros((nf, g)), np.zeros((nf, g)), np.zeros((nf, g)), np.zeros((nf, g)),
            np.ones(nf), None, np.zeros(nf * g + nf), 0.5, 0.5, 1.0, [f"f{i}" for i in range(nf)],
            {f"f{i}": 0.0 for i in range(nf)}]


def test_fold_curves_wrong_shapes():
    for k, bad in [(0, np.ones((3, 3))), (0, np.ones(6)), (0, np.ones((2, 1))), (1, np.zeros((2, 2))),
                   (4, np.zeros((2, 3))[:, :2]), (5, np.ones(1)), (6, np.zeros(3, dtype=bool)),
                   (7, np.zeros(7)), (7, np.zeros(8)[::1].reshape(2, 4).T), (11, []), (11, ["f0", "f1", "f2"]),
                   (1, np.zeros((2, 3)).tolist()), (4, np.zeros((2, 3), dtype=np.int64)), (2, np.zeros((2, 3))[:, ::1].T)]:
        args = fold_args()
        args[k] = bad
        assert K.fold_curves(*args) is None, k
        assert not args[2].any() and not args[7].any(), k
    args = fold_args()
    args[3] = args[2]  # two writable arrays sharing memory
    assert K.fold_curves(*args) is None
    with pytest.raises(TypeError):
        K.fold_curves(*fold_args()[:12])


def test_fold_curves_names_that_shrink_midway():
    args = fold_args()
    names = args[11]
    key = Trap("f1", 2, names.clear)  # the check's hash, then the write's
    names[1] = key
    args[12] = {"f0": 0.0, key: 0.0}
    try:
        K.fold_curves(*args)
    except RuntimeError as e:
        assert "changed" in str(e)


def test_extremes_wrong_shapes():
    from streamxai.core.storage.extreme import ExtremeValueStorage

    s = ExtremeValueStorage(3)
    s.update(1.0)
    out = np.zeros((1, 3))
    for values, frac, o in [([], np.ones(3), out), ([1.0, 2.0], np.ones(3), out), ([1.0], np.ones((1, 3)), out),
                            ([1.0], np.ones(4), out), ([1.0], np.ones(3), np.zeros(2)), ([1.0], np.ones(0), out),
                            ([1.0], np.ones(3), np.zeros((2, 3))[:, ::2]), ([1.0], np.ones(3), np.zeros((1, 3), "f4"))]:
        assert K.extremes_grids([s], values, frac, o, ExtremeValueStorage) is False
    assert not out.any()
    assert K.extremes_update([s], [1.0, 2.0], ExtremeValueStorage) is False
    s._hi.append((0,))  # an entry that is not an (index, value) pair
    with pytest.raises(TypeError, match="pair"):
        K.extremes_update([s], [5.0], ExtremeValueStorage)
    with pytest.raises(TypeError):
        K.extremes_update((s,), [1.0], ExtremeValueStorage)


def test_extremes_update_a_comparison_that_replaces_the_deques():
    """A stored value (stored by the Python path) whose comparison drops the storage's deques."""
    from collections import deque

    from streamxai.core.storage.extreme import ExtremeValueStorage

    s = ExtremeValueStorage(3)

    class Odd:
        def __le__(self, other):
            s.__dict__["_hi"] = deque()
            s.__dict__["_lo"] = deque()
            return True

        __ge__ = __le__

    s._hi.append((0, Odd()))
    s._lo.append((0, Odd()))
    s.n_seen = 1
    # the kernel keeps the deques it checked alive (it popped from a freed one, reused by the
    # new empty deque: "pop from an empty deque")
    assert K.extremes_update([s], [1.0], ExtremeValueStorage)


def test_an_output_sharing_memory_with_an_input_is_declined():
    """A kernel whose output shares bytes with another array it is given declines (False/None, nothing written)
    and leaves it to the numpy code."""
    from streamxai.core.storage.extreme import ExtremeValueStorage

    s = ExtremeValueStorage(3)
    s.update(1.0)
    s.update(3.0)
    grids = np.array([[0.0, 0.5, 1.0]])
    assert K.extremes_grids([s], [1.0], grids[0], grids, ExtremeValueStorage) is False  # frac is the output
    assert grids.tolist() == [[0.0, 0.5, 1.0]]
    args = fold_args()
    args[6] = args[5].view(bool)[:2]  # the flat mask inside scale, which the kernel writes
    assert K.fold_curves(*args) is None
    assert not args[2].any() and not args[7].any()
    fs, terms, w, mean, sd = linear_args()
    good = (terms, w, mean, sd, {f: i for i, f in enumerate(fs)}, fs)
    both = np.arange(13.0)
    grids, out = both[:12].reshape(4, 3), both[1:].reshape(4, 3)  # out one double after grids
    assert K.linear_curves(*good, grids, 0.5, 1, out) is False
    assert both.tolist() == list(range(13))
    assert K.linear_curves(*good, grids.copy(), 0.5, 1, out) is True  # apart: taken


def test_keys_that_shrink_the_lists_while_they_are_checked():
    """The same in the checks before any write: the kernel measures the lists again after every
    lookup (a False or an error; the Python code then meets the changed lists itself)."""
    args = fold_args()
    names = args[11]
    key = Trap("f0", 1, names.clear)  # the first check's hash
    names[0] = key
    args[12] = {key: 0.0, "f1": 0.0}
    assert K.fold_curves(*args) is None


def linear_args():
    fs = ["".join(("f", str(i))) for i in range(4)]
    return fs, [0.5, -1.0, 2.0, 0.25], [1.0, 2.0, -0.5, 0.0], [0.1, 0.2, 0.3, 0.4], [2.0, None, 1.0, 3.0]


class Float(float):
    """A float subclass: its arithmetic may differ from float's (the Python code runs it)."""


class Str(str):
    """A str subclass: its __hash__ and __eq__ are Python code."""


class Dict(dict):
    """A dict subclass whose items the Python code reads through __getitem__."""

    def __getitem__(self, key):
        return 2 * dict.__getitem__(self, key)


def test_linear_rows_wrong_shapes_and_types():
    """Anything unusual gets None/False (the Python code or the model then runs), nothing written."""
    fs, terms, w, mean, sd = linear_args()
    pos, donors, pairs = {f: i for i, f in enumerate(fs)}, [{f: 1.0 for f in fs}], [(f, 1.0) for f in fs]
    grids, out = np.ones((4, 3)), np.zeros((4, 3))
    good = (terms, w, mean, sd, pos)
    assert K.linear_chain(*good, fs, donors, 0, 0.5, 1) is not None
    for args in [(terms[:3], w, mean, sd, pos), (terms, w[:3], mean, sd, pos), (terms, w, mean[:3], sd, pos),
                 (terms, w, mean, None, pos), (terms, w, None, sd, pos), (terms, w, mean, [2.0, None, 1.0, "x"], pos),
                 (terms, w, mean, sd[:3], pos), ([], [], None, None, {}), ([0.5, 1, 2.0, 0.25], w, mean, sd, pos),
                 (terms, w, mean, sd, {**pos, fs[3]: 4}), (terms, w, mean, sd, {**pos, fs[3]: -1}),
                 (terms, w, mean, sd, {**pos, fs[3]: 2**70}), (tuple(terms), w, mean, sd, pos),
                 (terms, tuple(w), mean, sd, pos), (terms, w, mean, [2.0, None, 1.0, True], pos),
                 ([0.5, Float(-1.0), 2.0, 0.25], w, mean, sd, pos), (terms, w, [1.0, Float(2.0), -0.5, 0.0], sd, pos)]:
        assert K.linear_chain(*args, fs, donors, 0, 0.5, 1) is None, args
        assert K.linear_replaced(*args, pairs, 0.5, 1, True) is None, args
        assert K.linear_curves(*args, fs, grids, 0.5, 1, out) is False, args
    for order, first, ds in [(fs + fs[:1], 0, donors), (fs[:3] + ["nope"], 0, donors), (fs, 5, donors),
                             (fs, -1, donors), (fs, 0, [{f: 1 for f in fs}]), (fs, 0, [[1.0] * 4]),
                             ([*fs[:3], 3], 0, donors), (fs[:2] + fs[:1], 0, donors), ([Str(fs[0]), *fs[1:]], 0, donors),
                             (fs, 0, [Dict({f: 1.0 for f in fs})]), (fs, 0, [{**donors[0], fs[2]: Float(1.0)}])]:
        assert K.linear_chain(*good, order, ds, first, 0.5, 1) is None, (order, first)
    for intercept, mode in [(1, 1), (0.5, 5), (0.5, -1)]:
        assert K.linear_chain(*good, fs, donors, 0, intercept, mode) is None
    for bad in [[("nope", 1.0)], [(fs[0], 1)], [(fs[0],)], [[fs[0], 1.0]], [(fs[0], 1.0, 2.0)], [(fs[0], Float(1.0))],
                [(Str(fs[0]), 1.0)]]:
        assert K.linear_replaced(*good, bad, 0.5, 1, False) is None, bad
    for g, o, names in [(np.ones((4, 3), dtype=np.float32), out, fs), (grids, out[:3], fs), (grids, out.T, fs),
                        (grids[:, :2], out, fs), (grids, np.zeros((4, 3)).astype(np.int64), fs),
                        (grids, out, fs[:3] + ["nope"]), (grids, out, fs[:0]), (np.ones((5, 3)), out, fs[:3] + fs[:2]),
                        ([1.0] * 12, out, fs), (grids, bytes(96), fs)]:
        assert K.linear_curves(*good, names, g, 0.5, 1, o) is False
    assert K.linear_curves(*good, fs, grids, 0.5, 3, out) is False  # the label: not a float
    frozen = np.zeros((4, 3))
    frozen.flags.writeable = False
    assert K.linear_curves(*good, fs, grids, 0.5, 1, frozen) is False
    assert not out.any() and not frozen.any()
    with pytest.raises(TypeError):
        K.linear_chain(terms, w, mean, sd, list(pos), fs, donors, 0, 0.5, 1)
    with pytest.raises(TypeError):
        K.linear_replaced(*good, tuple(pairs), 0.5, 1, False)


class EqTrap:
    """A dict key equal to ``name`` whose ``__eq__`` (run by a lookup of an equal str) runs ``action`` once."""

    def __init__(self, name, action):
        self.name, self.action = name, action

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        action, self.action = self.action, None
        if action is not None:
            action()
        return other == self.name


def test_linear_rows_keys_that_empty_the_lists_midway():
    """A position key whose __eq__ empties the lists: the kernel reads them as they were and gives the same
    results; a donor key emptying its own dict leaves the chain to Python."""
    fs, terms, w, mean, sd = linear_args()
    grids = np.linspace(-3.0, 3.0, 12).reshape(4, 3)

    def run(trap):
        order, donors, pairs, features = list(fs), [{f: 1.5 for f in fs}, {f: -2.0 for f in fs}], [(f, 0.75) for f in fs], list(fs)
        got = []
        for k in range(3):
            lists = [order, donors, pairs, features]
            pos = {f: i for i, f in enumerate(fs)}
            if trap:
                pos = {EqTrap(f, lambda lists=lists: [li.clear() for li in lists]) if f == fs[0] else f: i for f, i in pos.items()}
            if k == 0:
                got.append(K.linear_chain(terms, w, mean, sd, pos, order, donors, 0, 0.5, 1))
            elif k == 1:
                got.append(K.linear_replaced(terms, w, mean, sd, pos, pairs, 0.5, 1, True))
            else:
                out = np.zeros((4, 3))
                got.append(K.linear_curves(terms, w, mean, sd, pos, features, grids, 0.5, 2, out) and out.tolist())
            assert not trap or not any(lists), "the trap did not run"
            order, donors, pairs, features = list(fs), [{f: 1.5 for f in fs}, {f: -2.0 for f in fs}], [(f, 0.75) for f in fs], list(fs)
        return got

    expected = run(False)
    assert all(expected) and run(True) == expected
    pos = {f: i for i, f in enumerate(fs)}
    order, donors = list(fs), [{f: 1.5 for f in fs}, {}]
    donors[1].update((EqTrap(f, lambda: [donors[1].clear(), order.clear()]) if f == fs[2] else f, -2.0) for f in fs)
    assert K.linear_chain(terms, w, mean, sd, pos, order, donors, 0, 0.5, 1) is None
    assert not order and not donors[1]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="a Python class exports a buffer from Python 3.12 on")
def test_linear_curves_a_buffer_that_empties_the_features():
    """A grids or output buffer whose __buffer__ empties the features: the kernel reads them as they were."""
    fs, terms, w, mean, sd = linear_args()
    pos, data = {f: i for i, f in enumerate(fs)}, np.linspace(-3.0, 3.0, 12).reshape(4, 3)
    expected = np.zeros((4, 3))
    assert K.linear_curves(terms, w, mean, sd, pos, list(fs), data, 0.5, 1, expected) and expected.any()

    class Trap:
        def __init__(self, features, array):
            self.features, self.array = features, array

        def __buffer__(self, flags):
            self.features.clear()
            return memoryview(self.array)

    for trap_out in (False, True):
        features, out = list(fs), np.zeros((4, 3))
        grids, into = (data, Trap(features, out)) if trap_out else (Trap(features, data), out)
        assert K.linear_curves(terms, w, mean, sd, pos, features, grids, 0.5, 1, into)
        assert not features and out.tobytes() == expected.tobytes()
