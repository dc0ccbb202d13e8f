"""The episode and alert rules of streamxai.core.change.stream on real-stream shapes: drifts inside open
episodes, bounded episodes, alerts once their kind is known, iPDP of barely used features, the loss
as a series of its own, slow drifts, and a model giving up its most important feature."""

from __future__ import annotations

import random

from helpers.change_feed import block, feed
from streamxai.core.change import StreamChangeDetector
from streamxai.core.change.stream import LOSS
from streamxai.core.increments import Block


def flat(t):
    return Block(10, 0.2, 1.6)


def _alerts(episodes):
    return [e for e in episodes if e.first and e.alert]


def test_a_drift_inside_an_open_episode_pages_on_its_own():
    """a drops at 3,000 with the loss rising (a page); b rises at 3,500, within the gap: a regime that began
    after the first episode was announced closes it and opens its own, which pages with b's cut."""
    levels = lambda t: {("ipfi", "a"): 0.4 if t < 300 else 0.1, ("ipfi", "b"): 0.0 if t < 350 else 0.3,  # noqa: E731
                        ("ipfi", "c"): 0.2}
    rise = lambda t: Block(10, 0.2 if t < 300 else 0.35, 1.6)  # noqa: E731
    det = StreamChangeDetector([("ipfi", f) for f in "abc"], warmup=0, episode_gap=1000)
    changes, episodes = feed(det, random.Random(31), levels, range(900), loss=rise)
    episodes += det.flush()
    a = next(c for c in changes if c.feature == "a")
    b = next(c for c in changes if c.feature == "b")
    assert b.seq - a.seq < det.episode_gap  # one episode under the gap alone
    first, second = _alerts(episodes)
    assert first.kind == "degradation" and "a" in {c.feature for c in first.changes}
    assert [c.feature for c in second.changes] == ["b"] and second.first_seq == b.seq
    assert abs(second.cut_seq - 3500) <= 60
    closed = [e for e in episodes if e.status == "closed"]
    assert [e.first_seq for e in closed] == [first.first_seq, second.first_seq]
    assert b not in closed[0].changes


def test_no_episode_grows_without_bound():
    """A staircase (a step every 2,000 events, under the 6,000 gap) never makes an episode longer than
    change_episode_max (8,000) plus the gap."""
    levels = lambda t: {("ipfi", "a"): 0.3 + 0.15 * (t // 200), ("ipfi", "b"): 0.3}  # noqa: E731
    det = StreamChangeDetector([("ipfi", "a"), ("ipfi", "b")], warmup=0, episode_gap=6000, episode_max=8000,
                               min_effect=0.02)
    changes, episodes = feed(det, random.Random(32), levels, range(3000), loss=flat)
    seqs = [c.seq for c in changes]
    assert seqs[-1] - seqs[0] > 20_000 and max(b - a for a, b in zip(seqs, seqs[1:], strict=False)) < 6000, seqs
    closed = [e for e in episodes if e.status == "closed"]
    assert len(closed) >= 2
    assert all(e.closed_seq - e.first_seq <= 8000 + 6000 + 20 for e in closed)


def test_ipdp_of_a_feature_the_model_barely_uses_is_no_event():
    """The same iPDP step of feature b at event 3,000: an event while iPFI says the model relies
    on b (0.3 of the top 0.4), none while b's iPFI is 0.01 (2.5% of it, below change_min_effect)."""
    for b_importance, expect in ((0.3, True), (0.01, False)):
        levels = lambda t, bi=b_importance: {("ipfi", "a"): 0.4, ("ipfi", "b"): bi,  # noqa: E731
                                             ("ipdp", "a"): 0.3, ("ipdp", "b"): 0.1 if t < 300 else 0.4}
        det = StreamChangeDetector([(e, f) for e in ("ipfi", "ipdp") for f in "ab"], warmup=0)
        changes, _ = feed(det, random.Random(33), levels, range(700), loss=flat)
        assert any((c.explainer, c.feature) == ("ipdp", "b") for c in changes) is expect, changes


def test_ipdp_changes_alone_never_page():
    """An iPDP step of a used feature at a flat loss is a change event and an episode (a
    reliance shift of the model's effect), never an alert."""
    levels = lambda t: {("ipfi", "a"): 0.4, ("ipdp", "a"): 0.1 if t < 300 else 0.4}  # noqa: E731
    det = StreamChangeDetector([("ipfi", "a"), ("ipdp", "a")], warmup=0, episode_gap=300)
    changes, episodes = feed(det, random.Random(34), levels, range(700), loss=flat)
    assert [(c.explainer, c.feature) for c in changes] == [("ipdp", "a")]
    assert episodes and not _alerts(episodes)


def test_an_effect_that_flaps_between_two_levels_is_news_once_and_a_new_level_again():
    """An effect flapping between 0.1 and 0.4 is a change event once; a move to 0.8, a level never held, again."""
    def levels(t):
        effect = 0.8 if t >= 600 else (0.1, 0.4)[t // 40 % 2]
        return {("ipfi", "a"): 0.4, ("ipdp", "a"): effect}

    det = StreamChangeDetector([("ipfi", "a"), ("ipdp", "a")], warmup=0)
    changes, _ = feed(det, random.Random(35), levels, range(700), loss=flat)
    moves = [(c.seq, round(c.before.mean, 1), round(c.after.mean, 1)) for c in changes if c.explainer == "ipdp"]
    assert len(moves) == 2 and moves[0][1:] == (0.1, 0.4) and moves[1][1:] == (0.1, 0.8), moves
    assert 400 <= moves[0][0] < 1000 and 6000 <= moves[1][0] < 6600, moves


def _ipdp_fall_run(feature: str, after: float):
    """The loss rises 0.2 -> 0.3 at event 3,000 (too little for its own test to be quick) and the
    iPDP of ``feature`` moves to ``after``; the model leans on a (iPFI 0.4), barely on b (0.04)."""
    levels = lambda t: {("ipfi", "a"): 0.4, ("ipfi", "b"): 0.04,  # noqa: E731
                        ("ipdp", "a"): after if t >= 300 and feature == "a" else 0.4,
                        ("ipdp", "b"): after if t >= 300 and feature == "b" else 0.3}
    loss = lambda t: Block(10, 0.2 if t < 300 else 0.3, 10 * 0.16)  # noqa: E731
    det = StreamChangeDetector([(e, f) for e in ("ipfi", "ipdp") for f in "ab"], warmup=0, episode_gap=1000)
    return feed(det, random.Random(7), levels, range(700), loss=loss)


def test_a_rise_of_the_loss_with_a_fall_of_the_effect_of_what_the_model_leans_on_pages_at_once():
    """A loss rise with the effect of a (leaned on) falling pages at its look, naming a; with b's (barely
    used) falling or a's rising, it waits for the loss's own test, which names no feature."""
    changes, episodes = _ipdp_fall_run("a", 0.1)
    (page,) = _alerts(episodes)
    assert (page.kind, [(c.explainer, c.feature) for c in page.changes]) == ("degradation", [("ipdp", "a")])
    assert page.first_seq - 3000 < 100
    for feature, after in (("b", 0.0), ("a", 0.7)):
        changes, episodes = _ipdp_fall_run(feature, after)
        (page,) = _alerts(episodes)
        assert [(c.explainer, c.feature) for c in page.changes] == [LOSS] and page.first_seq - 3000 > 500


def test_the_loss_is_a_series_of_its_own_and_its_rise_pages():
    """A loss rising with no explanation moving is a ``model/loss`` change whose degradation episode pages."""
    levels = lambda t: {("ipfi", "a"): 0.4, ("ipfi", "b"): 0.1}  # noqa: E731
    rise = lambda t: Block(10, 0.2 if t < 300 else 0.35, 1.6)  # noqa: E731
    det = StreamChangeDetector([("ipfi", "a"), ("ipfi", "b")], warmup=0)
    changes, episodes = feed(det, random.Random(35), levels, range(700), loss=rise)
    assert [(c.explainer, c.feature) for c in changes] == [LOSS]
    (c,) = changes
    assert abs(c.cut_seq - 3000) <= 60 and c.before.mean < c.after.mean and c.kind == "degradation"
    assert set(c.vectors) == {"ipfi", "model"} and set(c.vectors["ipfi"]) == {"a", "b"}
    (page,) = _alerts(episodes)
    assert page.kind == "degradation" and page.changes[0] is c and page.first_seq - 3000 < 500


def test_a_loss_that_falls_is_never_a_change():
    levels = lambda t: {("ipfi", "a"): 0.4}  # noqa: E731
    det = StreamChangeDetector([("ipfi", "a")], warmup=0)
    changes, _ = feed(det, random.Random(36), levels, range(700), loss=lambda t: Block(10, 0.35 if t < 300 else 0.2, 1.6))
    assert changes == []


def test_a_change_confirmed_long_after_it_began_is_reported_without_a_page():
    """b steps 0 -> 0.15 at 3,000: with increments of sd 0.2 it pages; with sd 0.7 it needs about
    (6 * 0.7 / 0.15)^2 events and more, past change_episode_max: an event and an episode, no page."""
    for sd, paged in ((0.2, True), (0.7, False)):
        det = StreamChangeDetector([("ipfi", "a"), ("ipfi", "b")], warmup=0)
        levels = lambda t: {("ipfi", "a"): 0.4, ("ipfi", "b"): 0.0 if t < 300 else 0.15}  # noqa: E731
        changes, episodes = feed(det, random.Random(37), levels, range(1000), loss=flat, sd=sd)
        (c,) = [c for c in changes if c.feature == "b"]
        assert abs(c.cut_seq - 3000) <= 500 and (c.seq - c.cut_seq > det.episode_max) is not paged
        assert bool(_alerts(episodes)) is paged and episodes


def test_a_model_that_gives_up_its_most_important_feature_is_not_learning():
    """a and b trading places at a falling loss is a reliance shift, which pages; b rising beside a is learning."""
    falling = lambda t: Block(10, 0.3 if t < 300 else 0.2, 1.6)  # noqa: E731
    for swap, kind, alert in ((True, "reliance_shift", True), (False, "learning", False)):
        levels = lambda t, s=swap: {("ipfi", "a"): 0.4 if (t < 300 or not s) else 0.0,  # noqa: E731
                                    ("ipfi", "b"): 0.0 if t < 300 else 0.4}
        det = StreamChangeDetector([("ipfi", "a"), ("ipfi", "b")], warmup=0, episode_gap=300)
        _, episodes = feed(det, random.Random(38), levels, range(700), loss=falling)
        assert [(e.kind, e.alert) for e in episodes if e.first] == [(kind, alert)], swap


def test_a_reliance_shift_at_a_flat_loss_pages_when_the_reliance_explainers_agree():
    """b rising at a flat loss pages when iPFI and iSAGE both see it (iPFI alone when it is the only reliance explainer)."""
    for isage_moves, explainers, paged in ((True, ("ipfi", "isage"), True), (False, ("ipfi", "isage"), False),
                                           (False, ("ipfi",), True)):
        def levels(t, m=isage_moves, ex=explainers):
            out = {("ipfi", "a"): 0.4, ("ipfi", "b"): 0.0 if t < 300 else 0.3}
            if "isage" in ex:
                out |= {("isage", "a"): 0.2, ("isage", "b"): 0.0 if (t < 300 or not m) else 0.15}
            return out
        det = StreamChangeDetector([(e, f) for e in explainers for f in "ab"], warmup=0, episode_gap=500)
        _, episodes = feed(det, random.Random(39), levels, range(700), loss=flat)
        told = [e for e in episodes if e.first]
        assert [e.kind for e in told] == ["reliance_shift"] and told[0].alert is paged, (isage_moves, explainers)


def test_an_episode_of_ipdp_changes_alone_does_not_swallow_the_next_drift():
    """An unannounced iPDP-only episode (flat loss) does not swallow an iPFI drift within its gap: the drift
    opens its own episode and pages."""
    levels = lambda t: {("ipfi", "a"): 0.4 if t < 360 else 0.0, ("ipfi", "b"): 0.0 if t < 360 else 0.4,  # noqa: E731
                        ("ipdp", "a"): 0.1 if t < 300 else 0.4, ("ipdp", "b"): 0.2}
    det = StreamChangeDetector([(e, f) for e in ("ipfi", "ipdp") for f in "ab"], warmup=0, episode_gap=1000)
    changes, episodes = feed(det, random.Random(40), levels, range(800), loss=flat)
    first_ipdp = min(c.seq for c in changes if c.explainer == "ipdp")
    assert first_ipdp < 3600
    (page,) = _alerts(episodes)
    assert page.first_seq > 3600 and {c.explainer for c in page.changes} >= {"ipfi"}
    assert abs(page.cut_seq - 3600) <= 60


def test_an_episode_whose_cut_is_older_than_the_loss_window_waits_for_its_gap_and_never_fails():
    """A cut older than the loss window's oldest loss (loss blocks a hundred times the series'): the open's
    look cannot be taken, so the episode is announced at its gap, its kind decided there, never raising."""
    levels = lambda t: {("ipfi", "a"): 0.4 if t < 300 else 0.1, ("ipfi", "b"): 0.2}  # noqa: E731
    det = StreamChangeDetector([("ipfi", "a"), ("ipfi", "b")], warmup=0, episode_gap=1000, max_increments=4000)
    rng = random.Random(33)
    changes, episodes = [], []
    for t in range(500):
        seq = 10 * t + 9
        for (e, f), lv in levels(t).items():
            ch, ep = det.update(e, f, seq, block(rng, lv, sd=0.2), model_loss=Block(1000, 0.2, 160.0))
            changes += ch
            episodes += ep
    a = next(c for c in changes if c.feature == "a")
    assert abs(a.cut_seq - 3000) <= 200
    opened = [e for e in episodes if e.first]
    assert len(opened) == 1 and opened[0].first_seq == a.seq and opened[0].kind != "degradation"  # a flat loss
