"""The change detector's compact curve history gives back exactly the curves it was given."""

from __future__ import annotations

import math
import random
import struct

from streamxai.core.change import curves
from streamxai.core.change.curves import pack, unpack


def _bits(curve: dict) -> dict:
    return {k: [struct.pack("<d", x) if isinstance(x, float) else x for x in v] for k, v in curve.items()}


def test_floats_come_back_bit_for_bit_in_fresh_lists():
    rng = random.Random(4)
    odd = [-0.0, 0.0, 5e-324, 1.7976931348623157e308, -math.pi, 1e-300]
    for n in (0, 1, 10, 31):
        curve = {"grid": [rng.uniform(-1e6, 1e6) for _ in range(n)], "pd": [rng.random() for _ in range(n)],
                 "se": (odd * 6)[:n]}
        packed = pack(curve)
        assert isinstance(packed, tuple)
        back = unpack(packed)
        assert list(back) == ["grid", "pd", "se"] and _bits(back) == _bits(curve)
        back["pd"].append(1.0)  # the caller's copy: the packed one does not change
        assert unpack(packed) == curve


def test_categories_and_other_values_are_kept_as_a_copy():
    curve = {"grid": ["red", "blue"], "pd": [0.25, 0.5], "se": [0.0, 0.1]}
    packed = pack(curve)
    assert isinstance(packed, dict) and packed["grid"] is not curve["grid"]
    assert unpack(packed) == curve
    ints = {"grid": [1, 2], "pd": [0.5, 0.5]}  # integers stay integers
    assert unpack(pack(ints)) == ints and type(unpack(pack(ints))["grid"][0]) is int


def test_the_shared_layouts_are_bounded():
    for i in range(2 * curves._MAX_LAYOUTS):
        c = {f"k{i}": [0.5]}
        assert unpack(pack(c)) == c
    assert len(curves._LAYOUTS) <= curves._MAX_LAYOUTS
