"""Connection settings for both Kafka clients: Faust (aiokafka) and confluent-kafka.

Secrets are revealed only here, into the client configuration, never into logs.

>>> from pipeline.settings import Settings, Secret
>>> cfg = confluent_config(Settings(security_protocol="SASL_SSL", sasl_username="u",
...                                 sasl_password=Secret("pw")))
>>> cfg["sasl.password"], cfg["security.protocol"]
('pw', 'SASL_SSL')
"""

from __future__ import annotations

import ssl
from typing import Any

from schemas import ConfigError

from .settings import Settings

__all__ = ["confluent_config", "faust_credentials", "ensure_topics", "TOPIC_NAMES"]

TOPIC_NAMES = (
    "features", "predictions", "explain-tasks", "explanations", "drift-events", "change-episodes", "dead-letters",
)


def confluent_config(s: Settings, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"bootstrap.servers": s.bootstrap_servers, "security.protocol": s.security_protocol}
    if s.security_protocol.startswith("SASL"):
        cfg.update({
            "sasl.mechanism": s.sasl_mechanism,
            "sasl.username": s.sasl_username,
            "sasl.password": s.sasl_password.reveal(),
        })
    if s.security_protocol.endswith("SSL"):
        for key, val in (("ssl.ca.location", s.ssl_cafile), ("ssl.certificate.location", s.ssl_certfile),
                         ("ssl.key.location", s.ssl_keyfile)):
            if val:
                cfg[key] = val
        if s.ssl_key_password.reveal():
            cfg["ssl.key.password"] = s.ssl_key_password.reveal()
    cfg.update(extra)
    return cfg


def _ssl_context(s: Settings) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=s.ssl_cafile or None)
    if s.ssl_certfile:
        ctx.load_cert_chain(s.ssl_certfile, s.ssl_keyfile or None, s.ssl_key_password.reveal() or None)
    return ctx


def faust_credentials(s: Settings) -> Any:
    """``broker_credentials`` for Faust, or None for PLAINTEXT."""
    import faust

    proto = s.security_protocol
    if proto == "PLAINTEXT":
        return None
    if proto == "SSL":
        return faust.SSLCredentials(_ssl_context(s))
    return faust.SASLCredentials(
        username=s.sasl_username,
        password=s.sasl_password.reveal(),
        mechanism=s.sasl_mechanism,
        ssl_context=_ssl_context(s) if proto == "SASL_SSL" else None,
    )


def ensure_topics(s: Settings, timeout: float = 30.0) -> list[str]:
    """Create the pipeline's topics if missing; returns the names created."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(confluent_config(s))
    meta = admin.list_topics(timeout=timeout).topics
    existing = set(meta)
    wanted = [s.topic(n) for n in TOPIC_NAMES]
    tasks = s.topic("explain-tasks")
    if tasks in meta and len(meta[tasks].partitions) != s.partitions:
        raise ConfigError(
            f"topic {tasks} has {len(meta[tasks].partitions)} partitions but the setting partitions is "
            f"{s.partitions}; explain groups are placed by partition number, so set partitions="
            f"{len(meta[tasks].partitions)} (or use a new topic_prefix)"
        )
    new = [NewTopic(t, num_partitions=s.partitions, replication_factor=s.replication_factor)
           for t in wanted if t not in existing]
    if not new:
        return []
    for _topic, fut in admin.create_topics(new, operation_timeout=timeout).items():
        try:
            fut.result()
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise
    return [t.topic for t in new]
