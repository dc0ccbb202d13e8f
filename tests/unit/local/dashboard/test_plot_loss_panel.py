"""``streamxai plot``'s loss panel: every legend entry is a line a reader can see."""

from __future__ import annotations

import math

import numpy as np
from helpers.loss_stream import feed_loss_stream
from matplotlib.colors import to_rgba
from streamxai.local.dashboard import DashboardState
from streamxai.local.plot import draw


def _view():
    st = DashboardState(max_points=400)
    feed_loss_stream(st, "s")
    return st.stream_view("s")


def _visible_pixels(fig, ax, line) -> int:
    """Pixels of ``line``'s colour (as drawn, alpha included, over white) inside ``ax`` and
    outside its legend: 0 when the line is hidden under another or drawn off the axes."""
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(float) / 255
    h = img.shape[0]
    r, g, b, alpha = to_rgba(line.get_color(), line.get_alpha())
    want = np.array([r, g, b]) * alpha + (1 - alpha)
    x0, y0, x1, y1 = ax.get_window_extent().extents
    inside = np.zeros(img.shape[:2], bool)
    inside[int(h - y1) + 1:int(h - y0) - 1, int(x0) + 1:int(x1) - 1] = True
    lx0, ly0, lx1, ly1 = ax.get_legend().get_window_extent().extents
    inside[int(h - ly1) - 1:int(h - ly0) + 2, int(lx0) - 1:int(lx1) + 2] = False
    close = np.abs(img - want).max(axis=-1) < 0.08
    return int((close & inside).sum())


def test_every_legend_entry_of_the_loss_panel_is_a_visible_line_of_its_own():
    """The loss panel's legend lists the model's loss once per stream, not once per explainer."""
    import matplotlib.pyplot as plt

    fig = draw(_view())
    try:
        (ax,) = [a for a in fig.axes if a.get_ylabel() == "loss"]
        handles, labels = ax.get_legend_handles_labels()
        assert len(labels) == len(set(labels)) and len(labels) >= 2, labels
        data = [(tuple(h.get_xdata()), tuple(h.get_ydata())) for h in handles]
        assert len(set(data)) == len(data), f"legend entries {labels} draw the same series more than once"
        (xlo, xhi), (ylo, yhi) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        for h, label in zip(handles, labels, strict=True):
            pts = [(x, y) for x, y in zip(h.get_xdata(), h.get_ydata(), strict=True)
                   if y is not None and math.isfinite(x) and math.isfinite(y) and xlo <= x <= xhi and ylo <= y <= yhi]
            assert len(pts) >= 2, f"{label!r} has {len(pts)} finite points inside the axes"
            # a reader sees at least ~100 px of it (the panel is ~1300 px wide; 0 when hidden)
            assert _visible_pixels(fig, ax, h) >= 100, f"{label!r} cannot be seen"
    finally:
        plt.close(fig)
