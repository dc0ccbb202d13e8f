"""Whether a worker is about to run on the topics of a deployment an older version ran.

Since labels may come later, the model agent reads the ``arrivals`` topic (the intake's record
of features and labels), not ``features``. A worker of this version started on the topics of an
older deployment would create ``arrivals`` and start every stream's model afresh (its history
begins at the upgrade; the old model agent's checkpoints are of ``features``), while the
explainer groups go on from their checkpoints: replicas of models the model agent no longer
has. Such a deployment shows as committed offsets of the worker's consumer group on
``features`` with no ``arrivals`` message yet; a worker of this version, once it ran, has
forwarded every event it took from ``features`` to ``arrivals``.

>>> older_deployment_reason(Settings(app_id="shop"), {"streamxai.features": {0: 120}}, arrivals_messages=0)[:63]
'consumer group shop has read 120 events of streamxai.features ('
>>> older_deployment_reason(Settings(), {"streamxai.features": {0: 120}}, arrivals_messages=5) is None
True
>>> older_deployment_reason(Settings(), {}, arrivals_messages=0) is None   # a new deployment
True
"""

from __future__ import annotations

from ..settings import Settings
from .config import confluent_config

__all__ = ["older_deployment", "older_deployment_reason"]


def older_deployment_reason(s: Settings, committed: dict[str, dict[int, int]], arrivals_messages: int) -> str | None:
    """The line that stops a worker on an older deployment's topics (None: not one).
    ``committed``: the consumer group's committed offsets on ``features`` by partition;
    ``arrivals_messages``: how many messages the ``arrivals`` topic ever had (0: none, or no topic)."""
    taken = sum(committed.get(s.topic("features"), {}).values())
    if not taken or arrivals_messages:
        return None
    return (f"consumer group {s.app_id} has read {taken} events of {s.topic('features')} (committed offsets) but "
            f"{s.topic('arrivals')} has none: these topics were run by an older version of streamxai, whose "
            "model agent read features. This version's model agent reads arrivals, so every stream's model would "
            "start afresh while its explainers go on from their checkpoints. Start this version with a new "
            "app_id and topic_prefix (the streams start afresh, consistently; produce their events again), "
            "or keep running the older version on these topics")


def older_deployment(s: Settings, timeout: float = 10.0) -> str | None:
    """:func:`older_deployment_reason` for the deployment at ``bootstrap_servers`` (None also when
    it cannot tell: the worker's own broker check then says why)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    try:
        meta = AdminClient(confluent_config(s, log_level=0)).list_topics(timeout=timeout).topics
        features, arrivals = meta.get(s.topic("features")), meta.get(s.topic("arrivals"))
        if features is None:
            return None
        c = Consumer(confluent_config(s, **{"group.id": s.app_id, "enable.auto.commit": False, "log_level": 0}))
        try:
            parts = [TopicPartition(s.topic("features"), p) for p in features.partitions]
            committed = {tp.partition: tp.offset for tp in c.committed(parts, timeout=timeout) if tp.offset > 0}
            if not committed:
                return None
            seen = 0
            for p in (arrivals.partitions if arrivals is not None else ()):
                seen += c.get_watermark_offsets(TopicPartition(s.topic("arrivals"), p), timeout=timeout)[1]
        finally:
            c.close()
    except KafkaException:
        return None
    return older_deployment_reason(s, {s.topic("features"): committed}, seen)
