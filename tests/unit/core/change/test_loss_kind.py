"""The kind test's false rates: a stationary heavy-tailed squared loss told ``degradation`` or ``learning``
at a random cut with an episode's short after-sides, and an episode's looks together at a flat
light-tailed loss (open, members and close: one 5%, streamxai.core.change.looks)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from streamxai.core.change.events import loss_kind
from streamxai.core.change.looks import (
    CLOSE_DELTA,
    DELTA,
    MEMBER_DELTA,
    OPEN_DELTA,
    Z_OPEN,
    close_kind,
    close_rise,
    member_kind,
    member_rise,
    open_kind,
)
from streamxai.core.increments import Block


def _block(x: np.ndarray) -> Block:
    m = float(x.mean())
    return Block(len(x), m, float(((x - m) ** 2).sum()))


def test_heavy_tailed_stationary_loss_is_told_moved_at_most_at_the_nominal_rate():
    """Normal errors times a lognormal scale (sigma 0.45: excess kurtosis about 250, heavier than the Friedman
    trees' 22-164), 13,248 random cuts with after-sides of 100-500 and before-sides of 5,000-27,000. Each
    direction is one-sided at 5%; the tolerance is three binomial standard errors of 13,248 cuts at 5%
    (0.57 points). The pooled error alone says ``degradation`` at 5.80%, Welch's alone ``learning`` at
    11.3%; the larger of the two, as the change test uses, stays below both bounds (1.6% and 2.7%)."""
    n = 4_000_000
    x = (np.random.default_rng(5).lognormal(0.0, 0.45, n) * np.random.default_rng(6).standard_normal(n)) ** 2
    rng = np.random.default_rng(2)
    counts = {"learning": 0, "degradation": 0, "reliance_shift": 0}
    i = 27_000
    while True:
        k, back = int(rng.integers(100, 501)), int(rng.integers(5_000, 27_001))
        if i + k > n:
            break
        counts[loss_kind(_block(x[i - back:i]), _block(x[i:i + k]), min_n=100)] += 1
        i += k
    cuts = sum(counts.values())
    assert cuts == 13_248
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / cuts)
    assert counts["degradation"] / cuts <= bound, counts
    assert counts["learning"] / cuts <= bound, counts


def _two_looks(x: np.ndarray, seed: int) -> tuple[int, int]:
    """(cuts, told ``degradation`` by either look) for an episode's open (100-500 losses after the cut) and,
    if that said neither, close (1,000-2,000 from the same cut) at a loss that did not move."""
    rng = np.random.default_rng(seed)
    i, cuts, told = 27_000, 0, 0
    while True:
        k, k2, back = int(rng.integers(100, 501)), int(rng.integers(1_000, 2_001)), int(rng.integers(5_000, 27_001))
        if i + k2 > len(x):
            return cuts, told
        before, first = _block(x[i - back:i]), _block(x[i:i + k])
        kind = open_kind(before, first, min_n=100)
        if kind == "reliance_shift":
            kind = close_kind(before, _block(x[i:i + k2]), (i + k, before.n, first.n), i + k2, min_n=100)
        cuts, told, i = cuts + 1, told + (kind == "degradation"), i + k2


@pytest.mark.parametrize("name", ["bernoulli", "normal"])
def test_an_episodes_two_looks_tell_a_flat_light_tailed_loss_degradation_at_most_at_the_nominal_rate(name):
    """Two looks each one-sided at 5% would tell about 8.5% of flat 0-1 and normal losses ``degradation``.
    2,000,000 losses (about 1,300 cuts); the tolerance, three binomial standard errors of the cuts at 5%
    (1.8 points), fails a rate of 8.5%."""
    n = 2_000_000
    rng = np.random.default_rng(3 if name == "bernoulli" else 4)
    x = (rng.random(n) < 0.2).astype(float) if name == "bernoulli" else rng.standard_normal(n)
    cuts, told = _two_looks(x, 2)
    assert cuts > 1_000
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / cuts)
    assert told / cuts <= bound, (told, cuts)


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_the_close_boundary_spends_the_close_share_and_all_looks_stay_within_five_percent(rho):
    """Both looks as standard bivariate normals with correlation ``rho`` (2,000,000 pairs): ``z1 >= 1.96`` or
    ``z2 >= close_rise(rho)`` at ``OPEN_DELTA + CLOSE_DELTA`` (3.75%) within three binomial standard
    errors (0.040 points); with the members' share, all looks at most 5% by the union bound (a budget
    of 7.5% fails at every correlation)."""
    assert OPEN_DELTA + CLOSE_DELTA + MEMBER_DELTA <= DELTA
    n = 2_000_000
    rng = np.random.default_rng(11)
    z1 = rng.standard_normal(n)
    z2 = rho * z1 + math.sqrt(1 - rho * rho) * rng.standard_normal(n)
    rate = float(np.mean((z1 >= Z_OPEN) | (z2 >= close_rise(rho))))
    se = math.sqrt(0.05 * 0.95 / n)
    assert abs(rate - (OPEN_DELTA + CLOSE_DELTA)) <= 3 * se, rate
    members = sum(1.0 - NormalDist().cdf(member_rise(k)) for k in range(1, 20_001))  # the rest: < 4e-7
    assert rate + members <= DELTA + 3 * se, (rate, members)


def _episodes(episodes: int, seed: int, bernoulli: bool, min_n: int = 100) -> int:
    """How many of ``n`` episodes at a flat loss any look (open on 100-500 losses after the cut; 2-8 members
    50-400 apart, each looked at once ``min_n`` losses follow; the close on 1,000-2,000 losses if the open
    said neither) told ``degradation``, each episode on fresh independent losses, as the change agent looks."""
    rng = np.random.default_rng(seed)
    told = 0
    for _ in range(episodes):
        back, k, span = int(rng.integers(2_000, 10_001)), int(rng.integers(100, 501)), int(rng.integers(1_000, 2_001))
        cuts = [int(j) for j in np.cumsum(rng.integers(50, 401, int(rng.integers(2, 9))))]
        end = max(span, cuts[-1] + min_n)
        x = (rng.random(back + end) < 0.2).astype(float) if bernoulli else rng.standard_normal(back + end)
        s1, s2 = np.concatenate(([0.0], np.cumsum(x))), np.concatenate(([0.0], np.cumsum(x * x)))

        def block(a: int, b: int, s1: np.ndarray = s1, s2: np.ndarray = s2) -> Block:
            m = (s1[b] - s1[a]) / (b - a)
            return Block(b - a, m, max(0.0, s2[b] - s2[a] - (b - a) * m * m))

        i, kind, looks, moved = back, None, 0, False
        for _, j in sorted([(k, -1)] + [(j + min_n, j) for j in cuts]):  # the looks in the order they come (-1: the open)
            if j < 0:
                kind = open_kind(block(0, i), block(i, i + k), min_n=min_n)
                moved = kind == "degradation"
            elif kind in (None, "learning"):
                looks += 1
                before = block(0, i + j) if kind is None else block(i, i + j)
                moved = member_kind(before, block(i + j, i + j + min_n), looks, min_n=min_n) == "degradation"
            if moved:
                break
        if not moved and kind == "reliance_shift":
            moved = close_kind(block(0, i), block(i, i + end), (i + k, i, k), i + end, min_n=min_n) == "degradation"
        told += moved
    return told


@pytest.mark.parametrize("name", ["bernoulli", "normal"])
def test_whole_episodes_with_members_tell_a_flat_loss_degradation_at_most_at_five_percent(name):
    """5,000 whole episodes say ``degradation`` of flat 0-1 and normal losses at most 5% of the time, within
    three binomial standard errors of 5,000 at 5% (0.92 points); the budget test above catches a 7.5% split."""
    episodes = 5_000
    told = _episodes(episodes, 7 if name == "normal" else 8, name == "bernoulli")
    assert told / episodes <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / episodes), told
