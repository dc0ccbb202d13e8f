"""The compiled kernels (pipeline/core/_kernels*.c) never touch memory they do not own: inputs of
the wrong shape or length get False/None (the Python code then runs) or a TypeError, and Python
code a kernel runs midway (a key's __hash__ or __eq__, a stored value's comparison, a class's
__init__) that shrinks or replaces what the kernel checked gets an error, never a write or read
out of bounds. Run under AddressSanitizer too (README, "Compiled kernels")."""

from __future__ import annotations

import random
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


def test_welford_wrong_lengths_and_shapes():
    stats = {"a": [1, 0.0, 0.0], "b": [1, 0.0, 0.0]}
    before = repr(stats)
    sm, index = {"a": 0.0, "b": 0.0}, {"a": 0, "b": 5}
    for features, values, smoothed, idx, out in [
            (["a", "b"], [1.0], None, None, None), (["a"], [1.0, 2.0], None, None, None),
            (["a", "b"], [1.0, 2.0], sm, index, [0.0] * 2), (["a", "b"], [1.0, 2.0], sm, {"a": -1, "b": 0}, [0.0] * 2),
            (["a", "b"], [1.0, 2.0], sm, index, (0.0,) * 6), (["a", "b"], [1.0, 2.0], {"a": 0.0}, None, None)]:
        assert K.welford_smooth(stats, features, values, smoothed, 0.5, 0.5, idx, out) is False
    assert repr(stats) == before
    assert K.welford_smooth({"a": [1, 0.0]}, ["a"], [1.0], None, 0.5, 0.5, None, None) is False
    with pytest.raises(TypeError):
        K.welford_smooth(["a"], ["a"], [1.0], None, 0.5, 0.5, None, None)


def test_welford_keys_that_shrink_the_output_midway():
    """A feature whose hash, in the updates, empties the output list the checks measured."""
    out = [0.0] * 4
    key = Trap("a", 4, out.clear)  # three hashes in the checks, the fourth in the updates
    stats, sm, index = {"a": [0, 0.0, 0.0]}, {"a": 0.0}, {"a": 3}
    try:
        K.welford_smooth(stats, [key], [1.0], sm, 0.5, 0.5, index, out)
    except RuntimeError as e:
        assert "changed" in str(e)
    assert out == [] or out == [0.0, 0.0, 0.0, 1.0]


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


def test_donor_uses_wrong_lengths():
    import streamxai.core.uncertainty as unc

    t = unc.SmoothedStderr(["a", "b"], 0.1)
    p, o = t._pairs, t._owns
    lists = [p.xy, p.x, p.y, p.n, o.xy, o.x, o.y, o.n, t._uses]
    items = [{"x": 1.0}] * 8
    for j in range(9):
        bad = list(lists)
        bad[j] = bad[j][:1]
        assert K.donor_uses(t._slots, items, [0, 4], [1.0, 2.0], True, unc.SlotUse, *bad, 4) is False, j
    assert K.donor_uses(t._slots, items[:4], [0, 4], [1.0, 2.0], True, unc.SlotUse, *lists, 4) is False
    assert K.donor_uses(t._slots, items, [0, 4], [1.0, 2.0], True, unc.SlotUse, *lists, 0) is False
    assert not t._slots and not any(t._uses)


def test_donor_uses_an_observation_whose_comparison_shrinks_the_lists():
    """An observation's __eq__ (run to tell a stored observation from a new one) that empties
    the lists the kernel adds to and the reservoir it reads."""
    import streamxai.core.uncertainty as unc

    t = unc.SmoothedStderr(["a", "b"], 0.1)
    p, o = t._pairs, t._owns
    lists = [p.xy, p.x, p.y, p.n, o.xy, o.x, o.y, o.n, t._uses]

    class Obs:
        def __eq__(self, other):
            for li in lists:
                li.clear()
            items.clear()
            return False

        __hash__ = None

    items = [Obs() for _ in range(8)]
    t._slots[0] = unc.SlotUse(Obs(), 2)
    t._slots[4] = unc.SlotUse(Obs(), 2)
    try:
        K.donor_uses(t._slots, items, [0, 4], [1.0, 2.0], False, unc.SlotUse, *lists, 4)
    except RuntimeError as e:
        assert "changed" in str(e)


def test_rows_and_moments_wrong_shapes():
    row = np.zeros(3)
    for r, vals in [(row, [1.0] * 2), (row, [1.0] * 4), (row[::2], [1.0] * 2), (row.astype("f4"), [1.0] * 3),
                    (row.tolist(), [1.0] * 3), (np.zeros(3, dtype=np.int64), [1.0] * 3)]:
        assert K.fill_row(r, vals) is False
    assert not row.any()
    out = np.zeros((1, 2, 2))
    for w, x, o in [(np.ones((1, 2)), np.ones((2, 2)), np.zeros((1, 2, 3))), (np.ones((2, 2)), np.ones((2, 2)), out),
                    (np.ones((1, 2)), np.ones(4), out), (np.ones((1, 2)), np.ones((2, 2, 1)), out),
                    (np.ones((1, 0)), np.ones((0, 2)), out), (np.ones((1, 2)), np.ones((2, 2)), out.T)]:
        assert K.moment_sums(w, x, o) is False
    assert not out.any()


def report_args(d: int = 3, b: int = 4):
    """stderr_report's arguments for a tracker of d features with b increments held."""
    from streamxai.core.uncertainty import SmoothedStderr

    t = SmoothedStderr([f"f{i}" for i in range(d)], 0.1)
    for i in range(b):
        t.add_increments([float(i + j) for j in range(d)])
    w, cbs, wsums, w2 = t._block(b)
    lists = tuple([0.5] * d for _ in range(9))
    return [t._mom, t._slow, t._buffer[:b], w, np.zeros((6, d)), (*cbs, *wsums, *w2, 0.1, 0.9, True, 4.0, 8.0, 0.5, 4.0),
            lists]


def test_stderr_report_wrong_shapes_and_types():
    assert K.stderr_report(*report_args()) is True
    for i, bad in [(0, np.zeros((2, 3))), (0, np.zeros((3, 3), dtype="f4")), (1, np.zeros((3, 3)).T),
                   (2, np.zeros((4, 2))), (2, np.zeros(12)), (2, np.zeros((0, 3))), (3, np.ones((1, 4))),
                   (3, np.ones((2, 3))), (3, None), (4, np.zeros((5, 3))), (4, np.zeros((6, 3)).T),
                   (6, tuple([0.5] * 3 for _ in range(8)) + ([0.5, 0.5],)),
                   (6, tuple([0.5] * 3 for _ in range(8)) + ([0.5, 1, 0.5],)),
                   (6, ((0.5,) * 3,) + tuple([0.5] * 3 for _ in range(8)))]:
        args = report_args()
        args[i] = bad
        assert K.stderr_report(*args) is False, i
        if i != 4:
            assert not args[4].any(), i
    with pytest.raises(TypeError):  # the scalars are not numbers
        K.stderr_report(*report_args()[:5], ("x",) * 13, report_args()[6])


@pytest.mark.skipif(sys.version_info < (3, 12), reason="a Python class exports a buffer from Python 3.12 on")
def test_stderr_report_a_buffer_that_empties_the_lists():
    """Taking the output's buffer runs its __buffer__ method, which empties a pair-sum list the
    kernel reads: it checks the lists after taking every buffer."""
    args = report_args()
    data = np.zeros((6, 3))

    class Out:
        def __buffer__(self, flags):
            args[6][3].clear()
            return memoryview(data)

    args[4] = Out()
    assert K.stderr_report(*args) is False and not data.any()


def test_an_output_sharing_memory_with_an_input_is_declined():
    """The contract: a kernel writes only to arrays that share no byte with any other array it is
    given; else it declines (False/None, nothing written) and the caller's numpy code runs, which
    reads all of an input before it writes an overlapping output. A kernel that wrote its
    outputs while still reading an input in the same memory (moment_sums, extremes_grids), or
    did not count an input such as fold_curves' flat mask, would give wrong values."""
    out = np.zeros((1, 2, 2))
    x = out.reshape(2, 2)  # the same four doubles
    x[:] = [[1.0, 2.0], [3.0, 4.0]]
    assert K.moment_sums(np.ones((1, 2)), x, out) is False
    assert out.ravel().tolist() == [1.0, 2.0, 3.0, 4.0]  # untouched
    w = np.zeros(4)
    w[:2] = 1.0
    assert K.moment_sums(w[:2].reshape(1, 2), np.ones((2, 1)), w[2:].reshape(1, 2, 1)) is True  # apart: taken
    assert K.moment_sums(w[:2].reshape(1, 2), np.ones((2, 1)), w[1:3].reshape(1, 2, 1)) is False  # one double shared
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
    args = report_args()
    both = np.zeros((10, 3))
    args[2], args[4] = both[:4], both[4:]  # the held increments just before out: apart, taken
    assert K.stderr_report(*args) is True
    args[4] = both[3:9]  # out begins at the last held row
    both[:] = 0.0
    assert K.stderr_report(*args) is False and not both.any()
    args = report_args()
    args[4] = np.zeros((8, 3))[:6]
    args[0] = args[4][:3]  # the moments inside out
    assert K.stderr_report(*args) is False


def test_draws_wrong_shapes_and_keys_that_shrink_the_generators():
    with pytest.raises(IndexError):  # an empty reservoir, as the Python code's past[0]
        K.draw_pairs([("a", random.Random(1))], [], [], [], random.Random)
    assert K.draw_pairs([("a",)], [{"a": 1.0}], [], [], random.Random) is False
    assert K.draw_pairs([["a", random.Random(1)]], [{"a": 1.0}], [], [], random.Random) is False
    rngs = [None, ("b", random.Random(2))]
    rngs[0] = (Trap("a", 1, rngs.clear), random.Random(1))  # the first row's lookup empties the generators
    try:
        K.draw_pairs(rngs, [{"a": 1.0, "b": 2.0}], [], [], random.Random)
    except RuntimeError as e:
        assert "changed" in str(e)
    assert K.shuffle(("a", "b"), random.Random(1), random.Random) is False


def test_shuffle_a_generator_that_returns_out_of_range():
    rng = random.Random(1)
    rng.random = lambda: 1e300  # an instance attribute: the kernel calls it as the Python code would
    with pytest.raises(IndexError):
        K.shuffle(["a", "b", "c"], rng, random.Random)
    rng.random = lambda: float("nan")
    with pytest.raises((IndexError, ValueError)):
        K.shuffle(["a", "b", "c"], rng, random.Random)


def test_keys_that_shrink_the_lists_while_they_are_checked():
    """The same in the checks before any write: the kernel measures the lists again after every
    lookup (a False or an error; the Python code then meets the changed lists itself)."""
    features = [None, "b"]
    features[0] = Trap("a", 1, features.clear)
    stats = {"a": [0, 0.0, 0.0], "b": [0, 0.0, 0.0]}
    try:
        K.welford_smooth(stats, features, [1.0, 2.0], None, 0.5, 0.5, None, None)
    except RuntimeError as e:
        assert "changed" in str(e)
    args = fold_args()
    names = args[11]
    key = Trap("f0", 1, names.clear)  # the first check's hash
    names[0] = key
    args[12] = {key: 0.0, "f1": 0.0}
    assert K.fold_curves(*args) is None


def test_entries_replaced_midway_by_other_types():
    """Python code run midway that replaces an entry (same length) by an object of another type:
    the kernel checks the entry's type again before it reads it as a pair or a list."""
    import streamxai.core.uncertainty as unc

    rngs = [None, ("b", random.Random(2))]
    rngs[0] = (Trap("a", 1, lambda: rngs.__setitem__(1, 12345)), random.Random(1))
    with pytest.raises(RuntimeError, match="changed"):
        K.draw_pairs(rngs, [{"a": 1.0, "b": 2.0}], [], [], random.Random)

    t = unc.SmoothedStderr(["a", "b"], 0.1)
    p, o = t._pairs, t._owns
    lists = [p.xy, p.x, p.y, p.n, o.xy, o.x, o.y, o.n, t._uses]
    slots = [[0], [4]]

    class Obs:
        def __eq__(self, other):
            slots[1] = 12345.0
            return False

        __hash__ = None

    items = [Obs() for _ in range(8)]
    t._slots[0] = unc.SlotUse(Obs(), 2)
    with pytest.raises(RuntimeError, match="changed"):
        K.donor_uses(t._slots, items, slots, [1.0, 2.0], True, unc.SlotUse, *lists, 4)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="a Python class exports a buffer from Python 3.12 on")
def test_fill_row_a_buffer_that_changes_the_values():
    """Taking the row's buffer runs its __buffer__ method, which empties the values: the kernel
    reads the values after taking the buffer (it read a cleared list's items before)."""
    values = [1.0, 2.0, 3.0]
    data = np.zeros(3)

    class Row:
        def __buffer__(self, flags):
            values.clear()
            return memoryview(data)

    assert K.fill_row(Row(), values) is False and not data.any()


def test_donor_uses_a_slot_class_whose_attributes_are_made_on_each_read():
    """A slot class whose counts and sums are properties (a new list on each read): the kernel
    holds what it read while it adds to it (it kept only borrowed pointers to lists then freed)."""
    import streamxai.core.uncertainty as unc

    class Fresh:
        def __init__(self, observation, d, own=None):
            self.observation, self.d = observation, d

        counts = property(lambda self: [0] * self.d)
        sums = property(lambda self: [0.0] * self.d)
        own = property(lambda self: None)

    t = unc.SmoothedStderr(["a", "b"], 0.1)
    p, o = t._pairs, t._owns
    lists = [p.xy, p.x, p.y, p.n, o.xy, o.x, o.y, o.n, t._uses]
    items = [{"x": float(i)} for i in range(8)]
    for _ in range(3):
        assert K.donor_uses(t._slots, items, [0, 4], [1.0, 2.0], False, Fresh, *lists, 4)
    assert t._uses == [6.0, 6.0]


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
    """A key of the positions whose __eq__ (run by the kernel's first lookup) empties every list
    the kernel was given: the kernel reads the lists as they were when called, never a freed
    item or past a list's end, and gives the same results; a donor key that empties its own dict
    leaves the chain to the Python code."""
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
    """Taking the grids' (or the output's) buffer runs its __buffer__ method, which empties the
    features: the kernel reads the features as they were when called, as with a key's __eq__
    (it indexed the emptied list's copy by the length read before)."""
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
