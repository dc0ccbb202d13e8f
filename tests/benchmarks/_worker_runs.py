"""Shared by the Kafka benchmarks: a worker's rate through a broker, and the same work per
event done in this process as its baselines: the worker's intake, model, explain and change handlers,
handler to handler, with checkpoints as configured, on events serialised beforehand (the
producer's part); and the in-process reference (:func:`streamxai.reference.run_in_process`:
the same join, explainers and change detector, with no messages, metrics or checkpoints). All
as events per second of wall time and of CPU time (a worker's from ``/proc``, summed over its
threads)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from helpers.pipeline_runs import wait_for_members, worker_metrics
from streamxai.app import checkpoint_store
from streamxai.handlers import ChangeHandler, ExplainHandler, IntakeHandler, ModelHandler, Source
from streamxai.handlers.intake import MAX_BATCH_RECORDS
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.ports import free_port
from streamxai.schemas import Headers, dumps
from streamxai.settings import Settings
from streamxai.worker import settings_env, spawn_worker, stop_worker

__all__ = ["in_process_worker", "reference_run", "kafka_workers", "broker_for", "broker_pids", "main_thread_sched", "explanations_wanted"]

#: the process ids of the local brokers :func:`broker_for` runs (none for $STREAMXAI_BOOTSTRAP):
#: on these machines the broker shares the worker's two cores, and :func:`kafka_workers` can say
#: how much of them it took meanwhile
broker_pids: list[int] = []


@contextlib.contextmanager
def broker_for(tmp: str):
    """The bootstrap address of $STREAMXAI_BOOTSTRAP, or of a local broker on free ports
    started here and stopped at the end."""
    from streamxai.local.broker import LocalBroker

    bootstrap = os.environ.get("STREAMXAI_BOOTSTRAP")
    if bootstrap:
        yield bootstrap
        return
    broker = LocalBroker(free_port(), free_port(), data_dir=f"{tmp}/kafka", die_with_parent=True)
    broker.start()
    pid = int(broker.pid_file.read_text().strip())
    broker_pids.append(pid)
    try:
        yield broker.bootstrap
    finally:
        broker_pids.remove(pid)
        broker.stop()


def in_process_worker(s: Settings, events: list) -> tuple[float, float]:
    """``(wall, cpu)`` seconds for one worker's handlers to process ``events`` in this process,
    taken up by the intake :data:`~streamxai.handlers.intake.MAX_BATCH_RECORDS` at a time, as a
    worker's intake takes up the fetched records of a backlog: each handler meets records of the
    shapes it meets in a worker (arrivals, explain tasks and drift-feed records of many messages
    each)."""
    Path(s.state_dir).mkdir(parents=True, exist_ok=True)
    store = checkpoint_store(s)
    intake = IntakeHandler(s)
    handlers = {"arrivals": ModelHandler(s, checkpoints=store), "explain-tasks": ExplainHandler(s, checkpoints=store),
                "drift-feed": ChangeHandler(s, checkpoints=store)}
    records = [(dumps(ev), ev.stream_id.encode(), Source("features", 0, i)) for i, ev in enumerate(events)]
    offsets: dict[tuple[str, int], int] = {}

    def feed(topic: str, partition: int, key: bytes | None, value: bytes, out_headers: Headers | None = None) -> None:
        off = offsets[(topic, partition)] = offsets.get((topic, partition), -1) + 1
        for out in handlers[topic].on_message(value, key, Source(topic, partition, off, headers=out_headers)):
            if out.topic in handlers:
                feed(out.topic, out.partition or 0, out.key, out.value, out.headers)

    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(0, len(records), MAX_BATCH_RECORDS):
        for out in intake.on_batch(records[i:i + MAX_BATCH_RECORDS]):
            feed(out.topic, out.partition or 0, out.key, out.value, out.headers)
    return time.perf_counter() - t0, time.process_time() - c0


def reference_run(s: Settings, events: list) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of the in-process reference on ``events`` (labels in line: the
    order of the events is the record of arrivals): the core's work a worker does for them."""
    from streamxai.reference import Recorded, run_in_process

    arrivals = [Recorded(ev) for ev in events]
    t0, c0 = time.perf_counter(), time.process_time()
    run_in_process(s, arrivals)
    return time.perf_counter() - t0, time.process_time() - c0


def main_thread_sched(pid: int) -> tuple[float, float, int]:
    """Process ``pid``'s main thread so far: seconds on a core, seconds runnable but waiting for
    one (``/proc/PID/task/PID/schedstat``), and the times it was switched out while runnable."""
    on_cpu, waiting, _ = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
    status = Path(f"/proc/{pid}/task/{pid}/status").read_text()
    switched = int(status.split("nonvoluntary_ctxt_switches:")[1].split()[0])
    return int(on_cpu) / 1e9, int(waiting) / 1e9, switched


def _cpu_seconds(pids: list[int]) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def _spawned(s: Settings, log_file: str, python: str) -> subprocess.Popen:
    """A worker (every role) run by the interpreter ``python``, whose environment imports its
    own ``streamxai`` (another checkout's virtualenv: ``bench_speed.py --kafka-main``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    cmd = [python, "-m", "streamxai.cli", "worker", "--roles", "model,explain,change", "--loglevel", "warning"]
    with open(log_file, "ab") as log:
        return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def kafka_workers(s: Settings, events: list, n_workers: int, tmp: str,
                  counters: dict[str, float] | None = None,
                  broker_cpu: list[float] | None = None,
                  sched: list[tuple[float, float, int]] | None = None, python: str = "",
                  backlog: bool = False) -> tuple[float, float]:
    """``(wall, cpu)`` seconds from the moment the broker has the backlog's first event until the change agents
    have taken up every explanation of it, with ``n_workers`` fresh workers on ``s``'s broker
    (joined before, so start-up and group joins are not counted; the intake's and the drift
    agent's work are, as the in-process loop does the change handler's). ``counters`` takes the
    workers' counters at the end (summed over the workers). ``broker_cpu`` takes the
    CPU seconds the local broker (:data:`broker_pids`) used over the same span, if there is one;
    ``sched`` (one worker) what :func:`main_thread_sched` counted for its main thread over it.
    ``python``: the workers run by that interpreter (another checkout's code), not this one's.
    ``backlog``: the events are all on the broker before the workers start, and the clock starts
    at their first prediction (their metrics page, looked at every 5 ms until then), as a worker
    that starts behind a backlog meets it."""
    ensure_topics(s)
    each = [s.replace(web_port=free_port()) for _ in range(n_workers)]
    if backlog:
        produce_events(s, events)
    if python:
        procs = [_spawned(w, f"{tmp}/w{i}.log", python) for i, w in enumerate(each)]
    else:
        procs = [spawn_worker(w, log_file=f"{tmp}/w{i}.log", loglevel="warning") for i, w in enumerate(each)]
    try:
        if not backlog:
            wait_for_members(s, n_workers, timeout=120)
        # watched on their metrics pages rather than by reading the explanations topic here, which
        # took this process and the broker 2.7 messages an event on the worker's two cores while it was timed
        want = explanations_wanted(s, events)
        started: list[tuple] = []

        def start() -> None:
            started.append((time.perf_counter(), _cpu_seconds([p.pid for p in procs]), _cpu_seconds(broker_pids),
                            main_thread_sched(procs[0].pid)))

        if backlog:
            deadline = time.monotonic() + 120
            while not _predicted(each):
                if time.monotonic() > deadline:
                    raise RuntimeError("the workers made no prediction within 120 s of starting")
                time.sleep(0.005)
            start()
        else:
            # the clock starts once the broker has the first event: the benchmark's producer
            # takes 0.5-1.6 s to start (idempotent), which is not the worker's time
            produce_events(s, events, first_delivered=start)
        t0, c0, b0, s0 = started[0]
        _change_done(each, want)
        done = time.perf_counter() - t0, _cpu_seconds([p.pid for p in procs]) - c0
        if sched is not None:
            sched.append(tuple(b - a for a, b in zip(s0, main_thread_sched(procs[0].pid), strict=True)))  # type: ignore[arg-type]
        if broker_cpu is not None and broker_pids:
            broker_cpu.append(_cpu_seconds(broker_pids) - b0)
        if counters is not None:
            for w in each:
                for k, v in worker_metrics(w)["counters"].items():
                    counters[k] = counters.get(k, 0) + v
        return done
    finally:
        for p in procs:
            stop_worker(p)


def _predicted(workers: list[Settings]) -> int:
    """The predictions ``workers`` made so far (0 while a metrics page is not up yet)."""
    try:
        return sum(worker_metrics(w, timeout=1.0)["counters"].get("predictions", 0) for w in workers)
    except OSError:
        return 0


def explanations_wanted(s: Settings, events: list) -> int:
    """The explanations the change agents take up for ``events``: every report of every stream
    (one every emit_every events, one value per explainer and feature), as they count them."""
    per_stream: dict[str, int] = {}
    for ev in events:
        per_stream[ev.stream_id] = per_stream.get(ev.stream_id, 0) + 1
    return sum(n // s.emit_every for n in per_stream.values()) * len(s.features) * len(s.explainers)


def _change_done(workers: list[Settings], n: int, timeout: float = 180.0, poll_s: float = 0.01) -> None:
    """Until the change agents of ``workers`` have taken up ``n`` explanations in all (their
    metrics pages). Each look costs a worker CPU on the event loop its agents run on, which the
    in-process loop does not pay, and a look every 10 ms would be a noticeable share of a short
    run. So it sleeps half of
    what the rest should take at the rate seen since the last look, twice as long as the last
    time while the count does not move, at most 0.2 s and at least ``poll_s``: the end is still
    seen within ``poll_s``, after 10-20 looks."""
    deadline = time.monotonic() + timeout
    before: tuple[float, int] | None = None
    wait, longest = poll_s, max(0.2, poll_s)
    while True:
        seen = sum(worker_metrics(w)["counters"].get("explanations_seen", 0) for w in workers)
        now = time.monotonic()
        if seen >= n:
            return
        if now > deadline:
            raise RuntimeError(f"the change agents did not take up {n} explanations within {timeout:g} s")
        if before is not None and seen > before[1]:
            rate = (seen - before[1]) / (now - before[0])
            wait = max(poll_s, min(0.5 * (n - seen) / rate, longest))
        else:
            wait = min(2 * wait, longest)
        before = (now, seen)
        time.sleep(wait)
