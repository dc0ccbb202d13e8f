"""Notice that a worker's topics were deleted while it runs.

>>> watch = TopicWatch(["a", "b"], lambda: {"a"})
>>> watch.check(), watch.check()  # missing twice in a row: a deleted topic, not a slow metadata update
([], ['b'])
>>> TopicWatch(["a"], lambda: None).check()  # the broker did not answer: nothing is known to be missing
[]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..settings import Settings
from .checkpoint_topic import CHECKPOINT_TOPIC
from .config import TOPIC_NAMES, confluent_config

__all__ = ["TopicWatch", "topic_watch"]


class TopicWatch:
    """``check()`` → the ``topics`` missing from ``existing()`` on this and the previous check.

    ``existing`` returns the set of topic names on the broker, or None when it cannot tell.
    Without its topics aiokafka refreshes metadata in a tight loop, logging thousands of lines a
    second, so the worker stops with one line when they are missing on two checks in a row.
    """

    def __init__(self, topics: Iterable[str], existing: Callable[[], set[str] | None]):
        self.topics = list(topics)
        self.existing = existing
        self._missing_before: set[str] = set()

    def check(self) -> list[str]:
        names = self.existing()
        missing = set() if names is None else {t for t in self.topics if t not in names}
        confirmed = sorted(missing & self._missing_before)
        self._missing_before = missing
        return confirmed


def topic_watch(s: Settings, timeout: float = 5.0) -> TopicWatch:
    """A :class:`TopicWatch` over the topics a worker creates (``ensure_topics``), asking the
    broker with its own admin client."""
    from confluent_kafka.admin import AdminClient

    admin: Any = None

    def existing() -> set[str] | None:
        nonlocal admin
        if admin is None:
            # log_level 0: during an outage librdkafka would print a connection error every 50 ms;
            # the outage log filter reports an outage once, from the worker's own clients
            admin = AdminClient(confluent_config(s, log_level=0))
        try:
            return set(admin.list_topics(timeout=timeout).topics)
        except Exception:  # no answer (an outage): nothing is known to be missing
            return None

    topics = [s.topic(n) for n in TOPIC_NAMES]
    if s.checkpoint_store == "kafka" and s.checkpoint_every:
        topics.append(s.topic(CHECKPOINT_TOPIC))
    return TopicWatch(topics, existing)
