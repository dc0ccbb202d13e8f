"""No broker: worker, produce and tail stop at once with one line naming the bootstrap servers and how to
start the local broker."""

from __future__ import annotations

import pytest
from streamxai.cli import main
from streamxai.kafka import config as kafka_config
from streamxai.local.ports import free_port


@pytest.mark.parametrize("argv", [["worker", "--set", "features=a,b"], ["produce", "demo", "--n", "5"],
                                  ["tail", "predictions"]])
def test_no_broker_is_one_clear_line(argv, capsys, monkeypatch):
    monkeypatch.setattr(kafka_config.check_broker, "__defaults__", (1.0,))  # the default wait is 8 s
    bootstrap = f"127.0.0.1:{free_port()}"
    rc = main([*argv, "--bootstrap", bootstrap])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2
    assert len(lines) == 1, err
    assert bootstrap in lines[0] and "streamxai broker start" in lines[0]
    assert "Traceback" not in err


def test_the_default_wait_is_under_ten_seconds():
    assert kafka_config.check_broker.__defaults__ == (kafka_config.BROKER_CHECK_TIMEOUT_S,)
    assert kafka_config.BROKER_CHECK_TIMEOUT_S < 10


def test_produce_refuses_a_stream_id_the_workers_would_refuse(monkeypatch):
    # `streamxai produce --stream-id "my stream"` sent events that all became dead letters
    from streamxai.kafka import io as kafka_io
    from streamxai.local.demo_stream import agrawal_events
    from streamxai.schemas import SchemaMismatch
    from streamxai.settings import Settings

    sent = []
    monkeypatch.setattr(kafka_io, "produce_raw", lambda s, topic, items: sent.extend(items) or len(sent))
    assert kafka_io.produce_events(Settings(), agrawal_events("ok-1", 3)) == 3
    with pytest.raises(SchemaMismatch, match="stream_id 'my stream' must be 1 to 128 characters"):
        kafka_io.produce_events(Settings(), agrawal_events("my stream", 3))
    assert len(sent) == 3  # nothing of the bad stream was sent
