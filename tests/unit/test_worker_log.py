"""What a worker tells its user when it starts."""

from __future__ import annotations

from pipeline.settings import Settings
from pipeline.worker import dashboard_hint


def test_the_dashboard_hint_names_the_workers_broker_and_topics():
    """Found running the demo: its worker's log said "see the explanations live with `streamxai
    dashboard`", which on the demo's topics (``streamxai.demo-<run>.``) shows no stream."""
    s = Settings(bootstrap_servers="127.0.0.1:27824", topic_prefix="streamxai.demo-c613d0.")
    assert dashboard_hint(s) == "streamxai dashboard --bootstrap 127.0.0.1:27824 --set topic_prefix=streamxai.demo-c613d0."
    assert dashboard_hint(Settings()) == "streamxai dashboard"  # the defaults need no options
    assert dashboard_hint(Settings(topic_prefix="a b.")) == "streamxai dashboard --set 'topic_prefix=a b.'"
