"""Which broker the demo uses when the local one already runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamxai.local import demo
from streamxai.local.broker import BrokerStatus, LocalBroker
from streamxai.schemas import ConfigError
from streamxai.settings import Settings


def test_the_demo_names_the_port_the_local_broker_runs_on(monkeypatch, capsys):
    """With the local broker on another port, ``streamxai demo`` says where it runs, not "no broker answered"."""
    running = BrokerStatus(True, True, 4242, "127.0.0.1:19396", Path("/d"), Path("/d/broker.log"))
    monkeypatch.setattr(demo, "_answers", lambda s: False)
    monkeypatch.setattr(LocalBroker, "status", lambda self: running)

    def start(self, timeout=90.0):
        raise AssertionError("the demo started (or waited for) a broker while the local one runs elsewhere")

    monkeypatch.setattr(LocalBroker, "start", start)
    with pytest.raises(ConfigError, match=r"runs on 127\.0\.0\.1:19396, not on 127\.0\.0\.1:9092.*--bootstrap "
                                          r"127\.0\.0\.1:19396"):
        demo._local_broker(Settings(bootstrap_servers="127.0.0.1:9092"))
