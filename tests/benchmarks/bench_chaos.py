"""Faults that repeat: streams produced at a steady rate for ``--minutes`` while a seeded schedule
SIGKILLs a worker every 1-3 minutes (and starts it again), restarts the broker once on its data
dir, starts a second worker and later stops it (the partitions rebalance each time), and has the
producer send its last messages again once. Then the workers drain, every output topic and the
recorded arrivals are read, and what the workers published is compared with the in-process
reference on those arrivals: per topic the messages, distinct identities, duplicates (each an
exact copy), missing and mismatched ones. Exits 1 if anything is missing or mismatched, or a
worker stopped by itself.

On a cluster (``--nodes 3``: three KRaft nodes, the topics with three replicas and
``min.insync.replicas = 2``) the broker faults are a cluster's: the leader of the busiest
arrivals partition SIGKILLed and started again 30-60 s later, a rolling restart of every node
(each stopped by SIGTERM, started, and caught up before the next), two nodes SIGKILLed at once
for 20-40 s (writes wait: the workers say so and go on), and one node SIGKILLed for the rest of
the run. ``--results`` writes the verdict as a results file for the docs.

With ``--workers 3`` the faults are rebalances under load instead: that many workers share the
streams, and every 30-90 s (seeded) one of them is stopped, by SIGTERM or SIGKILL, and started
again; the brokers stay up. Besides the outputs, the run checks that each alert paged once (by
its ``alert_key``), times each worker's recovery (from a rebalance's ``partitions assigned``
line to its streams' next prediction: at most 30 s) and the longest a stream waited for its next
prediction after the last fault (at most 60 s). A run without an alert fails (paging once is then
unchecked): the drifting streams' swap pages from about 1,650 events a stream on, as with
``--minutes 10 --rate 40``.

    python tests/benchmarks/bench_chaos.py [--minutes 20] [--seed 1] [--streams 10] [--rate 20] [--nodes 1]
        [--workers 1] [--keep-dir] [--results docs/results/bench_chaos.json]
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package

from _results import RESULTS_DIR, result_row, write_results  # noqa: E402  (the script's folder)
from helpers.chaos_check import check_arrivals, check_outputs, expected_dead_letters, table  # noqa: E402
from helpers.pipeline_runs import collect_all, committed, make_settings, recorded_arrivals  # noqa: E402
from helpers.rebalance_recovery import Recovery, assignments_in, recovery_waits  # noqa: E402
from streamxai.kafka.config import confluent_config, ensure_topics  # noqa: E402
from streamxai.kafka.replay import PartitionHistory  # noqa: E402
from streamxai.kafka.watermarks import watermarks  # noqa: E402
from streamxai.local.broker import LocalBroker  # noqa: E402
from streamxai.local.demo_stream import agrawal_events, labels_later  # noqa: E402
from streamxai.local.ports import free_ports  # noqa: E402
from streamxai.reference import run_in_process  # noqa: E402
from streamxai.schemas import LabelEvent, dumps  # noqa: E402
from streamxai.settings import Secret, Settings  # noqa: E402
from streamxai.worker import spawn_worker, stop_worker  # noqa: E402

#: the topics the workers' group consumes, in the order the stages pass messages on
CONSUMED = ("features", "labels", "arrivals", "explain-tasks", "drift-feed")
#: the topics compared with the reference
OUTPUTS = ("predictions", "explanations", "drift-events", "change-episodes", "dead-letters")
T0 = time.monotonic()
#: a rebalance's longest recovery (partitions assigned to the streams' next prediction), and the
#: longest a stream may wait for its next prediction after the last fault, with ``--workers`` above 1
RECOVERY_LIMIT_S, LAST_WAIT_LIMIT_S = 30.0, 60.0


def say(text: str) -> None:
    print(f"[{time.monotonic() - T0:7.1f} s] {text}", flush=True)


def stream_messages(streams: int, per_stream: int, seed: int) -> list[tuple[str, bytes, tuple[str, str, int]]]:
    """Every message the producer may send, in sending order: ``(topic, key, value)`` with what it
    is (kind, stream, seq). Agrawal streams; every other one drifts (classification function 1
    to 2 at a third, two features swapped at two thirds); every third one gets its labels later,
    20 or 60 events late, one event in 25 never labelled."""
    per: list[list] = []
    for i in range(streams):
        drifts = i % 2 == 0
        evs = agrawal_events(f"c{i}", per_stream, seed=seed * 100 + i, drift_at=per_stream // 3 if drifts else None,
                             swap_at=2 * per_stream // 3 if drifts else None)
        per.append(labels_later(evs, 20 if i % 6 == 0 else 60, unlabelled=range(i, per_stream, 25))
                   if i % 3 == 0 else list(evs))
    out = []
    for j in range(max(len(p) for p in per)):  # round robin, so every stream moves at its message rate
        for p in per:
            if j < len(p):
                m = p[j]
                kind = "label" if isinstance(m, LabelEvent) else "features"
                out.append(("labels" if kind == "label" else "features", m.stream_id.encode(), dumps(m),
                            (kind, m.stream_id, m.seq)))
    return out


class Producer(threading.Thread):
    """Sends the messages in order at ``rate`` per second until ``seconds`` passed. Idempotent, and
    while the broker is down librdkafka keeps them and retries; a message that still fails is sent
    again from there on, in order (the ones after it that did arrive arrive twice: duplicates the
    workers drop). :meth:`rewind` has it send its last messages again, as a producer restarted
    from an older position does. The same event is always the same bytes."""

    def __init__(self, s: Settings, messages: list, rate: float, seconds: float):
        super().__init__(daemon=True)
        self.s, self.messages, self.rate, self.seconds = s, messages, rate, seconds
        self.acked: set[int] = set()
        self.sent = self.resent = 0
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._failed: list[int] = []
        self._rewind = 0
        self.error: BaseException | None = None

    def rewind(self, n: int) -> None:
        with self._lock:
            self._rewind += n

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # noqa: BLE001  (reported by the main thread)
            self.error = e

    def _producer(self):
        from confluent_kafka import Producer

        return Producer(confluent_config(self.s, **{"linger.ms": 20, "enable.idempotence": True, "log_level": 0,
                                                    "message.timeout.ms": 120_000}))

    def _run(self) -> None:
        p, i, start = self._producer(), 0, time.monotonic()
        names = {t: self.s.topic(t) for t in ("features", "labels")}

        def delivered(index: int):
            def cb(err, msg) -> None:  # noqa: ANN001
                with self._lock:
                    (self._failed.append if err is not None else self.acked.add)(index)
            return cb

        while not self.stopping.is_set() and i < len(self.messages) and time.monotonic() - start < self.seconds:
            with self._lock:
                back, self._rewind = self._rewind, 0
                failed, self._failed = self._failed, []
            if failed:  # everything in flight settles, then the first failure is sent again
                p.flush(130)
                with self._lock:
                    failed += self._failed
                    self._failed = []
                back = max(back, i - min(failed))
                say(f"producer: {len(failed)} deliveries failed; sends again from message {i - back}")
                p = self._producer()
            if back:
                i = max(0, i - back)
                self.resent += back
            ahead = self.sent / self.rate - (time.monotonic() - start)
            if ahead > 0:
                self.stopping.wait(ahead)
            topic, key, value, _ = self.messages[i]
            try:
                p.produce(names[topic], value=value, key=key, on_delivery=delivered(i))
            except BufferError:
                p.poll(0.5)
                continue
            p.poll(0)
            i += 1
            self.sent += 1
        left = p.flush(130)
        if left or self._failed:
            raise RuntimeError(f"producer: {left} messages undelivered and {len(self._failed)} failed at the end")

    def acknowledged(self) -> set[tuple[str, str, int]]:
        return {self.messages[i][3] for i in self.acked}


class Workers:
    """The worker processes by name, each with its own state dir and log file."""

    def __init__(self, s: Settings, tmp: Path, loglevel: str = "warning"):
        self.s, self.tmp, self.loglevel = s, tmp, loglevel
        self.procs: dict[str, subprocess.Popen] = {}
        self.starts: dict[str, int] = {}
        self.died: list[str] = []
        #: when (seconds since the epoch) a worker was stopped or killed
        self.faults: list[float] = []

    def start(self, name: str) -> None:
        from streamxai.local.ports import free_port

        self.starts[name] = self.starts.get(name, 0) + 1
        w = self.s.replace(web_port=free_port(), state_dir=str(self.tmp / f"state-{name}"))
        self.procs[name] = spawn_worker(w, log_file=str(self.tmp / f"{name}.log"), loglevel=self.loglevel)
        say(f"worker {name} started (pid {self.procs[name].pid}, start {self.starts[name]})")

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        self.faults.append(time.time())
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        say(f"worker {name} SIGKILLed (pid {proc.pid})")

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name)
        self.faults.append(time.time())
        rc = stop_worker(proc, timeout=60)
        say(f"worker {name} stopped by SIGTERM (pid {proc.pid}, exit code {rc})")

    def watch(self) -> None:
        """A worker that exits by itself is noted and started again."""
        for name, proc in list(self.procs.items()):
            if proc.poll() is not None:
                self.died.append(f"{name} (pid {proc.pid}) exited by itself with code {proc.returncode}")
                say(f"worker {name} EXITED BY ITSELF with code {proc.returncode}; starting it again")
                del self.procs[name]
                self.faults.append(time.time())
                self.start(name)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def logs(self) -> list[str]:
        """Each worker log's lines and tracebacks (an outage is two lines, not one per retry)."""
        out = []
        for p in sorted(self.tmp.glob("w*.log")):
            text = p.read_text(errors="replace")
            out.append(f"{p.name}: {len(text.splitlines())} lines, {text.count('Traceback')} tracebacks")
        return out

    def assignments(self, topic: str) -> dict[str, list[tuple[float, set[int]]]]:
        """Each worker's assignments (time, partitions of ``topic``) from its log's lines."""
        return {p.stem: assignments_in(p.read_text(errors="replace").splitlines(), topic)
                for p in sorted(self.tmp.glob("w*.log"))}


def schedule(seed: int, seconds: float, nodes: int = 1, workers: int = 1) -> list[tuple[float, str]]:
    """The faults, seeded: a SIGKILL every 60-180 s (at least one), a second worker from a fifth
    of the run to two thirds, the producer's last 50 messages sent again; one broker restart, or
    on a cluster a leader killed, a rolling restart, two nodes down at once and one down for good.
    With ``workers`` above 1 only rebalances: every 30-90 s a worker stopped by SIGTERM or SIGKILL."""
    rng = random.Random(seed)
    if workers > 1:
        t, acts = rng.uniform(30, 90), []
        while t < seconds - 20:
            acts.append((t, rng.choice(["stop", "kill"])))
            t += rng.uniform(30, 90)
        return acts or [(seconds / 2, "kill")]
    acts = [(rng.uniform(0.15, 0.3) * seconds, "second worker joins"),
            (rng.uniform(0.6, 0.75) * seconds, "second worker leaves"),
            (rng.uniform(0.5, 0.9) * seconds, "producer resends")]
    if nodes == 1:
        acts.append((rng.uniform(0.35, 0.5) * seconds, "broker restart"))
    else:
        acts += [(rng.uniform(0.1, 0.2) * seconds, "leader kill"),
                 (rng.uniform(0.3, 0.4) * seconds, "rolling restart"),
                 (rng.uniform(0.5, 0.6) * seconds, "two nodes down"),
                 (rng.uniform(0.75, 0.85) * seconds, "one node down for good")]
    t = rng.uniform(60, 180)
    kills = []
    while t < seconds - 20:
        kills.append((t, "kill"))
        t += rng.uniform(60, 180)
    acts += kills or [(rng.uniform(0.5, 0.9) * seconds, "kill")]
    return sorted(acts)


class NextOutputs(threading.Thread):
    """From its start, the seconds until each stream's next prediction is on the predictions
    topic (at most ``timeout``): how long the streams wait for their outputs once a fault is over."""

    def __init__(self, s: Settings, streams: list[str], timeout: float = 300.0):
        super().__init__(daemon=True)
        self.s, self.streams, self.timeout = s, streams, timeout
        self.waits: dict[str, float] = {}

    def run(self) -> None:
        import orjson
        from confluent_kafka import Consumer, TopicPartition

        t0 = time.monotonic()
        topic = self.s.topic("predictions")
        c = Consumer(confluent_config(self.s, **{"group.id": "chaos-next", "enable.auto.commit": False,
                                                 "log_level": 0}))
        try:
            ends: dict[int, int] = {}
            while len(ends) < self.s.partitions:  # a fault that overlaps this one may hold the answers up
                for p in set(range(self.s.partitions)) - set(ends):
                    try:
                        ends[p] = watermarks(c, topic, p, timeout=10)[1]
                    except Exception:  # noqa: BLE001  (KafkaException: asked again)
                        if time.monotonic() - t0 > self.timeout:
                            say("next outputs not measured: no watermarks of the predictions topic")
                            return
            c.assign([TopicPartition(topic, p, end) for p, end in ends.items()])
            while len(self.waits) < len(self.streams) and time.monotonic() - t0 < self.timeout:
                rec = c.poll(0.2)
                if rec is not None and not rec.error():
                    self.waits.setdefault(orjson.loads(rec.value())["stream_id"], time.monotonic() - t0)
        finally:
            c.close()

    def longest(self) -> float | None:
        """The longest wait over the streams (``timeout`` for a stream with none), None if unmeasured."""
        if not self.waits:
            return None
        return max(self.waits.get(sid, self.timeout) for sid in self.streams)


def chaos(acts: list[tuple[float, str]], seconds: float, broker: LocalBroker, workers: Workers,
          producer: Producer, rng: random.Random, waits: list[tuple[str, NextOutputs]]) -> list[str]:
    """Runs the schedule (each action when its time comes, after the one before is done) until
    ``seconds`` passed; returns what was done, and appends to ``waits`` each fault's
    :class:`NextOutputs`, started as the fault is over."""
    streams = sorted({m[3][1] for m in producer.messages})
    done, start = [], time.monotonic()
    for at, what in acts:
        while time.monotonic() - start < at:
            workers.watch()
            if producer.error is not None:
                raise RuntimeError("the producer failed") from producer.error
            time.sleep(1)
        began = time.monotonic() - start
        if what in ("kill", "stop"):
            name = rng.choice(sorted(workers.procs))
            (workers.kill if what == "kill" else workers.stop)(name)
            time.sleep(rng.uniform(0, 5))
            workers.start(name)
            what = f"{'SIGKILL' if what == 'kill' else 'SIGTERM'} {name}, started again"
        elif what in CLUSTER_FAULTS:
            what = CLUSTER_FAULTS[what](broker, workers.s, rng)
        elif what == "broker restart":
            down = rng.uniform(10, 20)
            broker.stop()
            say(f"broker stopped; down for {down:.0f} s")
            time.sleep(down)
            broker.start(timeout=180)
            say("broker started again on its ports and data dir")
            what = f"broker restart ({down:.0f} s down)"
        elif what == "second worker joins":
            workers.start("w2")
            what = "second worker w2 joins"
        elif what == "second worker leaves":
            if "w2" in workers.procs:
                workers.stop("w2")
            what = "second worker w2 leaves (SIGTERM)"
        elif what == "producer resends":
            producer.rewind(50)
            say("producer sends its last 50 messages again")
            what = "producer sends its last 50 messages again"
        done.append(f"{began:7.1f} s  {what}")
        if what != "producer sends its last 50 messages again":
            waits.append((f"{what} at {began:.0f} s", NextOutputs(workers.s, streams)))
            waits[-1][1].start()
    while time.monotonic() - start < seconds:
        workers.watch()
        time.sleep(1)
    return done


def _busiest_leader(s: Settings) -> int:
    """The node that leads the partition of the arrivals topic with the most records."""
    from confluent_kafka import Consumer

    c = Consumer(confluent_config(s, **{"group.id": "chaos-leader", "enable.auto.commit": False, "log_level": 0}))
    try:
        topic = s.topic("arrivals")
        ends = {p: watermarks(c, topic, p, timeout=10)[1] for p in range(s.partitions)}
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
    finally:
        c.close()
    return parts[max(ends, key=ends.__getitem__)].leader


def leader_kill(broker: LocalBroker, s: Settings, rng: random.Random) -> str:
    leader = _busiest_leader(s)
    if leader < 1:
        return "leader kill skipped: the busiest partition has no leader"
    down = rng.uniform(30, 60)
    broker.stop_node(leader, kill=True)
    say(f"node {leader}, the leader of the busiest arrivals partition, SIGKILLed; down for {down:.0f} s")
    time.sleep(down)
    broker.start_node(leader, timeout=180)
    say(f"node {leader} started again")
    return f"leader node {leader} SIGKILLed, back after {down:.0f} s"


def rolling_restart(broker: LocalBroker, s: Settings, rng: random.Random) -> str:
    for node in broker.nodes:
        broker.stop_node(node.node_id)
        say(f"rolling restart: node {node.node_id} stopped (SIGTERM)")
        broker.start_node(node.node_id, timeout=180)
        broker.wait_in_sync(300)
        say(f"rolling restart: node {node.node_id} started again and caught up")
    return "rolling restart of every node"


def two_down(broker: LocalBroker, s: Settings, rng: random.Random) -> str:
    ids = rng.sample([n.node_id for n in broker.nodes], 2)
    down = rng.uniform(20, 40)
    for i in ids:
        broker.stop_node(i, kill=True)
    say(f"nodes {ids} SIGKILLed: fewer replicas than min.insync.replicas, writes wait; down for {down:.0f} s")
    time.sleep(down)
    for i in ids:
        broker.start_node(i, timeout=180)
    say(f"nodes {ids} started again")
    return f"nodes {ids} SIGKILLed together, back after {down:.0f} s"


def one_down(broker: LocalBroker, s: Settings, rng: random.Random) -> str:
    broker.wait_in_sync(300)
    node = rng.choice([n.node_id for n in broker.nodes])
    broker.stop_node(node, kill=True)
    say(f"node {node} SIGKILLed for the rest of the run")
    return f"node {node} SIGKILLed for the rest of the run"


#: the broker faults of a cluster, by their name in the schedule
CLUSTER_FAULTS = {"leader kill": leader_kill, "rolling restart": rolling_restart, "two nodes down": two_down,
                  "one node down for good": one_down}


def results_rows(rows: list, done: list[str], workers: Workers, waits: list[tuple[str, NextOutputs]],
                 recovery: dict[str, Recovery] | None = None) -> list[dict]:
    """The verdict as rows of a results file: per output topic its counts (the pages' row counts
    alerting messages and their keys); per fault the longest a stream waited for its next
    prediction once the fault was over; per worker its rebalances timed and its longest recovery."""
    out = [result_row(r.name, what, getattr(r, what), "messages")
           for r in rows for what in ("messages", "distinct", "duplicates", "missing", "mismatched")]
    out += [result_row(f"after {what}", "longest wait for a stream's next prediction", round(w, 1), "s")
            for what, nxt in waits if (w := nxt.longest()) is not None]
    for name, rec in sorted((recovery or {}).items()):
        out.append(result_row(f"recovery of {name}", "rebalances timed", rec.timed, "rebalances"))
        out.append(result_row(f"recovery of {name}", "cut short by a fault", rec.interrupted, "rebalances"))
        if rec.longest is not None:
            out.append(result_row(f"recovery of {name}", "median recovery", rec.median, "s"))
            out.append(result_row(f"recovery of {name}", "longest recovery", rec.longest, "s"))
    out.append(result_row("faults", "done", len(done), "faults"))
    out.append(result_row("workers", "exited by themselves", len(workers.died), "workers"))
    return out


def output_times(s: Settings) -> tuple[dict[str, int], dict[str, list[float]]]:
    """Each stream's partition of the predictions topic, and the times its outputs there were written."""
    import orjson

    history, part, times = PartitionHistory(s), {}, {}
    topic = s.topic("predictions")
    for p in range(s.partitions):
        for _, value, ts, _ in history.records(topic, p, None, None):
            sid = orjson.loads(value)["stream_id"]
            if part.setdefault(sid, p) != p:
                raise RuntimeError(f"stream {sid} has predictions on partitions {part[sid]} and {p}")
            times.setdefault(sid, []).append(ts)
    return part, {sid: sorted(ts) for sid, ts in times.items()}


def drain(s: Settings, workers: Workers, timeout: float) -> bool:
    """Until the group has committed everything on the topics it consumes and the output topics
    stopped growing (two looks 5 s apart), or ``timeout`` s."""
    from confluent_kafka import Consumer

    def ends() -> int:
        c = Consumer(confluent_config(s, **{"group.id": "chaos-ends", "enable.auto.commit": False}))
        try:
            return sum(watermarks(c, s.topic(t), p, timeout=10)[1]
                       for t in OUTPUTS for p in range(s.partitions))
        finally:
            c.close()

    from confluent_kafka import KafkaException

    deadline, before = time.monotonic() + timeout, -1
    while time.monotonic() < deadline:
        workers.watch()
        try:
            behind = [t for t in CONSUMED if (lag := committed(s, t))[0] < lag[1]]
            now = ends()
        except KafkaException as e:  # the group's coordinator or a partition's leader is moving: asked again
            say(f"drain: {e}; asking again")
            time.sleep(5)
            continue
        if not behind and now == before:
            return True
        before = now
        time.sleep(5)
    say(f"still not drained after {timeout:g} s")
    return False


def read_inputs(s: Settings) -> dict[tuple[str, int, int], tuple[str, str, int]]:
    """Every record of the input topics by ``(topic, partition, offset)``: its kind, stream and seq."""
    import orjson

    history, out = PartitionHistory(s), {}
    for short, kind in (("features", "features"), ("labels", "label")):
        topic = s.topic(short)
        for p in range(s.partitions):
            for off, value, _, _ in history.records(topic, p, None, None):
                m = orjson.loads(value)
                out[(topic, p, off)] = (kind, m["stream_id"], m["seq"])
    return out


def rebalance_verdict(s: Settings, workers: Workers, waits: list[tuple[str, NextOutputs]],
                      produced_until: float, alerts: int) -> tuple[dict[str, Recovery], list[str]]:
    """Prints each worker's recoveries and the longest wait after the last fault; returns the
    recoveries and what fails the run besides the outputs: a recovery over
    :data:`RECOVERY_LIMIT_S`, a wait after the last fault over :data:`LAST_WAIT_LIMIT_S` or not
    measured, no recovery timed, or no alert (``alerts``: the reference's) to check the pages on."""
    partition_of, times = output_times(s)
    recovery = recovery_waits(workers.assignments(s.topic("arrivals")), partition_of, times, workers.faults,
                              until=produced_until)
    # the drifting streams' swap pages once the input watch has its reference (1,000 events) before it
    late = [] if alerts else ["no alert in the run, so paging once is unchecked: the swap at two thirds of each drifting "
                              "stream pages from about 1,650 events a stream on (--minutes 10 --rate 40)"]
    print("recovery per worker (partitions assigned to the next prediction of each of their streams):")
    for name, rec in sorted(recovery.items()):
        print(f"  {name}: {rec.timed} rebalances timed, {rec.interrupted} cut short by a fault; longest "
              f"{rec.longest} s, median {rec.median} s")
        if rec.longest is not None and rec.longest > RECOVERY_LIMIT_S:
            late.append(f"{name} recovered in {rec.longest} s, over {RECOVERY_LIMIT_S:g} s")
    if not any(r.waits for r in recovery.values()):
        late.append("no recovery timed")
    last = waits[-1][1].longest() if waits else None
    print(f"longest wait for a stream's next prediction after the last fault: "
          f"{'n/a' if last is None else f'{last:.1f}'} s")
    if last is None or last > LAST_WAIT_LIMIT_S:
        late.append(f"the longest wait after the last fault is {last} s, over {LAST_WAIT_LIMIT_S:g} s")
    for what in late:
        print(f"FAILED: {what}")
    return recovery, late


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=20.0, help="how long the producer and the faults run")
    ap.add_argument("--seed", type=int, default=1, help="seeds the streams and the schedule of faults")
    ap.add_argument("--streams", type=int, default=10)
    ap.add_argument("--rate", type=float, default=20.0, help="messages per second, all streams together")
    ap.add_argument("--nodes", type=int, default=1, help="brokers: 1, or a cluster of 3 with a cluster's faults")
    ap.add_argument("--workers", type=int, default=1,
                    help="workers sharing the streams; above 1 the faults are rebalances: every 30-90 s a worker "
                         "stopped (SIGTERM or SIGKILL) and started again")
    ap.add_argument("--keep-dir", action="store_true", help="keep the broker's data, the states and the logs")
    ap.add_argument("--results", default=None, metavar="PATH",
                    help=f"write the verdict as a results file (e.g. {RESULTS_DIR.name}/bench_chaos.json under docs/)")
    args = ap.parse_args()
    seconds = args.minutes * 60
    tmp = Path(tempfile.mkdtemp(prefix="bench-chaos-"))
    ports = free_ports(2 * args.nodes)
    broker = LocalBroker(ports[0], ports[1], data_dir=tmp / "kafka", heap="384m" if args.nodes == 1 else "256m",
                         die_with_parent=True, nodes=args.nodes,
                         node_ports=list(zip(ports[0::2], ports[1::2], strict=True)) if args.nodes > 1 else None)
    s = make_settings(broker.bootstrap, str(tmp / "state"), explain_groups=2, emit_every=10, checkpoint_every=200,
                      checkpoint_store="kafka", checkpoint_key=Secret("k" * 32), max_label_delay=200,
                      change_warmup=200, change_min_samples=30, change_episode_gap=200, alpha=0.05)
    per_stream = int(seconds * args.rate / args.streams) + 50
    messages = stream_messages(args.streams, per_stream, args.seed)
    # a rebalance's recovery is timed from the workers' "partitions assigned" lines, logged at INFO
    workers = Workers(s, tmp, loglevel="info" if args.workers > 1 else "warning")
    producer = Producer(s, messages, args.rate, seconds)
    failed = True
    try:
        broker.start(timeout=180)
        ensure_topics(s)
        acts = schedule(args.seed, seconds, args.nodes, args.workers)
        say(f"{args.streams} streams, {args.rate:g} messages/s for {args.minutes:g} min; broker {broker.bootstrap}, "
            f"files in {tmp}")
        say("schedule: " + "; ".join(f"{t:.0f} s {a}" for t, a in acts))
        for i in range(1, args.workers + 1):
            workers.start(f"w{i}")
        producer.start()
        waits: list[tuple[str, NextOutputs]] = []
        done = chaos(acts, seconds, broker, workers, producer, random.Random(args.seed + 1), waits)
        producer.join(180)
        if producer.error is not None or producer.is_alive():
            raise RuntimeError("the producer did not finish") from producer.error
        say(f"producer done: {producer.sent} sends, {len(producer.acked)} messages acknowledged, "
            f"{producer.resent} sent again")
        produced_until = time.time()
        drain_start = time.monotonic()
        drained = drain(s, workers, timeout=max(600.0, seconds))
        say(f"{'drained' if drained else 'NOT drained'} {time.monotonic() - drain_start:.0f} s after the producer")
        workers.stop_all()
        topics = {t: collect_all(s, t, timeout=900) for t in OUTPUTS}
        record = recorded_arrivals(s)
        inputs = read_inputs(s)
        say(f"read {sum(len(m) for m in topics.values())} output messages and {len(record)} arrivals")
        t_ref = time.monotonic()
        ref = run_in_process(s, record)
        dead = expected_dead_letters(s, record)
        say(f"in-process reference on the recorded arrivals: {time.monotonic() - t_ref:.0f} s")
        rows = [check_arrivals(inputs, record, producer.acknowledged()), *check_outputs(topics, ref, dead)]
        print("\nfaults:\n  " + "\n  ".join(done))
        if workers.died:
            print("workers that exited by themselves:\n  " + "\n  ".join(workers.died))
        print("worker logs:\n  " + "\n  ".join(workers.logs()))
        for _, nxt in waits:
            nxt.join(nxt.timeout + 60)
        print("longest wait for a stream's next prediction after each fault:\n  " + "\n  ".join(
            f"{w:6.1f} s  after {what}" if (w := nxt.longest()) is not None else f"   n/a    after {what}"
            for what, nxt in waits))
        print(f"\n{table(rows)}\n")
        recovery = None
        late = []
        if args.workers > 1:
            recovery, late = rebalance_verdict(s, workers, waits, produced_until, len(ref.alerts))
        failed = not drained or bool(workers.died) or not all(r.ok for r in rows) or bool(late)
        verdict = ("EQUAL TO THE REFERENCE" + (", EACH ALERT PAGED ONCE, RECOVERIES IN TIME" if args.workers > 1 else "")
                   if not failed else "NOT EQUAL TO THE REFERENCE (or a worker died" +
                   (", an alert paged twice, or a check above FAILED)" if args.workers > 1 else ")"))
        print(verdict)
        if args.results:
            where = f"a cluster of {args.nodes} brokers" if args.nodes > 1 else "one broker"
            what = (f"Rebalances under load: {args.workers} workers on {where}, one stopped (SIGTERM or SIGKILL) and "
                    f"started again every 30-90 s" if args.workers > 1 else f"Chaos on {where}")
            path = write_results(
                args.results, "bench_chaos_rebalance" if args.workers > 1 else "bench_chaos",
                f"{what} for {args.minutes:g} min, {args.streams} streams at {args.rate:g} messages/s: "
                f"{verdict.lower()}",
                "the in-process reference on the arrivals the intake recorded (faults: " + "; ".join(
                    d.strip() for d in done) + ")",
                results_rows(rows, done, workers, waits, recovery))
            say(f"results written to {path}")
    finally:
        producer.stopping.set()
        workers.stop_all()
        broker.stop()
        if args.keep_dir or failed:
            print(f"files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
