"""A port left in TIME-WAIT by a self-connected client (no process holds it) is not "in use by another
process": ``broker start`` waits for the kernel to free it (within 60 s)."""

from __future__ import annotations

import logging
import socket
import time
from types import SimpleNamespace

import pytest
from streamxai.local import ports
from streamxai.local.broker import BrokerError
from streamxai.local.ports import claim_port, free_port, port_holders


def _self_connected_time_wait() -> int:
    """A port held only by a TIME-WAIT socket, as a client that connected to itself leaves it."""
    for _ in range(50):
        port = free_port("127.0.0.1")
        c = socket.socket()
        try:
            c.bind(("127.0.0.1", port))  # where connect() would have put it by chance
            c.connect(("127.0.0.1", port))  # simultaneous open with itself
        except OSError:
            c.close()
            continue
        c.close()  # the closing side keeps the port in TIME-WAIT for 60 s
        return port
    pytest.skip("could not make a self-connected socket")


def test_a_port_held_only_by_time_wait_is_not_another_process(caplog):
    port = _self_connected_time_wait()
    assert port_holders(port) == {"TIME-WAIT"}
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="streamxai"), pytest.raises(BrokerError) as err:
        claim_port(port, "port", wait=0.5)  # the start waits up to 65 s; the test does not
    assert time.monotonic() - t0 >= 0.5
    msg = str(err.value)
    assert "another process" not in msg and "TIME-WAIT" in msg and "60 s" in msg, msg
    assert "waiting" in caplog.text


def test_a_listening_port_is_another_process_at_once(monkeypatch):
    slept = []  # what the claim waited, counted rather than timed (a loaded machine's wall clock varies)
    # the ports module's own clock, not the time module: every thread of the process calls
    # time.sleep (the outage-log watcher of an earlier test wakes every 2 s), and would count here
    monkeypatch.setattr(ports, "time", SimpleNamespace(sleep=slept.append, monotonic=time.monotonic))
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        assert "LISTEN" in port_holders(port)
        with pytest.raises(BrokerError, match="already in use by another process"):
            claim_port(port, "port", wait=5.0)
    assert slept == []  # no waiting for a listener


def test_a_free_port_is_claimed_at_once():
    port = free_port("127.0.0.1")
    assert port_holders(port) == set()
    claim_port(port, "port", wait=5.0)
