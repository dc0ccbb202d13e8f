"""A local Kafka cluster: several KRaft nodes on 127.0.0.1, each a broker and a voter of one
controller quorum with its own ports and data directory. :class:`~streamxai.local.broker.LocalBroker`
with ``nodes=3`` builds, starts, stops and reports its nodes through these functions.

>>> from streamxai.local.broker import LocalBroker
>>> b = LocalBroker(19092, 19093, data_dir="/tmp/streamxai-doc-cluster", nodes=3)
>>> b.bootstrap
'127.0.0.1:19092,127.0.0.1:19094,127.0.0.1:19096'
>>> [(n.node_id, n.port, n.controller_port, n.data_dir.name) for n in b.nodes]
[(1, 19092, 19093, 'node-1'), (2, 19094, 19095, 'node-2'), (3, 19096, 19097, 'node-3')]
>>> [ln for ln in b.nodes[1].server_properties().splitlines() if ln.startswith(("node.id", "controller.quorum",
...  "default.replication", "min.insync"))]
['node.id=2', 'controller.quorum.voters=1@127.0.0.1:19093,2@127.0.0.1:19095,3@127.0.0.1:19097', 'default.replication.factor=3', 'min.insync.replicas=2']
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
import signal
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..kafka.config import BrokerError

__all__ = ["ClusterStatus", "cluster_nodes", "start_cluster", "stop_cluster", "start_node", "stop_node",
           "nodes_in", "node_of", "wait_in_sync", "random_cluster_id"]

_HOST = "127.0.0.1"
#: the nodes are LocalBroker objects (streamxai.local.broker), which builds them through this module
LocalBroker = Any
BrokerStatus = Any
_LOGGER = logging.getLogger("streamxai.broker.probe")


def random_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, no leading '-'."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


@dataclass(frozen=True)
class ClusterStatus:
    """What ``LocalBroker(nodes=N).status()`` found: each node's status, by node id."""

    nodes: tuple[BrokerStatus, ...]

    @property
    def running(self) -> bool:
        """Some node runs."""
        return any(n.running for n in self.nodes)

    @property
    def ready(self) -> bool:
        """Every node runs and answers."""
        return all(n.ready for n in self.nodes)

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    def __str__(self) -> str:
        up = sum(n.ready for n in self.nodes)
        head = f"cluster of {len(self.nodes)} nodes, {up} ready, bootstrap {self.bootstrap}"
        return "\n".join([head, *(f"  node {i}: {n}" for i, n in enumerate(self.nodes, 1))])


def cluster_nodes(parent: LocalBroker, n: int, node_ports: Sequence[tuple[int, int]] | None) -> list[LocalBroker]:
    """The ``n`` nodes of ``parent``'s cluster, each of ``parent``'s class: node ``i`` (1..n)
    listens on ``node_ports[i-1]`` (default: ``parent``'s ports plus ``2 * (i - 1)``) and lives in
    ``data_dir/node-<i>``."""
    if parent.sasl is not None or parent.tls is not None:
        raise ValueError("a local cluster (nodes > 1) serves PLAINTEXT only; SASL and TLS are for a single node")
    ports = ([(int(p), int(c)) for p, c in node_ports] if node_ports is not None
             else [(parent.port + 2 * i, parent.controller_port + 2 * i) for i in range(n)])
    if len(ports) != n:
        raise ValueError(f"node_ports gives {len(ports)} pairs of ports for {n} nodes")
    flat = [p for pair in ports for p in pair]
    if len(set(flat)) != len(flat) or not all(0 < p < 65536 for p in flat):
        raise ValueError(f"the nodes' ports {ports} must be distinct ports in 1..65535; give controller_port = port + 1 "
                         "(the nodes then take port, port + 1, port + 2, ...) or node_ports")
    voters = ",".join(f"{i}@{_HOST}:{c}" for i, (_, c) in enumerate(ports, 1))
    nodes = []
    for i, (p, c) in enumerate(ports, 1):
        node = type(parent)(p, c, parent.data_dir / f"node-{i}", heap=parent.heap, num_partitions=parent.num_partitions,
                           die_with_parent=parent.die_with_parent, libs_dir=parent.libs_dir,
                           auto_create_topics=parent.auto_create_topics, extra_properties=parent.extra_properties)
        node._node_id, node._voters, node._size = i, voters, n
        nodes.append(node)
    return nodes


def nodes_in(data_dir: str | os.PathLike[str]) -> int:
    """How many nodes of a cluster ``data_dir`` holds (``node-<i>/server.properties``), 0 if none."""
    return sum(1 for _ in Path(data_dir).glob("node-*/server.properties"))


def _cluster_id(nodes: Sequence[LocalBroker]) -> str | None:
    """The cluster id a node's formatted storage holds (a node whose data is gone joins it)."""
    for node in nodes:
        try:
            found = re.search(r"^cluster\.id=(\S+)", (node.log_dir / "meta.properties").read_text(), re.MULTILINE)
        except OSError:
            continue
        if found:
            return found.group(1)
    return None


def start_cluster(parent: LocalBroker, java: str, timeout: float) -> ClusterStatus:
    """Launch every node that does not run (a quorum needs most of them, so none is waited for
    alone), then wait until each answers; on failure every node is stopped."""
    deadline = time.monotonic() + timeout
    cid = _cluster_id(parent.nodes) or random_cluster_id()
    pids = []
    for node in parent.nodes:
        with node._locked():
            pids.append(node._launch_unless_running(java, cid))
    try:
        return ClusterStatus(tuple(node._await_answer(pid, deadline) for node, pid in zip(parent.nodes, pids,
                                                                                          strict=True)))
    except BrokerError:
        stop_cluster(parent.nodes, 15.0)
        raise


def node_of(parent: LocalBroker, node_id: int) -> LocalBroker:
    """Node ``node_id`` (1..nodes, Kafka's broker id) of ``parent``'s cluster."""
    if not parent.nodes:
        raise ValueError("stop_node and start_node are for a cluster (LocalBroker(nodes=N)); this broker is one node")
    if not isinstance(node_id, int) or not 1 <= node_id <= len(parent.nodes):
        raise ValueError(f"node_id must be 1..{len(parent.nodes)} (Kafka's broker id), got {node_id!r}")
    return parent.nodes[node_id - 1]


def start_node(parent: LocalBroker, node_id: int, java: str, timeout: float) -> BrokerStatus:
    """Start node ``node_id`` alone (it joins the cluster's quorum) and wait until it serves."""
    node = node_of(parent, node_id)
    with node._locked():
        pid = node._launch_unless_running(java, _cluster_id(parent.nodes))
        return node._await_answer(pid, time.monotonic() + timeout)


def stop_node(parent: LocalBroker, node_id: int, kill: bool, timeout: float) -> bool:
    """Stop node ``node_id``: SIGTERM (a controlled shutdown: its partitions' leadership moves
    first), or with ``kill`` SIGKILL (a crash). True if it was running."""
    node = node_of(parent, node_id)
    return node._stop(signal.SIGKILL, 10.0) if kill else node.stop(timeout)


def stop_cluster(nodes: Sequence[LocalBroker], timeout: float) -> bool:
    """SIGTERM to every running node at once, SIGKILL to those still running after ``timeout``
    seconds (after at most 5 s when fewer than most of the nodes run: a node's controlled
    shutdown waits for a controller quorum that is gone); True if any was running."""
    with contextlib.ExitStack() as locks:
        for node in nodes:
            locks.enter_context(node._locked())
        running = [(node, pid) for node in nodes if (pid := node._read_pid()) is not None]
        for node, pid in running:
            node._signal(pid, signal.SIGTERM)
        quorum = 2 * len(running) > len(nodes)
        deadline = time.monotonic() + (timeout if quorum else min(timeout, 5.0))
        for node, pid in running:
            node._reap(pid, max(0.0, deadline - time.monotonic()))
        for node in nodes:
            if node._read_pid() is None:
                node.pid_file.unlink(missing_ok=True)
        return bool(running)


def wait_in_sync(parent: LocalBroker, timeout: float) -> None:
    """Wait until every replica of every partition is in sync again (what a rolling restart waits
    for before it stops the next node); ``BrokerError`` names the partitions still behind after
    ``timeout`` seconds."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": parent.bootstrap, "logger": _LOGGER})
    deadline = time.monotonic() + timeout
    while True:
        try:
            topics = admin.list_topics(timeout=10).topics
        except Exception:  # KafkaException: no node answers yet
            topics = None
        behind = [f"{name}[{p.id}]" for name, md in (topics or {}).items() for p in md.partitions.values()
                  if set(p.isrs) != set(p.replicas) or p.leader < 0]
        if topics is not None and not behind:
            return
        if time.monotonic() > deadline:
            raise BrokerError(f"{len(behind)} partitions have replicas out of sync after {timeout:.0f} s: "
                              f"{', '.join(sorted(behind)[:5])}{' ...' if len(behind) > 5 else ''}")
        time.sleep(0.25)
