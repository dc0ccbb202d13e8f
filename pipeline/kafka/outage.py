"""One log line when the broker becomes unreachable and one when it is back, not one per retry.

>>> import logging
>>> t = [0.0]
>>> f = OutageLogFilter(quiet_s=10, clock=lambda: t[0])
>>> def rec(msg):
...     return logging.LogRecord("aiokafka.conn", logging.ERROR, "", 0, msg, None, None)
>>> [f.filter(rec("Unable connect to node with id 1: [Errno 111] Connect call failed")) for t[0] in (1, 2, 3)]
[True, False, False]
>>> f.filter(rec("Unexpected error in fetcher routine"))
True
>>> t[0] = 14.0; f.check()
'Kafka broker reachable again after ~2 s without connection errors (2 client log lines about it suppressed)'
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

__all__ = ["OutageLogFilter", "RepeatLogFilter", "SaslLogFilter", "TruncateLogFilter", "install_outage_filter"]

log = logging.getLogger("streamxai")

# what aiokafka logs while it cannot reach the broker (checked against its 0.12 messages)
_CONNECTION = re.compile(
    r"Unable connect to node|Unable to update metadata|NodeNotReadyError|KafkaConnectionError|"
    r"Connection at .* closed|Connect call failed|coordinator dead|Coordinator Request failed|"
    r"Heartbeat (?:send request failed|session expired)|Error sending HeartbeatRequest|"
    r"not started or not valid|RequestTimedOutError|Failed fetch messages from"
)


# the broker answered, but the group's coordinator is not there yet: a new broker creates its
# offsets topic when the first group asks (a few seconds), a cluster moves it after a restart
_COORDINATOR_PENDING = re.compile(r"CoordinatorNotAvailable")
# the client giving up on the coordinator it found: on a new broker, right after that wait (the
# offsets topic's leader moves as it is created); within an outage, one of its lines
_COORDINATOR_DEAD = re.compile(r"Marking the coordinator dead|not started or not valid")
# a heartbeat the broker answered with an error (the group rebalancing as a worker joins or
# leaves, an old generation) is aiokafka's own WARNING, not an outage: it passes as it is


class OutageLogFilter(logging.Filter):
    """Collapses the Kafka client's connection errors into an outage start and end line; a
    group coordinator that is not available yet is one WARNING line a minute, not an outage.

    During a broker outage aiokafka logs dozens of ERROR lines a second. The first is let through
    as the start of an outage, the rest swallowed; once none came for ``quiet_s`` seconds, the
    end is logged with the outage's length and the number of lines swallowed.
    """

    def __init__(self, quiet_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.quiet_s = quiet_s
        self.clock = clock
        self._lock = threading.Lock()
        self._started: float | None = None
        self._last = 0.0
        self._suppressed = 0
        self._coordinator_said: float | None = None

    @property
    def in_outage(self) -> bool:
        return self._started is not None

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.levelno >= logging.WARNING and (_COORDINATOR_PENDING.search(text) or (
                self._started is None and _COORDINATOR_DEAD.search(text))):
            return self._coordinator_pending(record, text)
        if record.levelno < logging.WARNING or not _CONNECTION.search(text):
            return True
        with self._lock:
            now = self.clock()
            self._last = now
            if self._started is None:
                self._started = now
                self._suppressed = 0
                record.msg = "Kafka broker unreachable (%s); retrying, further connection errors are not logged until it is back"
                record.args = (text[:300],)
                return True
            self._suppressed += 1
            return False

    def _coordinator_pending(self, record: logging.LogRecord, text: str) -> bool:
        with self._lock:
            now = self.clock()
            if self._coordinator_said is not None and now - self._coordinator_said < 60.0:
                return False
            self._coordinator_said = now
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.msg = ("Kafka's group coordinator is not available yet (%s): a new broker creates its offsets "
                      "topic when the first consumer group asks; retrying (said once a minute)")
        record.args = (text[:200],)
        return True

    def check(self) -> str | None:
        """Log and return the end-of-outage line if ``quiet_s`` passed without a connection error."""
        with self._lock:
            if self._started is None or self.clock() - self._last < self.quiet_s:
                return None
            line = (f"Kafka broker reachable again after ~{self._last - self._started:.0f} s without connection "
                    f"errors ({self._suppressed} client log lines about it suppressed)")
            self._started = None
        log.warning(line)
        return line


class RepeatLogFilter(logging.Filter):
    """Lets a record matching ``pattern`` through once per ``every_s`` seconds per distinct text
    (aiokafka logs a deleted topic's "not found in cluster metadata" thousands of times a second).

    >>> t = [0.0]
    >>> f = RepeatLogFilter("not found in cluster metadata", every_s=60, clock=lambda: t[0])
    >>> rec = lambda msg: logging.LogRecord("aiokafka.cluster", logging.ERROR, "", 0, msg, None, None)
    >>> [f.filter(rec("Topic t not found in cluster metadata")) for t[0] in (0, 1, 59, 61)]
    [True, False, False, True]
    >>> f.filter(rec("Topic u not found in cluster metadata")), f.filter(rec("something else"))
    (True, True)
    """

    def __init__(self, pattern: str, every_s: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 max_texts: int = 1000):
        super().__init__()
        self.pattern = re.compile(pattern)
        self.every_s = every_s
        self.clock = clock
        self.max_texts = max_texts
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if not self.pattern.search(text):
            return True
        with self._lock:
            now = self.clock()
            last = self._last.get(text)
            if last is not None and now - last < self.every_s:
                return False
            if len(self._last) >= self.max_texts:
                self._last.clear()
            self._last[text] = now
            return True


class TruncateLogFilter(logging.Filter):
    """Cuts a record's text to ``limit`` characters. Faust logs a failed send with the whole
    pending message, payload included (up to a megabyte on one line).

    >>> rec = logging.LogRecord("faust.topics", logging.WARNING, "", 0, "error %s", ("x" * 5000,), None)
    >>> TruncateLogFilter(limit=20).filter(rec), rec.getMessage()
    (True, 'error xxxxxxxxxxxxxx... (5006 characters)')
    """

    def __init__(self, limit: int = 1000):
        super().__init__()
        self.limit = limit

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if len(text) > self.limit:
            record.msg, record.args = f"{text[:self.limit]}... ({len(text)} characters)", None
        return True


class SaslLogFilter(logging.Filter):
    """Logs aiokafka's SASL authentication requests and responses without their bytes.

    aiokafka logs every request and response at DEBUG; a SASL exchange's bytes are the password
    (PLAIN) or what it can be guessed from (SCRAM), so they are replaced by their length.

    >>> from aiokafka.protocol.admin import SaslAuthenticateRequest_v1
    >>> r = logging.LogRecord("aiokafka.conn", logging.DEBUG, "", 0, "Request to %s:%d %d: %s",
    ...                       ("k", 9092, 3, SaslAuthenticateRequest_v1(b"\\x00u\\x00pw")), None)
    >>> SaslLogFilter().filter(r), r.getMessage()
    (True, 'Request to k:9092 3: SaslAuthenticateRequest_v1(sasl_auth_bytes=<5 bytes, not logged>)')
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(type(a).__name__.startswith("SaslAuthenticate") for a in args):
            record.args = tuple(_without_sasl_bytes(a) for a in args)
        return True


def _without_sasl_bytes(arg: object) -> object:
    if not type(arg).__name__.startswith("SaslAuthenticate"):
        return arg
    data = getattr(arg, "sasl_auth_bytes", None) or b""
    return f"{type(arg).__name__}(sasl_auth_bytes=<{len(data)} bytes, not logged>)"


def install_outage_filter(quiet_s: float = 10.0, interval_s: float = 2.0) -> OutageLogFilter:
    """Attach the filters of this module to aiokafka's and Faust's loggers and check for the end
    of an outage every ``interval_s`` seconds on a daemon thread. Call once per worker process."""
    import aiokafka  # noqa: F401 - import the client's modules so their loggers exist
    import aiokafka.client  # noqa: F401
    import aiokafka.cluster  # noqa: F401
    import aiokafka.conn  # noqa: F401
    import aiokafka.consumer.fetcher  # noqa: F401
    import aiokafka.consumer.group_coordinator  # noqa: F401
    import aiokafka.producer.sender  # noqa: F401
    import faust.topics  # noqa: F401

    f = OutageLogFilter(quiet_s)
    names = [n for n in logging.root.manager.loggerDict if n == "aiokafka" or n.startswith("aiokafka.")]
    repeats = RepeatLogFilter(r"not found in cluster metadata|UnknownTopicOrPartition")
    for name in names:
        logging.getLogger(name).addFilter(f)
        logging.getLogger(name).addFilter(repeats)
    logging.getLogger("faust.topics").addFilter(TruncateLogFilter())
    logging.getLogger("aiokafka.conn").addFilter(SaslLogFilter())

    def watch() -> None:
        while True:
            time.sleep(interval_s)
            f.check()

    threading.Thread(target=watch, name="streamxai-outage-log", daemon=True).start()
    return f
