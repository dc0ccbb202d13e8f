"""Shared by the Kafka benchmarks: a worker's rate through a broker, and the same work per
event done in this process -- the worker's model, explain and drift handlers, handler to
handler, with checkpoints as configured, on events serialised beforehand (the producer's
part) -- as its baseline. Both as events per second of wall time and of CPU time (a worker's
from ``/proc``, summed over its threads)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
from _cpu_profile import START, STOP
from helpers.pipeline_runs import wait_for_members, worker_metrics

from pipeline.app import checkpoint_store
from pipeline.handlers import DriftHandler, ExplainHandler, ModelHandler, Source
from pipeline.kafka.config import ensure_topics
from pipeline.kafka.io import consume, produce_events
from pipeline.local.ports import free_port
from pipeline.settings import Settings
from pipeline.worker import settings_env, spawn_worker, stop_worker
from schemas import Headers, dumps

__all__ = ["in_process_worker", "kafka_workers", "broker_for", "broker_pids"]

#: the process ids of the local brokers :func:`broker_for` runs (none for $STREAMXAI_BOOTSTRAP):
#: on these machines the broker shares the worker's two cores, and :func:`kafka_workers` can say
#: how much of them it took meanwhile
broker_pids: list[int] = []


@contextlib.contextmanager
def broker_for(tmp: str):
    """The bootstrap address of $STREAMXAI_BOOTSTRAP, or of a local broker on free ports
    started here and stopped at the end."""
    from pipeline.local.broker import LocalBroker

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
    """``(wall, cpu)`` seconds for one worker's handlers to process ``events`` in this process."""
    Path(s.state_dir).mkdir(parents=True, exist_ok=True)
    store = checkpoint_store(s)
    handlers = {"features": ModelHandler(s, checkpoints=store), "explain-tasks": ExplainHandler(s, checkpoints=store),
                "drift-feed": DriftHandler(s, checkpoints=store)}
    raws = [(ev.stream_id.encode(), dumps(ev)) for ev in events]
    offsets: dict[tuple[str, int], int] = {}

    def feed(topic: str, partition: int, key: bytes | None, value: bytes, out_headers: Headers | None = None) -> None:
        off = offsets[(topic, partition)] = offsets.get((topic, partition), -1) + 1
        for out in handlers[topic].on_message(value, key, Source(topic, partition, off, headers=out_headers)):
            if out.topic in handlers:
                feed(out.topic, out.partition or 0, out.key, out.value, out.headers)

    t0, c0 = time.perf_counter(), time.process_time()
    for key, raw in raws:
        feed("features", 0, key, raw)
    return time.perf_counter() - t0, time.process_time() - c0


def _written(proc: subprocess.Popen, path: str, timeout: float = 30.0) -> None:
    """Ask the sampler of ``proc`` to write its samples to ``path``, and wait until it has."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    proc.send_signal(STOP)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the profiled worker wrote no samples to {path} within {timeout:g} s")
        time.sleep(0.05)


def _cpu_seconds(pids: list[int]) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def _profiled_worker(s: Settings, log_file: str, out: str, census: str = "") -> subprocess.Popen:
    """A worker (every role) run under the CPU sampler of ``_cpu_profile.py``, which writes to
    ``out`` (with ``census``, ``--census`` or ``--census-threads``, also the event loops' callbacks
    counted: ``_loop_census.py``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    sampler = str(Path(__file__).with_name("_cpu_profile.py"))
    cmd = [sys.executable, sampler, out, *([census] if census else []), "--", "-m", "pipeline.cli", "worker", "--roles", "model,explain,drift",
           "--loglevel", "warning"]
    with open(log_file, "ab") as log:
        return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def kafka_workers(s: Settings, events: list, n_workers: int, tmp: str, profile: str | None = None,
                  counters: dict[str, float] | None = None, census: str = "",
                  broker_cpu: list[float] | None = None) -> tuple[float, float]:
    """``(wall, cpu)`` seconds from the moment the broker has the backlog's first event until the drift agents
    have taken up every explanation of it, with ``n_workers`` fresh workers on ``s``'s broker
    (joined before, so start-up and group joins are not counted; the intake's and the drift
    agent's work are, as the in-process loop does the drift handler's). With ``profile`` (a
    path; one worker), the worker's CPU is sampled over the same span and written there
    (``_cpu_profile.breakdown`` reads it). ``counters`` takes the workers' counters at the end
    (summed over the workers). ``census`` (with ``profile``: ``--census`` or ``--census-threads``)
    also counts the callbacks its event loops run (``_loop_census.py``). ``broker_cpu`` takes the
    CPU seconds the local broker (:data:`broker_pids`) used over the same span, if there is one."""
    ensure_topics(s)
    each = [s.replace(web_port=free_port()) for _ in range(n_workers)]
    if profile:
        procs = [_profiled_worker(each[0], f"{tmp}/w0.log", profile, census)]
    else:
        procs = [spawn_worker(w, log_file=f"{tmp}/w{i}.log", loglevel="warning") for i, w in enumerate(each)]
    try:
        wait_for_members(s, n_workers, timeout=120)
        last: dict[str, int] = {}
        for ev in events:
            last[ev.stream_id] = ev.seq
        want = {sid: q - (q + 1) % s.emit_every for sid, q in last.items()}
        n_values = len(s.features) * len(s.explainers)
        seen: dict[str, set] = {}
        n_explanations = 0
        if profile:
            procs[0].send_signal(START)
        started: list[tuple[float, float, float]] = []  # the clock starts once the broker has the first event:
        # the benchmark's producer takes 0.5-1.6 s to start (idempotent), which is not the worker's time
        produce_events(s, events, first_delivered=lambda: started.append(
            (time.perf_counter(), _cpu_seconds([p.pid for p in procs]), _cpu_seconds(broker_pids))))
        t0, c0, b0 = started[0]
        for rec in consume(s, [s.topic("explanations")], idle_timeout=180):
            n_explanations += 1
            m = orjson.loads(rec.value)
            if m["seq"] >= want[m["stream_id"]]:
                seen.setdefault(m["stream_id"], set()).add((m["explainer"], m["feature"]))
                if len(seen) == len(last) and all(len(v) == n_values for v in seen.values()):
                    break
        else:
            raise RuntimeError(f"the workers did not finish: {({k: len(v) for k, v in seen.items()})} of "
                               f"{n_values} values")
        _drift_done(each, n_explanations)
        done = time.perf_counter() - t0, _cpu_seconds([p.pid for p in procs]) - c0
        if broker_cpu is not None and broker_pids:
            broker_cpu.append(_cpu_seconds(broker_pids) - b0)
        if counters is not None:
            for w in each:
                for k, v in worker_metrics(w)["counters"].items():
                    counters[k] = counters.get(k, 0) + v
        if profile:
            _written(procs[0], profile)
        return done
    finally:
        for p in procs:
            stop_worker(p)


def _drift_done(workers: list[Settings], n: int, timeout: float = 180.0, poll_s: float = 0.01) -> None:
    """Until the drift agents of ``workers`` have taken up ``n`` explanations in all (their
    metrics pages, polled every ``poll_s``)."""
    deadline = time.monotonic() + timeout
    while sum(worker_metrics(w)["counters"].get("explanations_seen", 0) for w in workers) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the drift agents did not take up {n} explanations within {timeout:g} s")
        time.sleep(poll_s)
