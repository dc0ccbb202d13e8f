"""Connection settings for both Kafka clients: Faust (aiokafka) and confluent-kafka.
Secrets are revealed only here, into the client configuration, never into logs.

>>> from streamxai.settings import Settings, Secret
>>> cfg = confluent_config(Settings(security_protocol="SASL_SSL", sasl_username="u",
...                                 sasl_password=Secret("pw")))
>>> cfg["sasl.password"], cfg["security.protocol"]
('pw', 'SASL_SSL')
"""

from __future__ import annotations

import logging
import ssl
import time
from typing import Any, NamedTuple

from streamxai.schemas import ConfigError, StreamxaiError

from ..settings import Settings
from .tls_refusal import handshake_failure

__all__ = ["BrokerError", "confluent_config", "faust_credentials", "ensure_topics", "check_broker", "TOPIC_NAMES",
           "INPUT_TOPICS", "BROKER_CHECK_TIMEOUT_S", "retention_config", "replication", "Replication",
           "assignor_topic"]

#: how long a command waits for the broker before it gives up with a one-line error
BROKER_CHECK_TIMEOUT_S = 8.0
#: a record batch's headers on top of a dead letter's key and value (Kafka counts both)
_RECORD_OVERHEAD = 1024
#: how long a worker's start waits for the dead-letters topic's configs, in s (with two brokers
#: of three down the metadata may name a controller that never answers)
DESCRIBE_TIMEOUT_S = 10.0
log = logging.getLogger("streamxai")

class BrokerError(StreamxaiError, RuntimeError):
    """No broker answers, it refuses the credentials, or the local one cannot be set up, started or
    stopped; the message says what to do."""


#: labels: label events; arrivals: features and labels in the one order the model learns them;
#: drift-feed: each report's explanations as one record, what the change agent reads (streamxai.schemas.change_feed)
TOPIC_NAMES = ("features", "labels", "arrivals", "predictions", "explain-tasks", "explain-decisions", "explanations",
               "local-explanations", "drift-feed", "drift-events", "change-episodes", "dead-letters")
#: the team's inputs: created with the broker's defaults when missing, their retention is the team's
INPUT_TOPICS = ("features", "labels")


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
        cfg["ssl.endpoint.identification.algorithm"] = "https"  # the broker's certificate must name its host
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


def check_broker(s: Settings, timeout: float = BROKER_CHECK_TIMEOUT_S) -> None:
    """Return once a broker at ``bootstrap_servers`` answers; else raise a one-line
    :class:`~streamxai.kafka.config.BrokerError` within ``timeout`` s saying what to do.

    >>> from streamxai.local.ports import free_port
    >>> check_broker(Settings(bootstrap_servers=f"127.0.0.1:{free_port()}"), timeout=0.5)
    Traceback (most recent call last):
    ...
    streamxai.kafka.config.BrokerError: no Kafka broker answered at 127.0.0.1:... within 0.5 s (...); start the local one with `streamxai broker start`, or set bootstrap_servers (--bootstrap, STREAMXAI_BOOTSTRAP_SERVERS) to yours
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    # log_level 0: the client's per-retry lines would bury the one that matters. A refused login
    # or TLS handshake reaches error_cb (served by poll), while list_topics only sees a lost
    # connection: ask in short rounds so wrong credentials are reported at once.
    refused: list[KafkaError] = []
    handshakes: list[KafkaError] = []
    auth_codes = (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)

    def on_error(err: KafkaError) -> None:
        if err.code() in auth_codes:
            refused.append(err)
        elif err.code() == KafkaError._SSL or "SSL routines::" in err.str():
            # (a TLS 1.3 server's refusal of the client's certificate arrives after the
            # handshake, as a transport error on the first request)
            handshakes.append(err)

    admin = AdminClient(confluent_config(s, log_level=0, error_cb=on_error))
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            return
        except KafkaException as e:
            admin.poll(0)
            if handshakes:
                raise BrokerError(handshake_failure(s, handshakes[0].str())) from None
            if refused:
                raise BrokerError(
                    f"the broker at {s.bootstrap_servers} refused the credentials of user {s.sasl_username!r} "
                    f"({refused[0].str()}); check sasl_username, sasl_password and sasl_mechanism") from None
            if time.monotonic() < deadline:
                continue
            err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
            what = err.str() if err is not None else str(e)
            raise BrokerError(
                f"no Kafka broker answered at {s.bootstrap_servers} within {timeout:g} s ({what}); start the local "
                "one with `streamxai broker start`, or set bootstrap_servers (--bootstrap, "
                "STREAMXAI_BOOTSTRAP_SERVERS) to yours") from None


def ensure_topics(s: Settings, timeout: float = 30.0) -> list[str]:
    """Check the broker (:func:`check_broker`), then create the pipeline's topics if missing, the
    internal ones (all but :data:`INPUT_TOPICS`) with explicit retention (:func:`retention_config`);
    returns the names created."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    check_broker(s)
    admin = AdminClient(confluent_config(s, log_level=3))
    meta = admin.list_topics(timeout=timeout).topics
    existing = set(meta)
    names = list(TOPIC_NAMES)
    inputs = {s.topic(n) for n in INPUT_TOPICS}
    if any(src.kind == "labels" for src in s.source_specs.values()):
        names.append("event-index")  # where a labels source's labels meet their events (handlers.join)
    # explain groups (and their recorded decisions) are placed by partition number
    for placed in (s.topic("explain-tasks"), s.topic("explain-decisions")):
        if placed in meta and len(meta[placed].partitions) != s.partitions:
            raise ConfigError(
                f"topic {placed} has {len(meta[placed].partitions)} partitions but the setting partitions is "
                f"{s.partitions}; explain groups are placed by partition number, so set partitions="
                f"{len(meta[placed].partitions)} (or use a new topic_prefix)"
            )
    missing = [s.topic(n) for n in names if s.topic(n) not in existing]
    if assignor_topic(s) not in existing:
        missing.append(assignor_topic(s))
    new = []
    if missing:  # the brokers are counted only for topics to create: a worker restarts with a broker down
        rep = replication(s, len(admin.list_topics(timeout=timeout).brokers))
        in_sync = {"min.insync.replicas": str(rep.min_insync)}
        new = [NewTopic(t, num_partitions=1 if t == assignor_topic(s) else s.partitions, replication_factor=rep.factor,
                        config=in_sync | ({} if t in inputs or t == assignor_topic(s) else retention_config(s)))
               for t in missing]
    for _topic, fut in (admin.create_topics(new, operation_timeout=timeout).items() if new else ()):
        try:
            fut.result()
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise
    _check_dead_letter_limit(s, admin, timeout)
    return [t.topic for t in new]


class Replication(NamedTuple):
    """How the topics a worker creates are replicated."""

    factor: int
    min_insync: int


def replication(s: Settings, brokers: int) -> Replication:
    """The replication factor and ``min.insync.replicas`` of the topics the worker creates on a
    cluster of ``brokers``: the settings' where given, else 3 replicas (or one per broker if
    fewer) with one less in sync, at least 1, so one broker of three may be down.

    >>> replication(Settings(), 3), replication(Settings(), 1), replication(Settings(), 5)
    (Replication(factor=3, min_insync=2), Replication(factor=1, min_insync=1), Replication(factor=3, min_insync=2))
    >>> replication(Settings(replication_factor=2, min_insync_replicas=2), 3)
    Replication(factor=2, min_insync=2)
    """
    factor = s.replication_factor or max(1, min(3, brokers))
    if brokers and factor > brokers:
        raise ConfigError(f"setting replication_factor={factor} needs at least {factor} brokers; the cluster at "
                          f"{s.bootstrap_servers} has {brokers} (set replication_factor={brokers}, or 0 for what it allows)")
    return Replication(factor, min(factor, s.min_insync_replicas) if s.min_insync_replicas else max(1, factor - 1))


def assignor_topic(s: Settings) -> str:
    """The topic of the consumer group's assignor that Faust names for the app. :func:`ensure_topics`
    creates it with the others: Faust's own request fails, and stops the worker, while the
    cluster has no controller quorum.

    >>> assignor_topic(Settings(app_id="fraud"))
    'fraud-__assignor-__leader'
    """
    return f"{s.app_id}-__assignor-__leader"


def retention_config(s: Settings) -> dict[str, str]:
    """The topic configs of an internal topic: its retention (``internal_retention_ms``,
    ``internal_retention_bytes``), explicit so that it does not depend on the broker's defaults.

    >>> retention_config(Settings(internal_retention_ms=-1))
    {'cleanup.policy': 'delete', 'retention.ms': '-1', 'retention.bytes': '-1'}
    """
    return {"cleanup.policy": "delete", "retention.ms": str(s.internal_retention_ms),
            "retention.bytes": str(s.internal_retention_bytes)}


def _check_dead_letter_limit(s: Settings, admin: Any, timeout: float) -> None:
    """A dead letter must fit the dead-letters topic: compare ``max_dead_letter_bytes`` with the
    topic's ``max.message.bytes`` (skipped if the principal may not describe configs, and with a
    warning if no broker answers within :data:`DESCRIBE_TIMEOUT_S`: the worker starts all the same)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource

    topic = s.topic("dead-letters")
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    try:
        limit = int(admin.describe_configs([res])[res].result(timeout=min(timeout, DESCRIBE_TIMEOUT_S))
                    ["max.message.bytes"].value)
    except TimeoutError:
        log.warning("max_dead_letter_bytes not checked against the max.message.bytes of topic %s: the cluster did not "
                    "describe its configs within %g s (its controller may be down); the worker starts all the same",
                    topic, min(timeout, DESCRIBE_TIMEOUT_S))
        return
    except (KafkaException, KeyError, ValueError, TypeError):
        return
    if s.max_dead_letter_bytes + _RECORD_OVERHEAD > limit:
        raise ConfigError(
            f"topic {topic} accepts messages up to {limit} bytes (max.message.bytes) but max_dead_letter_bytes "
            f"is {s.max_dead_letter_bytes}; set max_dead_letter_bytes to at most {limit - _RECORD_OVERHEAD}")
