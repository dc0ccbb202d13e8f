"""The terminal live view (the demo's) shows levels as the plot and dashboard do (markers.level_text):
huge levels compact (6.34B), small ones with their decimals."""

from __future__ import annotations

import io

from streamxai.kafka.io import Record
from streamxai.local.live_view import LiveView, episode_lines
from streamxai.local.output_reader import parse_episode
from streamxai.schemas import Explanation, dumps

BIG, BIGGER = 6342689766.11, 730973117446.70


def test_the_live_view_shows_huge_levels_compact_as_the_plot_does():
    out = io.StringIO()
    view = LiveView(["x0", "x1"], "p.", out=out)
    view.add(Record("p.explanations", 0, 0, b"s", dumps(Explanation("s", "ipfi", "x0", BIG, 10, 10, 10, 10,
                                                                    stderr=BIG / 100))))
    view.add(Record("p.explanations", 0, 1, b"s", dumps(Explanation("s", "ipfi", "x1", 0.25, 10, 10, 10, 10))))
    view.add(Record("p.drift-events", 0, 0, b"s", b'{"schema": "drift_event/v3", "stream_id": "s",'
                    b' "explainer": "ipfi", "feature": "x0", "seq": 70, "cut_seq": 50, "position": 70, "cut_position": 50,'
                    b' "level_before": 6342689766.11, "level_after": 730973117446.70}'))
    view.render(force=True)
    text = out.getvalue()
    assert "6.34B -> 731B" in text and "6342689766" not in text, text
    assert "0.2500" in text  # a small level keeps its four decimals
    top = next(line for line in view.summary().splitlines() if "top ipfi" in line)
    assert top.strip() == "top ipfi : x0=6.34B±124M, x1=0.250", top
    ep = parse_episode({"first_seq": 80, "cut_seq": 50, "loss_before": 2.5e13, "loss_after": 0.5,
                        "changes": [{"explainer": "ipfi", "feature": "x0", "level_before": BIG, "level_after": BIGGER,
                                     "relative_effect": 0.9, "cut_seq": 50}]})
    lines = episode_lines(ep)
    assert lines[0].endswith("model loss 25T -> 0.500"), lines
    assert lines[1].split() == ["ipfi/x0", "6.34B", "->", "731B"], lines
