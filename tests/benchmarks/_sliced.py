"""The in-process loop and one Kafka worker taking turns on the machine, in slices of a few
seconds (``bench_speed.py --kafka --kafka-sliced [--kafka-slice-s 2]``).
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["sliced_run", "SLICE_S"]

#: how long each side runs before the other takes its turn (seconds)
SLICE_S = 2.0
#: the most a round's turns may take in all (seconds); then it fails, saying how far the worker got
TIMEOUT_S = 900.0
#: how often the worker's metrics page is looked at in the turn its end is expected in (seconds)
NEAR_POLL_S = 0.02


def _spawn_loop(s, events: list, tmp: str, name: str) -> subprocess.Popen:
    """The in-process loop in a child process, ready (imports done, 20 events run) and waiting
    for a line on its standard input to start."""
    from streamxai.worker import settings_env

    path = Path(tmp) / f"{name}.events.pickle"
    path.write_bytes(pickle.dumps(events))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    with open(Path(tmp) / f"{name}.loop.log", "ab") as log:
        child = subprocess.Popen([sys.executable, __file__, "--in-process-child", str(path)], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    line = child.stdout.readline()  # type: ignore[union-attr]
    if line.strip() != "ready":
        child.kill()
        raise RuntimeError(f"the in-process loop's child did not start ({line!r}); see {tmp}/{name}.loop.log")
    return child


def _loop_child(events_path: str) -> None:
    """The child of :func:`_spawn_loop`: the settings from its environment."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from _worker_runs import in_process_worker
    from streamxai.settings import load_settings

    s = load_settings(None, env=os.environ)
    events = pickle.loads(Path(events_path).read_bytes())
    in_process_worker(s.replace(state_dir=f"{s.state_dir}-warm-up"), events[:20])
    print("ready", flush=True)
    sys.stdin.readline()
    c0 = time.process_time()
    in_process_worker(s, events)
    print(json.dumps({"end": time.monotonic(), "cpu": time.process_time() - c0}), flush=True)


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def sliced_run(s_loop, s_worker, events: list, tmp: str, name: str, worker_first: bool = False,
               slice_s: float = SLICE_S) -> dict:
    """One round (see below): ``wall_in``, ``cpu_in``, ``wall_k``, ``cpu_k``, ``broker``
    (the broker's CPU seconds in the worker's turns), ``sched`` (the worker's main thread,
    :func:`_worker_runs.main_thread_sched`) and ``turns`` (how many each had).

    Run one after the other, the two sides of ``bench_speed.py --kafka`` see different machines: a
    core of these shared virtual machines runs the same loop up to a third faster or slower from
    one minute to the next, so a round's ratio spreads far wider than the transport's share. Here the two run in turns instead, each stopped (``SIGSTOP``) while the other
    runs, so both see the machine of the same minute:

    - **the in-process loop** (:func:`_worker_runs.in_process_worker`) in a child process of its
      own, which has imported everything and run 20 events with handlers of their own before its
      first turn; its time is the sum of its turns, the last one cut at the moment it finished
      (its own ``time.monotonic()``, which every process of the machine shares);
    - **the worker and the local broker**: the worker joins its group, is stopped, and the backlog
      is produced; then the worker and the broker run in the worker's turns and are stopped in the
      loop's (the loop has no broker to share the cores with). The worker's time is the
      sum of its turns until its change agent has taken up every explanation: its metrics page is
      looked at at the end of each turn (a fraction of a millisecond of the worker's CPU) and every 20 ms
      in the turn its rate says it ends in, so the end is seen within 20 ms.

    Each side's CPU is counted over its own turns (the worker's process and the broker's from
    ``/proc``; the loop's its own ``time.process_time``).

    Every turn costs the worker more than the loop, so short turns count against the worker: a
    stopped worker's timers (heartbeats, commits every 2.8 s, the idle fetch's wait) run by the
    wall clock and come twice as often per second of its own running, each resumed turn starts
    with cold caches for the threads of two processes (the worker's, the broker's) rather than one,
    and the worker waits for its next fetch (up to ``FETCH_MAX_WAIT_MS``, 100 ms) before it has
    records again. So turns are 2 s by default, about four a run: longer turns cost the worker
    less, and a short run is mostly these costs.
    """
    from _worker_runs import _cpu_seconds, broker_pids, explanations_wanted, main_thread_sched
    from helpers.pipeline_runs import wait_for_members, worker_metrics
    from streamxai.kafka.config import ensure_topics
    from streamxai.kafka.io import produce_events
    from streamxai.local.ports import free_port
    from streamxai.worker import spawn_worker, stop_worker

    ensure_topics(s_worker)
    loop = _spawn_loop(s_loop, events, tmp, name)
    w = s_worker.replace(web_port=free_port())
    proc = spawn_worker(w, log_file=f"{tmp}/{name}.log", loglevel="warning")
    brokers = list(broker_pids)
    want = explanations_wanted(w, events)
    try:
        wait_for_members(s_worker, 1, timeout=120)
        _signal([proc.pid], signal.SIGSTOP)  # its clock is its turns only: the backlog is produced meanwhile
        produce_events(w, events)
        c0, b0, s0 = _cpu_seconds([proc.pid]), _cpu_seconds(brokers), main_thread_sched(proc.pid)
        out: dict = {"wall_in": 0.0, "wall_k": 0.0, "turns": [0, 0]}
        started, seen = False, 0
        deadline = time.monotonic() + TIMEOUT_S
        while "cpu_in" not in out or "cpu_k" not in out:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the turns did not end within {TIMEOUT_S:g} s (the worker's change agent had taken "
                                   f"up {seen} of {want} explanations; see {tmp}/{name}.log)")
            for side in (("k", "in") if worker_first else ("in", "k")):
                if side == "in" and "cpu_in" not in out:
                    _signal(brokers, signal.SIGSTOP)
                    t0 = time.monotonic()
                    if started:
                        _signal([loop.pid], signal.SIGCONT)
                    else:
                        loop.stdin.write("go\n")  # type: ignore[union-attr]
                        loop.stdin.flush()  # type: ignore[union-attr]
                        started = True
                    ready, _, _ = select.select([loop.stdout], [], [], slice_s)
                    if ready:  # it finished in this turn
                        done = json.loads(loop.stdout.readline())  # type: ignore[union-attr]
                        out["wall_in"] += done["end"] - t0
                        out["cpu_in"] = done["cpu"]
                    else:
                        _signal([loop.pid], signal.SIGSTOP)
                        out["wall_in"] += time.monotonic() - t0
                    out["turns"][0] += 1
                    _signal(brokers, signal.SIGCONT)
                elif side == "k" and "cpu_k" not in out:
                    t0 = time.monotonic()
                    _signal([proc.pid], signal.SIGCONT)
                    end = t0 + slice_s
                    while True:
                        now = time.monotonic()
                        rate = seen / out["wall_k"] if out["wall_k"] else 0.0
                        near = rate > 0 and now + (want - seen) / rate < end + NEAR_POLL_S
                        time.sleep(max(0.0, min(end - now, NEAR_POLL_S) if near else end - now))
                        seen = worker_metrics(w)["counters"].get("explanations_seen", 0)
                        now = time.monotonic()
                        if seen >= want:
                            out["cpu_k"] = _cpu_seconds([proc.pid]) - c0
                            out["broker"] = _cpu_seconds(brokers) - b0
                            out["sched"] = tuple(b - a for a, b in zip(s0, main_thread_sched(proc.pid), strict=True))
                            break
                        if now >= end:
                            break
                    _signal([proc.pid], signal.SIGSTOP)
                    out["wall_k"] += now - t0
                    out["turns"][1] += 1
        return out
    finally:
        _signal([proc.pid, loop.pid, *brokers], signal.SIGCONT)
        loop.kill()
        loop.wait()
        stop_worker(proc)


if __name__ == "__main__" and sys.argv[1:2] == ["--in-process-child"]:
    _loop_child(sys.argv[2])
