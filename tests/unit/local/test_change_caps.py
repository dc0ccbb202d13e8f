"""The reader keeps the newest ``max_changes`` changes and ``max_episodes`` episodes per stream and counts all;
the views say how many they do not draw (``plot`` keeps many more than the dashboard)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from helpers.outputs import shaped
from streamxai.local import plot as plot_module  # noqa: E402
from streamxai.local.dashboard import DashboardState  # noqa: E402


def _state(n_changes: int, **kw) -> DashboardState:
    st = DashboardState(**kw)
    for seq in range(0, 20 * n_changes + 20, 20):
        st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "value": 0.3, "seq": seq,
                                "n_explained": seq, "n_seen": seq}))
    for i in range(n_changes):
        st.add("drift-events", shaped("drift-events", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "seq": 20 * i + 10,
                                "level_before": 0.1, "level_after": 0.3}))
    for i in range(0, n_changes, 10):
        st.add("change-episodes", shaped("change-episodes", {"stream_id": "s", "first_seq": 20 * i + 10, "last_seq": 20 * i + 10,
                                   "cut_seq": 20 * i, "kind": "learning", "alert": False, "status": "closed",
                                   "changes": [{"explainer": "ipfi", "feature": "a", "seq": 20 * i + 10}]}))
    return st


def test_the_dashboard_keeps_and_draws_510_change_events():
    v = _state(510).stream_view("s")
    assert len(v["changes"]) == 510 and v["changes_total"] == 510 and v["changes_not_drawn"] == 0
    assert len(v["episodes"]) == 51 and v["episodes_not_drawn"] == 0
    assert _state(510).streams_summary()[0]["changes"] == 510


def test_beyond_its_bound_the_view_keeps_the_newest_and_counts_the_others():
    v = _state(250, max_changes=100, max_episodes=10).stream_view("s")
    assert len(v["changes"]) == 100 and v["changes"][0]["seq"] == 20 * 150 + 10  # the newest 100
    assert (v["changes_total"], v["changes_not_drawn"]) == (250, 150)
    assert (v["episodes_total"], v["episodes_not_drawn"]) == (25, 15)


def test_the_plot_says_how_many_change_events_it_does_not_draw(tmp_path):
    v = _state(250, max_changes=100, max_episodes=10).stream_view("s")
    fig = plot_module.draw(v)
    try:
        title = fig._suptitle.get_text()
    finally:
        plt.close(fig)
    assert "250 change events" in title and "150 older not drawn" in title
    summary = plot_module.plot_summary(v, tmp_path / "s.png")
    assert "250 change events" in summary and "150 older not drawn" in summary
    all_drawn = _state(120).stream_view("s")
    assert "not drawn" not in plot_module.plot_summary(all_drawn, tmp_path / "s.png")


def test_the_plot_reads_tens_of_thousands_of_change_events():
    assert plot_module.PLOT_MAX_CHANGES >= 20_000 and plot_module.PLOT_MAX_EPISODES >= 10_000
