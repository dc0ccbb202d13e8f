"""The demo's summary shows every published value with the half-width of its 95 % interval."""

from __future__ import annotations

import io

from streamxai.kafka.io import Record
from streamxai.local.live_view import LiveView
from streamxai.schemas import Explanation, dumps


def test_summary_shows_values_with_bounds():
    view = LiveView(["a", "b"], "p.", out=io.StringIO())
    msgs = [
        Explanation("s", "ipfi", "a", 0.5, 10, 10, 10, 10, stderr=0.01),
        Explanation("s", "ipfi", "b", 0.1, 10, 10, 10, 10, stderr=None),  # no bound published
    ]
    for i, m in enumerate(msgs):
        view.add(Record("p.explanations", 0, i, b"k", dumps(m)))
    line = next(line for line in view.summary().splitlines() if "top ipfi" in line)
    assert line.strip() == "top ipfi : a=0.500±0.020, b=0.100"
