"""Change markers a person can read when changes come close together (``streamxai plot``)."""

from __future__ import annotations

import random

import pytest
from helpers.crowded_changes import EPISODES, feed_crowded_changes
from helpers.levels import LEVELS
from streamxai.local.dashboard import DashboardState
from streamxai.local.markers import GAP, group_changes, label_text, layout_labels, merge
from streamxai.local.plot import draw


def _overlapping(boxes: list[tuple[str, object]]) -> list[tuple[str, str]]:
    """Pairs of labels whose drawn boxes (matplotlib Bboxes) overlap."""
    return [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:] if ba.overlaps(bb)]


def test_change_labels_in_the_plot_never_overlap_and_name_each_episode():
    """The demo's 44 change events in the plot: no two labels of a panel overlap, every change keeps its line,
    every episode is named by its kind on its panels."""
    import matplotlib.pyplot as plt

    st = DashboardState()
    n = feed_crowded_changes(st)
    view = st.stream_view("crowd")
    assert len(view["changes"]) == n == 44 and len(view["episodes"]) == 5
    fig = draw(view)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        panels = [ax for ax in fig.axes if ax.get_ylabel() in ("iPFI", "iSAGE", "iPDP")]
        assert len(panels) == 3
        for ax in panels:
            ex = ax.get_ylabel().lower()
            texts = [t for t in ax.texts if t.get_text()]
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
            assert not _overlapping(boxes), (ex, _overlapping(boxes))
            mine = [c for c in view["changes"] if c["explainer"] == ex]
            lines = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
            assert sorted(ln.get_xdata()[0] for ln in lines) == sorted(c["position"] for c in mine), ex
            said = " | ".join(t.get_text() for t in texts)
            for _, kind, alert, changes in EPISODES:
                if any(e == ex for e, _, _ in changes):
                    want = ("ALERT " if alert else "") + kind.replace("_", " ")
                    assert want in said or "episodes" in said, (ex, want, said)
            # and the labels lie inside the panel, along its top
            x0, y0, x1, y1 = ax.get_window_extent(renderer).extents
            for text, b in boxes:
                assert x0 - 1 <= b.x0 and b.x1 <= x1 + 1 and b.y1 <= y1 + 1 and b.y0 >= (y0 + y1) / 2, (ex, text)
    finally:
        plt.close(fig)


def test_layout_merges_neighbours_until_no_two_boxes_of_a_row_overlap():
    rng = random.Random(3)
    for _ in range(200):
        xs = sorted(rng.uniform(0, 1000) for _ in range(rng.randint(1, 40)))
        labels = [(x, rng.uniform(10, 200)) for x in xs]
        rows = rng.choice([1, 2, 3])
        boxes = layout_labels(labels, right=1000, rows=rows)
        assert [i for idx, _, _, _ in boxes for i in idx] == list(range(len(labels)))  # each once, neighbours merged
        for row in range(rows):
            mine = [b for b in boxes if b[3] == row]
            for (ia, _, ra, _), (ib, lb, _, _) in zip(mine, mine[1:], strict=False):
                assert ra + GAP <= lb, (ia, ib)  # apart, in order
        for idx, left, right, row in boxes:
            assert 0 <= row < rows
            assert right <= 1000 and right - left == pytest.approx(max(labels[i][1] for i in idx))
            assert left <= labels[idx[0]][0]  # a label starts at its first change, or ends at the edge
    # more rows keep apart what fewer rows share
    three = [(0, 50), (20, 50), (40, 50)]
    assert [b[0] for b in layout_labels(three, right=1000, rows=1)] == [[0, 1, 2]]
    assert [b[0] for b in layout_labels(three, right=1000, rows=2)] == [[0], [1, 2]]
    assert [b[0] for b in layout_labels(three, right=1000, rows=3)] == [[0], [1], [2]]


def test_changes_grouped_by_their_episode_and_lone_changes_alone():
    changes = [{"explainer": "ipfi", "feature": f, "position": p, "before": 0.1, "after": 0.2}
               for f, p in (("a", 100), ("b", 150), ("c", 150), ("a", 400), ("d", 2000))]
    episodes = [{"first_position": 100, "last_position": 400, "kind": "reliance_shift", "alert": False},
                {"first_position": 1990, "last_position": 2010, "kind": "degradation", "alert": True}]
    groups = group_changes(changes, episodes)
    assert [len(g["changes"]) for g in groups] == [4, 1]
    assert [label_text(g) for g in groups] == ["reliance shift: 3 series", "ALERT degradation: d"]
    assert label_text(group_changes(changes[:1], [])[0]) == "a 0.10→0.20"
    # a lone change that shares an episode's label (no room apart) is not told as the episode's
    assert label_text(merge(groups)) == "ALERT 2 episodes: 4 series"
    lone = group_changes(changes, episodes[:1])
    assert label_text(merge(lone)) == "reliance shift + 1 other change: 4 series"



def test_a_change_label_of_huge_levels_is_compact():
    """A regression's change label reads compact, not '6342689766.11→730973117446.70'."""
    from streamxai.local.markers import level_text

    assert label_text({"changes": [{"feature": "loss", "before": 6342689766.11, "after": 730973117446.70}],
                       "episode": None}) == "loss 6.34B→731B"
    assert [level_text(v) for v, _ in LEVELS] == [t for _, t in LEVELS]
