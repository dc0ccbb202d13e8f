"""Plain producer and consumer helpers (confluent-kafka) for the CLI, the demo and tests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from schemas import FeatureEvent, LabelEvent, dumps
from schemas.features import check_stream_id

from ..settings import Settings
from .config import check_broker, confluent_config

__all__ = ["produce_events", "produce_raw", "consume", "Record"]


@dataclass(frozen=True, slots=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def produce_raw(s: Settings, topic: str, items: Iterable[tuple[bytes | None, bytes | None]
                                                          | tuple[str, bytes | None, bytes | None]],
                pause: Callable[[int], None] | None = None, every: int = 0) -> int:
    """Send ``(key, value)`` pairs to ``topic`` (full name), and ``(topic, key, value)`` triples to
    theirs, in order; returns how many were delivered. With ``pause``, every ``every`` messages
    are flushed and ``pause(sent so far)`` is called (it may wait)."""
    from confluent_kafka import Producer

    # log_level 3: errors only; a fresh broker's "coordinator load in progress" retries are not news
    p = Producer(confluent_config(s, **{"linger.ms": 20, "enable.idempotence": True, "log_level": 3}))
    errors: list[str] = []

    def on_delivery(err, msg):  # noqa: ANN001
        if err is not None:
            errors.append(str(err))

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
                   pause: Callable[[int], None] | None = None, every: int = 0) -> int:
    """Send feature events to the features topic and label events to the labels topic, in the
    given order, keyed by stream_id, at most ``rate`` per second if given (and ``pause(n)``
    after every ``every`` messages, once they are delivered); a stream id the workers would
    refuse raises :class:`~schemas.errors.SchemaMismatch` before anything is sent for that stream."""
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

    return produce_raw(s, features, items(), **({"pause": pause, "every": every} if pause else {}))


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

    Without a reachable broker it raises :class:`~pipeline.kafka.config.BrokerError` on the first
    ``next()``, within :data:`~pipeline.kafka.config.BROKER_CHECK_TIMEOUT_S` seconds."""
    from confluent_kafka import Consumer, KafkaError

    check_broker(s)
    c = Consumer(confluent_config(s, **{
        "log_level": 3,
        "group.id": group or f"streamxai-reader-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest" if from_beginning else "latest",
        "enable.auto.commit": group is not None,
    }))
    c.subscribe(topics)
    last = time.monotonic()
    try:
        while True:
            msg = c.poll(poll)
            if msg is None:
                if idle_timeout is not None and time.monotonic() - last > idle_timeout:
                    return
                continue
            if msg.error():
                if msg.error().code() in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                    continue
                raise RuntimeError(f"consuming {topics}: {msg.error()}")
            last = time.monotonic()
            yield Record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value())
    finally:
        c.close()
