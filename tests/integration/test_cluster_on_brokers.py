"""The pipeline on three brokers (three replicas, ``min.insync.replicas = 2``) while brokers fail (the
busiest leader killed and back, a rolling restart, one down, two down): every output equals the
in-process reference, duplicates are exact copies, every event is recorded and predicted, and the
worker never stops or logs a traceback. ``bench_chaos.py --nodes 3`` runs the long version."""

from __future__ import annotations

import threading

from confluent_kafka.admin import AdminClient
from helpers.chaos_check import check_outputs, expected_dead_letters, table
from helpers.pipeline_runs import (
    collect_all,
    committed,
    make_settings,
    recorded_arrivals,
    until,
    wait_for_commit,
    worker_metrics,
)
from streamxai.kafka.config import confluent_config, ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.demo_stream import agrawal_events
from streamxai.local.ports import free_port
from streamxai.reference import run_in_process

STREAMS = ("k1", "k2", "k3")
#: the topics the worker's group consumes, and those compared with the reference
CONSUMED = ("features", "arrivals", "explain-tasks", "drift-feed")
OUTPUTS = ("predictions", "explanations", "drift-events", "change-episodes", "dead-letters")


class Run:
    """Streams ``STREAMS`` through one worker on ``cluster``, sent in batches of ``per_batch``
    events of each stream."""

    def __init__(self, cluster, tmp_path, workers, per_batch: int, batches: int):
        self.s = make_settings(cluster.bootstrap, str(tmp_path / "state"), explain_groups=2, explainers=["ipfi"],
                               checkpoint_every=50, shutdown_timeout_s=10.0)
        self.per_batch = per_batch
        self.events = [list(agrawal_events(sid, per_batch * batches, seed=i)) for i, sid in enumerate(STREAMS)]
        ensure_topics(self.s)
        self.log = tmp_path / "worker-0.log"
        self.proc = workers(self.s)

    def batch(self, k: int) -> list:
        """Batch ``k`` of every stream, the streams interleaved."""
        lo, hi = k * self.per_batch, (k + 1) * self.per_batch
        return [e for trio in zip(*(evs[lo:hi] for evs in self.events), strict=True) for e in trio]

    def send(self, k: int, rate: float | None = None) -> None:
        produce_events(self.s, self.batch(k), rate=rate)

    def sending(self, k: int, rate: float) -> threading.Thread:
        """Batch ``k`` sent at ``rate`` events a second from another thread (join it)."""
        t = threading.Thread(target=self.send, args=(k, rate), daemon=True)
        t.start()
        return t

    def wait_processed(self, timeout: float = 120.0) -> None:
        """Until the worker's group has committed every message sent so far on every topic it reads."""
        wait_for_commit(self.s, CONSUMED, timeout=timeout)

    def check(self) -> None:
        """Every output against the reference, every event sent recorded and predicted."""
        self.wait_processed()
        assert self.proc.poll() is None, "the worker stopped by itself"
        topics = {t: collect_all(self.s, t) for t in OUTPUTS}
        record = recorded_arrivals(self.s)
        ref = run_in_process(self.s, record)
        rows = check_outputs(topics, ref, expected_dead_letters(self.s, record))
        assert all(r.ok for r in rows), table(rows)
        sent = {(e.stream_id, e.seq) for evs in self.events for e in evs}
        assert {(r.event.stream_id, r.event.seq) for r in record} == sent
        assert set(ref.predictions) == sent and rows[0].distinct == len(sent)
        assert rows[2].distinct > 0  # explanations came, and were compared


def _serving(s) -> bool:
    """The worker of settings ``s`` answers on its metrics endpoint."""
    try:
        return bool(worker_metrics(s))
    except OSError:  # not listening yet
        return False


def _leaders(s, topic: str) -> dict[int, int]:
    """Partition -> the node id of its leader (-1: none)."""
    md = AdminClient(confluent_config(s, log_level=0)).list_topics(topic=s.topic(topic), timeout=10)
    return {p.id: p.leader for p in md.topics[s.topic(topic)].partitions.values()}


def _busiest(s, topic: str) -> int:
    """The partition of ``topic`` with the most records."""
    from confluent_kafka import Consumer
    from streamxai.kafka.watermarks import watermarks

    c = Consumer(confluent_config(s, **{"group.id": "busiest", "enable.auto.commit": False, "log_level": 0}))
    try:
        ends = {p: watermarks(c, s.topic(topic), p, timeout=10)[1] for p in range(s.partitions)}
    finally:
        c.close()
    return max(ends, key=ends.__getitem__)


def test_a_killed_leader_and_a_rolling_restart_lose_nothing(cluster, tmp_path, workers):
    run = Run(cluster, tmp_path, workers, per_batch=60, batches=3)
    run.send(0)
    run.wait_processed()
    part = _busiest(run.s, "arrivals")
    leader = _leaders(run.s, "arrivals")[part]
    sending = run.sending(1, rate=30)
    until(lambda: committed(run.s, "arrivals")[0] > 0 and committed(run.s, "features")[0] > 3 * 60 + 20, 60,
          "the worker to take part of the second batch")
    assert cluster.stop_node(leader, kill=True)  # mid-stream: the leader of the busiest partition crashes
    until(lambda: _leaders(run.s, "arrivals")[part] not in (leader, -1), 60, "a new leader of the busiest partition")
    sending.join(120)
    run.wait_processed()  # the whole second batch, with one node down
    cluster.start_node(leader)
    cluster.wait_in_sync(120)
    # a rolling restart while the third batch streams: each node stopped (SIGTERM), started, caught up
    sending = run.sending(2, rate=8)
    for node in cluster.nodes:
        assert cluster.stop_node(node.node_id)
        cluster.start_node(node.node_id)
        cluster.wait_in_sync(120)
    sending.join(120)
    run.check()


def test_one_broker_down_for_good_then_two_down_make_writes_wait_and_nothing_is_lost(cluster, tmp_path, workers):
    run = Run(cluster, tmp_path, workers, per_batch=60, batches=3)
    run.send(0)
    run.wait_processed()
    assert cluster.stop_node(3, kill=True)  # down for the rest of the run: two of three replicas remain
    run.send(1)
    run.wait_processed()  # writes go on with min.insync.replicas = 2 met
    sending = run.sending(2, rate=30)
    until(lambda: committed(run.s, "features")[0] > 2 * 3 * 60 + 20, 60, "the worker to take part of the third batch")
    assert cluster.stop_node(2, kill=True)  # one replica left: no write can be acknowledged
    until(lambda: "writes wait" in run.log.read_text(), 60, "the worker to say that its writes wait")
    assert worker_metrics(run.s)["gauges"]["writes_waiting"] == 1
    # a second worker starts while writes wait (no controller quorum either, one broker of the three
    # replicas its settings ask for): its topics exist, so it starts, and waits too
    second = run.s.replace(web_port=free_port(), state_dir=str(tmp_path / "state-2"), replication_factor=3)
    joined = workers(second)
    until(lambda: _serving(second), 60, "the second worker to serve its metrics")
    assert run.proc.poll() is None and joined.poll() is None
    cluster.start_node(2)
    sending.join(120)
    run.wait_processed()
    until(lambda: "take the worker's writes again" in run.log.read_text(), 60, "the worker to say writes go on")
    metrics = worker_metrics(run.s)
    assert metrics["gauges"]["writes_waiting"] == 0 and metrics["counters"]["write_waits"] >= 1
    lines = [ln for ln in run.log.read_text().splitlines() if "writes wait" in ln]
    assert len(lines) == metrics["counters"]["write_waits"], lines  # one line per wait, not one per retry
    run.check()
    assert joined.poll() is None, "the worker that started while writes waited stopped by itself"
