"""The demo stops every process it started, even one interrupted while it was starting."""

from __future__ import annotations

import pytest
from streamxai.local import demo
from streamxai.settings import Settings


class _Proc:
    """A stand-in for the dashboard's process (nothing is started)."""

    def poll(self):
        return None


def test_a_dashboard_interrupted_while_it_starts_is_already_among_the_demos_processes(monkeypatch, tmp_path):
    # a SIGTERM between the dashboard's spawn and `_start_dashboard`'s return still stops the dashboard
    import streamxai.local.dashboard as dashboard

    proc = _Proc()
    monkeypatch.setattr(dashboard, "spawn_dashboard", lambda *a, **k: proc)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(dashboard, "wait_for_dashboard", interrupted)
    started: list = []
    with pytest.raises(KeyboardInterrupt):
        demo._start_dashboard(Settings(), 0, tmp_path, started)
    assert started == [proc]
