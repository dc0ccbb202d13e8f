"""One Kafka worker against the same work in process, in instructions, not seconds.

    python tests/benchmarks/bench_worker_instructions.py [--models logistic,htr,hat] [--events 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_speed, _worker_runs
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's pipeline

CALLGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
#: how long the worker's instructions are counted while it is idle, before the events (seconds)
IDLE_S = 20.0


def instructions(pid: int) -> int:
    """The instructions process ``pid`` (running under callgrind) executed since its
    instrumentation went on, summed over its threads."""
    out = subprocess.run(["callgrind_control", "-e", str(pid)], capture_output=True, text=True, timeout=120).stdout
    counts = [int(m.replace(",", "")) for m in re.findall(r"^\s*Th\s+\d+\s+([\d,]+)", out, flags=re.M)]
    if not counts:
        raise RuntimeError(f"no counters from callgrind_control for {pid}: {out[-500:]}")
    return sum(counts)


def instrument(pid: int) -> None:
    subprocess.run(["callgrind_control", "-i", "on", str(pid)], capture_output=True, text=True, timeout=120,
                   check=True)


def zero(pid: int) -> None:
    subprocess.run(["callgrind_control", "-z", str(pid)], capture_output=True, text=True, timeout=120, check=True)


def child(name: str, n: int, bootstrap: str, state_dir: str) -> None:
    """The in-process loop of ``name`` on ``n`` events, counted (run under callgrind), then the
    in-process reference on the same events, counted apart."""
    from _worker_runs import in_process_worker, reference_run
    from bench_speed import events, stream_settings
    from helpers.pipeline_runs import make_settings
    from streamxai.schemas import FeatureEvent

    evs = [FeatureEvent(stream_id="bench", seq=i, ts=1.7e9 + i, x=x, y=y) for i, (x, y) in enumerate(events(name, n))]
    fields = {**stream_settings(name), "explain_groups": 1, "session_timeout_s": 30.0}
    # the modules a worker imports as it starts (river's model, scipy through river.optim):
    # imported here before counting, by the same loops on a few events with state of their own
    in_process_worker(make_settings(bootstrap, f"{state_dir}-warm-up", **fields), evs[:20])
    reference_run(make_settings(bootstrap, f"{state_dir}-ref-warm-up", **fields), evs[:20])
    instrument(os.getpid())
    in_process_worker(make_settings(bootstrap, state_dir, **fields), evs)
    handlers = instructions(os.getpid())
    zero(os.getpid())
    reference_run(make_settings(bootstrap, f"{state_dir}-ref", **fields), evs)
    print(json.dumps({"instructions": handlers, "reference": instructions(os.getpid())}), flush=True)


def in_process(name: str, n: int, bootstrap: str, tmp: str) -> tuple[int, int]:
    cmd = [*CALLGRIND, f"--callgrind-out-file={tmp}/{name}-in-process.out", sys.executable, __file__,
           "--child", name, str(n), bootstrap, f"{tmp}/{name}-in-process"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"the in-process child of {name} failed:\n{done.stdout[-1000:]}{done.stderr[-3000:]}")
    counts = json.loads(lines[-1])
    return counts["instructions"], counts["reference"]


def worker(name: str, n: int, bootstrap: str, tmp: str) -> tuple[int, float, float]:
    """The worker's instructions over ``n`` events of ``name``, its instructions a second while
    idle (measured before), and how long the run took."""
    from _worker_runs import _change_done
    from bench_speed import events, stream_settings
    from helpers.pipeline_runs import make_settings, wait_for_members
    from streamxai.kafka.config import ensure_topics
    from streamxai.kafka.io import consume, produce_events
    from streamxai.schemas import FeatureEvent
    from streamxai.worker import settings_env, stop_worker

    evs = [FeatureEvent(stream_id="bench", seq=i, ts=1.7e9 + i, x=x, y=y) for i, (x, y) in enumerate(events(name, n))]
    s = make_settings(bootstrap, f"{tmp}/{name}-worker", **{**stream_settings(name), "explain_groups": 1,
                                                             "session_timeout_s": 60.0})
    ensure_topics(s)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s), PYTHONHASHSEED="0")
    cmd = [*CALLGRIND, f"--callgrind-out-file={tmp}/{name}-worker.out", sys.executable, "-m", "streamxai.cli",
           "worker", "--roles", "model,explain,change", "--loglevel", "warning"]
    with open(f"{tmp}/{name}-worker.log", "ab") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_members(s, 1, timeout=900)
        instrument(proc.pid)
        time.sleep(1.0)
        zero(proc.pid)
        time.sleep(IDLE_S)
        idle = instructions(proc.pid) / IDLE_S
        zero(proc.pid)
        t0 = time.monotonic()
        produce_events(s, evs)
        want = (n // s.emit_every) * len(s.features) * len(s.explainers)  # every explanation of the run
        seen = 0
        for _rec in consume(s, [s.topic("explanations")], idle_timeout=900):
            seen += 1
            if seen >= want:
                break
        else:
            raise RuntimeError(f"the worker sent {seen} of {want} explanations")
        _change_done([s], want, timeout=900, poll_s=1.0)
        return instructions(proc.pid), idle, time.monotonic() - t0
    finally:
        stop_worker(proc, timeout=120)


def main() -> None:
    """``bench_speed.py --kafka`` compares a worker's rate with its handlers' in one process by the
    clock. On shared virtual machines a core runs the same code up to a third faster or slower
    from one minute to the next, more than the worker's transport is worth, so a small change
    to the transport cannot be seen by the clock.
    ``valgrind --tool=callgrind`` counts the instructions a process executes, whatever the clock
    and the other tenants do (and none while it waits).

    Per model, on a local broker (or ``$STREAMXAI_BOOTSTRAP``), with the settings and stream of
    ``bench_speed.py --kafka`` (``--events`` events of one stream):

    - ``in process``: ``_worker_runs.in_process_worker`` (the model, explain and change handlers,
      handler to handler, with checkpoints) in a child process under callgrind, counted from the
      first event to the last (``callgrind_control --instr=on``, then its counters read), after
      the same loop ran 20 events with handlers of their own: the modules a worker imports as it
      starts (its model's, and scipy's through ``river.optim``) are then
      imported in both, and each counts its own handlers' first event (a model created, its fast
      path compiled);
    - ``reference``: :func:`streamxai.reference.run_in_process` (the same join, explainers and
      change detector, without messages, metrics or checkpoints) on the same events in the same
      child, counted apart after the handlers, after a warm-up of its own on 20 events: the
      worker's and the handlers' instructions over it are ``bench_speed.py --kafka``'s ratios
      against the reference without the clock's noise, and without what a busier process
      costs in cache misses;
    - ``worker``: one worker (roles model, explain and drift) under callgrind, counted from the
      moment the benchmark starts producing the events (it has joined its group, idle) until its
      change agent has taken up every explanation, in all its threads (Python's, aiokafka's
      consumer thread, librdkafka's threads);
    - the worker's instructions per event beyond the in-process loop's, and the ratio (the
      in-process loop's instructions over the worker's): what the worker's rate would be against
      the in-process rate if an instruction cost the same in both;
    - the same less the worker's idle instructions over the run. What a worker does by the clock
      (fetches of empty partitions every 100 ms, heartbeats, periodic commits, the output
      producer's polls, the metrics page the benchmark polls once a second) comes about as often
      per second under callgrind as natively, while the run lasts about 50 times longer, so the
      first figure overstates the worker's share (an upper bound of its overhead). Its rate while
      idle is counted for ``IDLE_S`` seconds before the events and taken out at that rate over
      the whole run: that overstates the correction (a busy worker's fetches return records
      rather than nothing), so the second figure is an approximate lower bound; the clock's share
      can be of the size of the transport's, so neither figure alone decides a target.

    The ratio leaves out what instructions do not show: cache misses, system calls' time in the
    kernel, the broker's own CPU on the same cores, and time the worker waits (a fetch, a linger).
    The worker and the in-process child both start from nothing (fresh handlers); under callgrind
    Python runs about 50 times slower, so a model takes several minutes.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="logistic,htr,hat")
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        name, n, bootstrap, state_dir = args.child
        child(name, int(n), bootstrap, state_dir)
        return
    import river
    from _worker_runs import broker_for

    tmp = tempfile.mkdtemp(prefix="streamxai-bench-worker-instructions-")
    print(f"river {river.__version__}, Python {sys.version.split()[0]}; instructions (valgrind --tool=callgrind), "
          f"{args.events} events of one stream, one worker against the same handlers in one process")
    with broker_for(tmp) as bootstrap:
        for name in args.models.split(","):
            ours, ref = in_process(name, args.events, bootstrap, tmp)
            theirs, idle, took = worker(name, args.events, bootstrap, tmp)
            n = args.events
            busy = theirs - idle * took
            print(f"  {name:9s} in process {ours / n / 1e6:7.3f} M instructions an event; worker "
                  f"{theirs / n / 1e6:7.3f} M (+{(theirs - ours) / n / 1e3:.0f} k, {100 * (theirs - ours) / ours:.1f} %), "
                  f"ratio {ours / theirs:.3f}; idle {idle / 1e6:.1f} M a second over the run's {took:.0f} s; "
                  f"less that (a lower bound) {busy / n / 1e6:7.3f} M (+{(busy - ours) / n / 1e3:.0f} k), ratio {ours / busy:.3f}",
                  flush=True)
            print(f"  {'':9s} the in-process reference {ref / n / 1e6:7.3f} M instructions an event: the handlers in "
                  f"process {ours / ref:.3f}x it, the worker {theirs / ref:.3f}x it ({busy / ref:.3f}x less its idle "
                  "rate)", flush=True)


if __name__ == "__main__":
    main()
