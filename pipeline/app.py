"""The Faust app factory: topics, agents for the chosen roles, the metrics pages (JSON and Prometheus)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import faust
from streamxai.agents import install_change_agent, install_explainer_agent, install_intake_agent, install_model_agent
from streamxai.agents.join_agent import install_join_agent
from streamxai.schemas import ConfigError

from .handlers import (
    ChangeHandler,
    ExplainHandler,
    Handler,
    IntakeHandler,
    MessageHandler,
    ModelHandler,
    checkpoint_changed,
)
from .handlers.join import JoinHandler
from .kafka.assignor import DealtAssignor
from .kafka.checkpoint_seal import SealedStore, checkpoint_secret
from .kafka.checkpoint_topic import KafkaCheckpointStore, ensure_checkpoint_topic
from .kafka.checkpoints import FileCheckpointStore
from .kafka.committed_offsets import CommittedOffsets
from .kafka.config import TOPIC_NAMES, faust_credentials
from .kafka.faust_transport import (
    FETCH_MAX_PARTITION_BYTES,
    MAX_POLL_RECORDS,
    QuietMonitor,
    RawSchema,
    producer_batch_bytes,
    use_bounded_fetch_wait,
)
from .kafka.output_producer import OutputProducer
from .kafka.replay import PartitionHistory
from .memory_trim import MemoryTrim
from .metrics import Metrics
from .settings import Settings

__all__ = ["create_app", "checkpoint_store", "ROLES"]

ROLES = ("model", "explain", "change")
log = logging.getLogger("streamxai")


def checkpoint_store(
    settings: Settings, commits: CommittedOffsets | None = None, metrics: Metrics | None = None
) -> SealedStore | None:
    """The store a worker's handlers share (None when ``checkpoint_every`` is 0): files under
    ``state_dir/checkpoints``, or with ``checkpoint_store = "kafka"`` the compacted topic
    ``<prefix>checkpoints``. With ``commits`` each key keeps the newest checkpoint a commit
    covers beside its newest one. A key file that cannot be used is replaced (counted as
    ``checkpoint_keys_replaced``)."""
    if settings.checkpoint_every == 0:
        return None
    if settings.checkpoint_store == "kafka":
        if not settings.checkpoint_key.reveal():
            raise ConfigError("checkpoint_store = kafka needs checkpoint_key (the same on every worker, "
                              ">= 16 characters, e.g. `openssl rand -hex 32`), so a worker trusts what another wrote")
        ensure_checkpoint_topic(settings)
        return KafkaCheckpointStore(settings, settings.checkpoint_every, secret=settings.checkpoint_key.reveal().encode(),
                                    commits=commits)
    secret = checkpoint_secret(settings.checkpoint_key.reveal(), settings.state_dir,
                               on_replaced=(lambda: metrics.inc("checkpoint_keys_replaced")) if metrics else None)
    return FileCheckpointStore(Path(settings.state_dir) / "checkpoints", settings.checkpoint_every, secret=secret,
                               commits=commits)


#: the share of ``shutdown_timeout_s`` by which the checkpoints at shutdown end (the states not
#: written by then are replayed after a restart); the rest is for the flushes and closes
STOP_CHECKPOINTS_SHARE = 0.6

#: how old the consumer's cluster metadata may grow, in ms (create_app says why it is short)
METADATA_MAX_AGE_MS = 15_000


def create_app(settings: Settings, roles: tuple[str, ...] = ROLES, metrics: Metrics | None = None) -> faust.App:
    """Payloads are raw bytes owned by :mod:`schemas`; Faust never adds its own metadata."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown roles {sorted(unknown)}; choose from {ROLES}")
    metrics = metrics or Metrics()
    app = faust.App(
        settings.app_id,
        broker=[f"kafka://{h.strip()}" for h in settings.bootstrap_servers.split(",")],
        broker_credentials=faust_credentials(settings),
        value_serializer="raw",
        key_serializer="raw",
        store="memory://",
        autodiscover=False,
        topic_partitions=settings.partitions,
        topic_allow_declare=False,  # ensure_topics creates every topic, Faust's assignor's too
        # the consumer asks for the cluster's metadata at least this often (ms): aiokafka keeps
        # asking a broker that no longer leads a partition until this age passes
        consumer_metadata_max_age_ms=METADATA_MAX_AGE_MS,
        consumer_auto_offset_reset="earliest",
        # under max_live_streams the consumer's fetched bytes and parsed records are bounded too;
        # without, larger fetches keep a busy worker fed
        **({"consumer_max_fetch_size": FETCH_MAX_PARTITION_BYTES, "broker_max_poll_records": MAX_POLL_RECORDS}
           if settings.max_live_streams else {}),
        web_enabled=True,
        web_host=settings.web_host,
        web_bind=settings.web_host,
        web_port=settings.web_port,
        web_tables_enabled=False,
        datadir=f"{settings.state_dir}/faust",
        producer_linger_ms=5,
        producer_max_batch_size=producer_batch_bytes(settings.max_dead_letter_bytes),
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_s / 3),
        Monitor=QuietMonitor,
        PartitionAssignor=DealtAssignor,
    )
    commits = CommittedOffsets()  # recorded by the consumer, read by the checkpoint store
    # the agents' outputs go through librdkafka; the consumer flushes it before every commit
    def writes_wait(waiting: bool) -> None:
        metrics.gauge("writes_waiting", int(waiting))
        if waiting:
            metrics.inc("write_waits")

    metrics.gauge("writes_waiting", 0)
    metrics.inc("write_waits", 0)
    outputs = OutputProducer(settings, app.conf.producer_max_request_size, writes_wait)
    app.streamxai_producer = outputs  # type: ignore[attr-defined]
    use_bounded_fetch_wait(app, commits, outputs, on_pace=lambda wait: metrics.gauge("fetch_wait_ms", wait))

    @app.task
    async def start_outputs() -> None:  # connected before the first output needs it
        outputs.start()

    topics: dict[str, faust.TopicT] = {
        name: app.topic(settings.topic(name), schema=RawSchema(), partitions=settings.partitions)
        for name in TOPIC_NAMES
    }
    # the intake reads both inputs: what it forwards to arrivals is the order the model learns in
    # (and the topics of the sources, [sources.<name>])
    topics["intake"] = app.topic(settings.topic("features"), settings.topic("labels"),
                                 *(s.topic for s in settings.source_specs.values()), schema=RawSchema())
    history = PartitionHistory(settings)
    store = checkpoint_store(settings, commits, metrics)
    stateful: list[MessageHandler] = []
    if "model" in roles:
        install_intake_agent(app, topics, IntakeHandler(settings, metrics))
        stateful.append(ModelHandler(settings, metrics, history=history, checkpoints=store))
        install_model_agent(app, topics, stateful[-1])
    if "explain" in roles:
        stateful.append(ExplainHandler(settings, metrics, history=history, checkpoints=store))
        install_explainer_agent(app, topics, stateful[-1])
    if "change" in roles:
        stateful.append(ChangeHandler(settings, metrics, history=history, checkpoints=store))
        install_change_agent(app, topics, stateful[-1])
    handlers: list[Handler] = list(stateful)
    if "model" in roles and any(s.kind == "labels" for s in settings.source_specs.values()):
        # the labels of a labels source find their events' streams by event id (streamxai.handlers.join)
        topics["event-index"] = app.topic(settings.topic("event-index"), schema=RawSchema(),
                                          partitions=settings.partitions)
        handlers.append(JoinHandler(settings, metrics, history=history))
        install_join_agent(app, topics, handlers[-1])

    #: when the worker was asked to stop (``time.monotonic()``, set by
    #: :func:`streamxai.worker.run_worker`), so the checkpoints at shutdown end in time
    app.streamxai_stop_began = None  # type: ignore[attr-defined]

    @app.on_before_shutdown.connect
    async def on_shutdown(sender: Any, **kwargs: Any) -> None:
        # the consumer has stopped and every message taken up is done: checkpoint each state
        # changed since its last checkpoint, so that a restart replays nothing
        began = app.streamxai_stop_began or time.monotonic()  # type: ignore[attr-defined]
        left = await outputs.close(settings.shutdown_timeout_s)
        if left:  # their inputs' offsets were not committed: a restart sends them again
            log.warning("%d outputs were not acknowledged when the worker stopped; a restart sends them again", left)
        if not settings.checkpoint_on_stop:
            return
        t0 = time.perf_counter()
        until = began + STOP_CHECKPOINTS_SHARE * settings.shutdown_timeout_s
        try:
            n, unwritten = await asyncio.to_thread(checkpoint_changed, stateful, until)
        except Exception as e:  # e.g. the checkpoint topic is gone: a restart replays more, that is all
            log.warning("checkpoints at shutdown failed (%s: %s); a restart replays from the last ones",
                        type(e).__name__, str(e)[:300])
        else:
            log.info("wrote %d checkpoints at shutdown in %.2f s", n, time.perf_counter() - t0)
            if unwritten:
                log.warning("%d states changed since their last checkpoint were not checkpointed, so that the stop "
                            "ends within shutdown_timeout_s=%g s (those of the fewest messages since); a restart "
                            "replays their messages since their last checkpoint", unwritten,
                            settings.shutdown_timeout_s)

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, revoked: Any, **kwargs: Any) -> None:
        # if another worker processes them before they come back, the states are stale
        for h in handlers:
            h.partitions_revoked({(tp.topic, tp.partition) for tp in revoked})

    @app.on_partitions_assigned.connect
    async def on_assigned(sender: Any, assigned: Any, **kwargs: Any) -> None:
        # one line per rebalance with every partition this worker holds from now on: the time a
        # partition arrived, from which its recovery (checkpoint, replay, next output) is timed
        by_topic: dict[str, list[int]] = {}
        for tp in assigned:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        log.info("partitions assigned: %s", "; ".join(f"{t} {sorted(ps)}" for t, ps in sorted(by_topic.items()))
                 or "none")

    @app.page("/streamxai/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        return web.json({"roles": list(roles), **metrics.snapshot()})

    @app.page("/metrics")
    async def prometheus_page(web: Any, request: Any) -> Any:
        return web.bytes(metrics.exposition(), content_type="text/plain; version=0.0.4")

    tasks_topic = settings.topic("explain-tasks")

    @app.timer(interval=5.0)
    async def consumer_lag() -> None:
        consumer = app.consumer
        highwaters = {}
        for tp in consumer.assignment():
            try:
                highwaters[(tp.topic, tp.partition)] = consumer.highwater(tp)
            except Exception:  # no fetch position yet (just assigned): no lag to report
                continue
        metrics.set_lag(highwaters, tasks_topic if "explain" in roles else None)

    trim = MemoryTrim()

    @app.timer(interval=2.0)
    async def trim_memory() -> None:  # the allocator's free pages back, after evictions (max_live_streams)
        if settings.max_live_streams:
            trim(metrics.get("states_evicted"))

    @app.timer(interval=30.0)
    async def log_metrics() -> None:
        log.info("metrics %s", metrics.snapshot()["counters"])

    app.streamxai_metrics = metrics  # type: ignore[attr-defined]
    return app
