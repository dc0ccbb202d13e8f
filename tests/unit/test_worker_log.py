"""What a worker tells its user when it starts."""

from __future__ import annotations

from streamxai.settings import Settings
from streamxai.worker import dashboard_hint


def test_the_dashboard_hint_names_the_workers_broker_and_topics():
    """Found running the demo: its worker's log said "see the explanations live with `streamxai
    dashboard`", which on the demo's topics (``streamxai.demo-<run>.``) shows no stream."""
    s = Settings(bootstrap_servers="127.0.0.1:27824", topic_prefix="streamxai.demo-c613d0.")
    assert dashboard_hint(s) == "streamxai dashboard --bootstrap 127.0.0.1:27824 --set topic_prefix=streamxai.demo-c613d0."
    assert dashboard_hint(Settings()) == "streamxai dashboard"  # the defaults need no options
    assert dashboard_hint(Settings(topic_prefix="a b.")) == "streamxai dashboard --set 'topic_prefix=a b.'"


def test_a_worker_says_when_the_explainers_run_without_the_compiled_kernels(monkeypatch):
    """A worker without (current) compiled kernels says in its log that it runs the slower Python path."""
    import logging
    import sys
    import types

    from streamxai.worker import kernels_note

    assert kernels_note({"STREAMXAI_PURE_PYTHON": "1"}) == (
        logging.INFO, "the explainers' bookkeeping runs its pure-Python code: STREAMXAI_PURE_PYTHON is set")
    monkeypatch.setitem(sys.modules, "streamxai.core._kernels", None)  # an import of it fails: not built
    level, line = kernels_note({})
    assert level == logging.WARNING and "are not built for this Python" in line and "deploy/setup.sh" in line
    stale = types.ModuleType("streamxai.core._kernels")
    stale.linear_chain = lambda *args: None
    monkeypatch.setitem(sys.modules, "streamxai.core._kernels", stale)
    level, line = kernels_note({})
    assert level == logging.WARNING and "built from older source (it lacks fold_curves" in line, line
    from streamxai.core import kernels

    for f in kernels.FUNCTIONS:
        setattr(stale, f, None)
    assert kernels_note({}) is None  # the compiled kernels run: nothing to say
