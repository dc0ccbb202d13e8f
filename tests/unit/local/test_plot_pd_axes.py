"""``streamxai plot``'s PD panels: each axis names what its grid holds."""

from __future__ import annotations

from streamxai.local.plot import draw


def _view(curves: dict) -> dict:
    return {"stream_id": "s", "last_seq": 99, "explainers": ["ipdp"], "changes": [], "episodes": [],
            "series": {"ipdp": {f: {"x": [9, 19], "y": [0.1, 0.2]} for f in curves}},
            "loss": {"x": [], "y": []}, "curves": curves}


def test_a_categorical_pd_axis_shows_each_category_once_at_its_point():
    """A categorical PD panel has one tick per category, named after it, at its point."""
    import matplotlib.pyplot as plt

    curves = {"city": {"grid": ["a", "b", "c"], "pd": [0.8, 0.75, 0.7], "se": [0.05, 0.05, 0.05], "seq": 99},
              "x0": {"grid": [0.0, 2.5e5, 5e5, 7.5e5, 1e6], "pd": [1.0, 2.0, 3.0, 4.0, 5.0], "seq": 99}}
    fig = draw(_view(curves))
    try:
        fig.canvas.draw()
        (ax,) = [a for a in fig.axes if a.get_title() == "PD of city"]
        ticks = [(t, lab.get_text()) for t, lab in zip(ax.get_xticks(), ax.get_xticklabels(), strict=True)]
        assert ticks == [(0, "a"), (1, "b"), (2, "c")], ticks
        (num,) = [a for a in fig.axes if a.get_title() == "PD of x0"]
        assert 2 <= len(num.get_xticks()) <= 6  # a numeric grid keeps its few, readable ticks
    finally:
        plt.close(fig)
