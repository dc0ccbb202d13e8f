"""Fixtures for tests against a real Kafka broker: ``broker`` starts the project's local broker once per
session on free ports (tied to the test process, so a killed run leaves none behind);
``STREAMXAI_BOOTSTRAP=host:port`` uses a running one instead, ``STREAMXAI_TEST_BROKER_PORT=N`` pins the
client port. Each test gets uuid-named topics (``topic_factory``) and group ids (``group_id``). Every
test here is marked ``integration``."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from streamxai.local.broker import LocalBroker
from streamxai.local.ports import free_ports
from streamxai.worker import spawn_worker, stop_worker

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)


@dataclass(frozen=True)
class ExternalBroker:
    """A broker the tests did not start (``STREAMXAI_BOOTSTRAP``)."""

    bootstrap: str


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker | ExternalBroker]:
    """The Kafka broker of this test session; use ``broker.bootstrap``."""
    external = os.environ.get("STREAMXAI_BOOTSTRAP")
    if external:
        yield ExternalBroker(external)
        return
    pinned = os.environ.get("STREAMXAI_TEST_BROKER_PORT")
    port, controller_port = (int(pinned), int(pinned) + 1) if pinned else tuple(free_ports(2))
    local = LocalBroker(
        port,
        controller_port,
        data_dir=tmp_path_factory.mktemp("kafka"),
        heap="384m",
        die_with_parent=True,
    )
    try:
        local.start(timeout=120)
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="session")
def cluster_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """A local cluster of three nodes (``LocalBroker(nodes=3)``) for this session's fault tests,
    on free ports with its data under a temporary directory; use :func:`cluster`."""
    if os.environ.get("STREAMXAI_BOOTSTRAP"):
        pytest.skip("needs a cluster of its own whose nodes it stops and starts")
    ports = free_ports(6)
    local = LocalBroker(ports[0], ports[1], data_dir=tmp_path_factory.mktemp("kafka-cluster"), heap="256m",
                        die_with_parent=True, nodes=3, node_ports=list(zip(ports[0::2], ports[1::2], strict=True)))
    try:
        local.start(timeout=180)
        yield local
    finally:
        local.stop()


@pytest.fixture
def cluster(cluster_session: LocalBroker) -> LocalBroker:
    """The session's cluster of three nodes, every node up and every replica in sync (a test
    before may have left a node down)."""
    for node in cluster_session.nodes:
        cluster_session.start_node(node.node_id, timeout=120)
    cluster_session.wait_in_sync(timeout=120)
    return cluster_session


@pytest.fixture(scope="session")
def bootstrap(broker: LocalBroker | ExternalBroker) -> str:
    """``host:port`` of the session's broker."""
    return broker.bootstrap


ADMIN_LOGGER = logging.getLogger("tests.admin")


@pytest.fixture(scope="session")
def admin(bootstrap: str) -> AdminClient:
    """The session's admin client; librdkafka's lines go to the logger ``tests.admin``, not to the stderr
    whichever test is capturing."""
    return AdminClient({"bootstrap.servers": bootstrap, "logger": ADMIN_LOGGER})


def _wait_for_leaders(admin: AdminClient, topic: str, partitions: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(topic=topic, timeout=timeout).topics.get(topic)
        if (
            md is not None
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic!r} has no leader for all {partitions} partitions")
        time.sleep(0.1)


@pytest.fixture
def topic_factory(admin: AdminClient) -> Iterator[Callable[..., str]]:
    """``topic_factory(partitions=1, prefix="test", config=None) -> name``: a uuid-named topic with a leader
    for every partition, deleted when the test ends."""
    created: list[str] = []

    def make(partitions: int = 1, prefix: str = "test", config: dict[str, str] | None = None) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        spec = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
        admin.create_topics([spec], operation_timeout=30)[name].result(timeout=30)
        created.append(name)
        _wait_for_leaders(admin, name, partitions, timeout=30)
        return name

    yield make
    if created:
        for future in admin.delete_topics(created, operation_timeout=30).values():
            try:
                future.result(timeout=30)
            except KafkaException:
                pass  # already gone; nothing to clean


@pytest.fixture(scope="session")
def two_profiles_run(bootstrap: str, tmp_path_factory: pytest.TempPathFactory):
    """One worker that served two stream profiles side by side (helpers.profiles_run), run once
    per session for the tests of the pipeline, the command line and the dashboard."""
    from helpers.profiles_run import run_two_profiles

    return run_two_profiles(bootstrap, tmp_path_factory.mktemp("profiles"))


@pytest.fixture
def group_id() -> str:
    """A consumer group id no other test uses."""
    return f"test-group-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def workers(tmp_path):
    """``start(settings)`` spawns a worker logging into ``tmp_path``; at the end every worker is
    stopped and none may have logged a traceback."""
    procs = []

    def start(s):
        procs.append(spawn_worker(s, log_file=str(tmp_path / f"worker-{len(procs)}.log"), loglevel="warning"))
        return procs[-1]

    yield start
    for p in procs:
        stop_worker(p)
    for i in range(len(procs)):
        log = (tmp_path / f"worker-{i}.log").read_text(errors="replace")
        assert "Traceback" not in log, f"worker {i} logged a traceback:\n{log[-3000:]}"
