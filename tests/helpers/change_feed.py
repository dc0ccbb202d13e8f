"""Explanation blocks and a stream of them fed to a change detector, for the change tests."""

from __future__ import annotations

from streamxai.core.increments import Block


def block(rng, level, sd=0.3, n=10, draw=None):
    xs = [draw(rng) if draw else level + rng.gauss(0.0, sd) for _ in range(n)]
    m = sum(xs) / n
    return Block(n, m, sum((x - m) ** 2 for x in xs))


def rising_loss(t):
    return Block(10, 0.2 if t < 500 else 0.3, 1.0)


def flat_loss(t):
    return Block(10, 0.2, 1.0)


def feed(det, rng, levels, t_range, gap_seq=0, loss=rising_loss, sd=0.2):
    changes, episodes = [], []
    for t in t_range:
        seq = 10 * t + 9 + gap_seq
        for (e, f), lv in levels(t).items():
            ch, ep = det.update(e, f, seq, block(rng, lv, sd=sd), model_loss=loss(t))
            changes += ch
            episodes += ep
    return changes, episodes
