"""Plain producer and consumer helpers (confluent-kafka) for the CLI, the demo and tests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from streamxai.schemas import FeatureEvent, LabelEvent, dumps
from streamxai.schemas.features import check_stream_id

from ..settings import Settings
from .config import check_broker, confluent_config

#: how long a reader waits for its consumer group's assignment before its idle time counts anyway
JOIN_WAIT_S = 60.0

__all__ = ["produce_events", "produce_raw", "consume", "Record"]


#: confluent_kafka's timestamp types by number, named as Kafka names them
TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}


@dataclass(frozen=True, slots=True)
class Record:
    """A record as read: where it is, its key and value, and its Kafka timestamp (ms since the
    epoch) with its type, ``CreateTime`` or ``LogAppendTime`` (None where the record has none)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None = None
    timestamp_type: str | None = None


def produce_raw(s: Settings, topic: str, items: Iterable[tuple[bytes | None, bytes | None]
                                                          | tuple[str, bytes | None, bytes | None]],
                pause: Callable[[int], None] | None = None, every: int = 0,
                first_delivered: Callable[[], None] | None = None) -> int:
    """Send ``(key, value)`` pairs to ``topic`` (full name), and ``(topic, key, value)`` triples to
    theirs, in order; returns how many were delivered. With ``pause``, every ``every`` messages
    are flushed and ``pause(sent so far)`` is called. ``first_delivered()`` is called once the
    broker has acknowledged the first message (a benchmark's clock starts there)."""
    from confluent_kafka import Producer

    # log_level 3: errors only; a fresh broker's "coordinator load in progress" retries are not news
    p = Producer(confluent_config(s, **{"linger.ms": 20, "enable.idempotence": True, "log_level": 3}))
    errors: list[str] = []

    def on_delivery(err, msg):  # noqa: ANN001
        nonlocal first_delivered
        if err is not None:
            errors.append(str(err))
        elif first_delivered is not None:
            first_delivered, call = None, first_delivered
            call()

    n = 0
    topics = {topic}
    for item in items:
        to, key, value = (topic, *item) if len(item) == 2 else item
        topics.add(to)
        while True:
            try:
                p.produce(to, value=value, key=key, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
        n += 1
        p.poll(0)
        if pause is not None and every and n % every == 0:
            p.flush(60)
            pause(n)
    remaining = p.flush(60)
    if remaining or errors:
        raise RuntimeError(f"{remaining} messages undelivered to {sorted(topics)}; first error: {errors[:1]}")
    return n


def produce_events(s: Settings, events: Iterable[FeatureEvent | LabelEvent], rate: float | None = None,
                   pause: Callable[[int], None] | None = None, every: int = 0,
                   first_delivered: Callable[[], None] | None = None) -> int:
    """Send feature events to the features topic and label events to the labels topic, in the
    given order, keyed by stream_id, at most ``rate`` per second if given (and ``pause(n)``
    after every ``every`` messages, once they are delivered); a stream id the workers would
    refuse raises :class:`~streamxai.schemas.errors.SchemaMismatch` before anything is sent for that stream;
    ``first_delivered`` as :func:`produce_raw` takes it."""
    features, labels = s.topic("features"), s.topic("labels")
    start = time.monotonic()

    checked: set[str] = set()

    def items() -> Iterator[tuple[bytes, bytes] | tuple[str, bytes, bytes]]:
        for i, ev in enumerate(events):
            if ev.stream_id not in checked:  # a bad id would turn every event into a dead letter
                check_stream_id(ev.stream_id, where="produce")
                checked.add(ev.stream_id)
            if rate:
                ahead = i / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
            if isinstance(ev, LabelEvent):
                yield labels, ev.stream_id.encode(), dumps(ev)
            else:
                yield ev.stream_id.encode(), dumps(ev)

    extra = {"pause": pause, "every": every} if pause else {}
    return produce_raw(s, features, items(), **extra, **({"first_delivered": first_delivered} if first_delivered else {}))


def consume(
    s: Settings,
    topics: list[str],
    *,
    group: str | None = None,
    from_beginning: bool = True,
    idle_timeout: float | None = None,
    poll: float = 0.2,
) -> Iterator[Record]:
    """Yield records of ``topics`` (full names) until ``idle_timeout`` s pass with none (None: forever).

    The idle time counts once the consumer has read to the end of every partition it was
    assigned (or after :data:`JOIN_WAIT_S` without an assignment), since joining a group can take
    longer than the idle time. Without a reachable broker it raises
    :class:`~streamxai.kafka.config.BrokerError` on the first ``next()``."""
    from confluent_kafka import Consumer, KafkaError

    check_broker(s)
    c = Consumer(confluent_config(s, **{
        "log_level": 3,
        "group.id": group or f"streamxai-reader-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest" if from_beginning else "latest",
        "enable.auto.commit": group is not None,
        "enable.partition.eof": True,
    }))
    assigned: set[tuple[str, int]] = set()
    at_end: set[tuple[str, int]] = set()
    joined: list[bool] = []

    def on_assign(consumer: Any, partitions: list) -> None:
        joined.append(True)
        assigned.update((p.topic, p.partition) for p in partitions)

    def on_revoke(consumer: Any, partitions: list) -> None:
        for p in partitions:
            assigned.discard((p.topic, p.partition))
            at_end.discard((p.topic, p.partition))

    c.subscribe(topics, on_assign=on_assign, on_revoke=on_revoke)
    start = last = time.monotonic()
    try:
        while True:
            msg = c.poll(poll)
            if msg is None:
                now = time.monotonic()
                caught_up = (joined and at_end >= assigned) or now - start > JOIN_WAIT_S
                if idle_timeout is not None and caught_up and now - last > idle_timeout:
                    return
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add((msg.topic(), msg.partition()))
                    continue
                if msg.error().code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue
                raise RuntimeError(f"consuming {topics}: {msg.error()}")
            at_end.discard((msg.topic(), msg.partition()))
            last = time.monotonic()
            kind, ms = msg.timestamp()
            stamped = kind in TIMESTAMP_TYPES
            yield Record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                         ms if stamped else None, TIMESTAMP_TYPES.get(kind))
    finally:
        c.close()
