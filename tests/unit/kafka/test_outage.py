"""A broker outage is logged once when it starts and once when it ends, not once per
failed request of the kinds below (thousands of lines for an outage of half a minute)."""

from __future__ import annotations

import contextlib
import logging

from streamxai.kafka.outage import OutageLogFilter

# the client's lines during a measured 40 s outage, with how often each came
MEASURED = [
    (1491, "Unable connect to node with id 1: [Errno 111] Connect call failed ('127.0.0.1', 40123)"),
    (716, "Unable to update metadata from [1]"),
    (389, "Failed fetch messages from 1: NodeNotReadyError: Attempt to send a request to node which is not ready (node id 1)."),
    (385, "Group Coordinator Request failed: NodeNotReadyError: Attempt to send a request to node which is not ready (node id 1)."),
    (2, "Marking the coordinator dead (node 1)for group it-fc1f."),
    (1, "Failed fetch messages from 1: KafkaConnectionError: Connection at 127.0.0.1:40123 closed"),
    (1, "Heartbeat session expired - marking coordinator dead"),
    (1, "Heartbeat failed for group it-fc1f: coordinator (node 1) is either not started or not valid"),
]


@contextlib.contextmanager
def _client(f, name):
    """A client logger with ``f`` on it, and what it lets through."""
    client = logging.getLogger(name)
    client.propagate = False
    cap = _Capture()
    client.addHandler(cap)
    client.addFilter(f)
    try:
        yield client, cap.lines
    finally:
        client.removeHandler(cap)
        client.removeFilter(f)


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_an_outage_is_two_lines(caplog):
    t = [0.0]
    f = OutageLogFilter(quiet_s=10, clock=lambda: t[0])
    with _client(f, "test-outage.aiokafka") as (client, lines):
        i = 0
        for count, msg in MEASURED:
            for _ in range(count):
                t[0] = i * 40 / 2989
                i += 1
                client.error(msg)
                assert f.check() is None  # still failing: not over
        client.error("Unexpected error in fetcher routine")  # not about the connection: shown
        t[0] = 40 + 10
        with caplog.at_level(logging.WARNING, logger="streamxai"):
            end = f.check()
            assert f.check() is None  # the end is logged once
    assert len(lines) == 2
    assert lines[0].startswith("Kafka broker unreachable (Unable connect to node")
    assert lines[1] == "Unexpected error in fetcher routine"
    suppressed = sum(n for n, _ in MEASURED) - 1
    assert end is not None and f"({suppressed} client log lines" in end and end in caplog.text
    assert not f.in_outage


def test_a_new_brokers_group_coordinator_is_not_an_outage():
    """A new broker's GroupCoordinatorNotAvailable at a worker's first start is no outage: no ERROR, no "back"."""
    t = [0.0]
    f = OutageLogFilter(quiet_s=10, clock=lambda: t[0])
    with _client(f, "test-outage.aiokafka.coordinator") as (client, lines):
        for i in range(30):
            t[0] = i * 0.2
            client.error("Group Coordinator Request failed: [Error 15] GroupCoordinatorNotAvailableError")
        t[0] = 60.0
        assert f.check() is None  # no outage ended: none began
    assert not f.in_outage
    assert len(lines) == 1 and "unreachable" not in lines[0], lines
    assert "group coordinator" in lines[0] and "offsets topic" in lines[0]


def test_a_new_brokers_coordinator_marked_dead_after_the_wait_is_not_an_outage():
    """"Marking the coordinator dead" on a new broker after that wait is no outage either."""
    t = [0.0]
    f = OutageLogFilter(quiet_s=10, clock=lambda: t[0])
    with _client(f, "test-outage.aiokafka.coordinator-dead") as (client, lines):
        client.error("Group Coordinator Request failed: [Error 15] GroupCoordinatorNotAvailableError")
        t[0] = 0.2
        client.warning("Marking the coordinator dead (node 1)for group t4.")
        t[0] = 60.0
        assert f.check() is None  # no outage ended: none began
        assert not f.in_outage and len(lines) == 1 and "unreachable" not in lines[0], lines
        t[0] = 200.0  # a coordinator lost much later, alone: one line a minute, still no outage
        client.warning("Marking the coordinator dead (node 1)for group t4.")
        client.warning("Marking the coordinator dead (node 1)for group t4.")
    assert not f.in_outage and len(lines) == 2 and "unreachable" not in lines[1], lines


def test_a_heartbeat_the_broker_answered_during_a_rebalance_is_not_an_outage():
    """"Heartbeat failed ... because it is rebalancing" is the broker's answer, not an outage."""
    t = [0.0]
    f = OutageLogFilter(quiet_s=10, clock=lambda: t[0])
    answered = ["Heartbeat failed for group t4 because it is rebalancing",
                "Heartbeat failed for group t4: generation id is not  current.",
                "Heartbeat failed: local member_id was not recognized; resetting and re-joining group"]
    with _client(f, "test-outage.aiokafka.rebalance") as (client, lines):
        for i, msg in enumerate(answered):
            t[0] = i
            client.warning(msg)
        t[0] = 60.0
        assert f.check() is None
    assert lines == answered and not f.in_outage
