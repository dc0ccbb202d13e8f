"""Where one worker waits: its CPU, its event loop's thread and its message counters along
the span that ``bench_speed.py --kafka`` times, in bins of wall time.

    python tests/benchmarks/bench_worker_wait.py [--model logistic] [--events 2000] [--bin 0.05]
        [--rounds=3] [--before DIR] [--bins]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import orjson  # noqa: E402
from _worker_runs import _cpu_seconds, broker_for, in_process_worker  # noqa: E402
from bench_speed import events, stream_settings  # noqa: E402
from helpers.pipeline_runs import make_settings, wait_for_members, worker_metrics  # noqa: E402
from streamxai.kafka.config import ensure_topics  # noqa: E402
from streamxai.kafka.io import consume, produce_events  # noqa: E402
from streamxai.schemas import FeatureEvent  # noqa: E402
from streamxai.worker import settings_env, stop_worker  # noqa: E402

#: counters shown per bin: (column, counter name, topic suffix); change: the explanations its
#: agent took up (from the drift feed, a report per record; before it, from explanations)
COLUMNS = (("feat", "messages_in", ".features"), ("arr", "messages_in", ".arrivals"),
           ("task", "messages_in", ".explain-tasks"), ("pred", "messages_out", ".predictions"),
           ("expl", "messages_out", ".explanations"), ("change", "explanations_seen", ""))


def column(counters: dict[str, float], prefix: str, suffix: str) -> float:
    return sum(v for k, v in counters.items()
               if (k == prefix or k.startswith(prefix + "{")) and k.rstrip("}").endswith(suffix))


def _schedstat(pid: int) -> tuple[float, float]:
    """``(on a core, waiting for one)`` seconds of thread ``pid`` of process ``pid``."""
    on, wait, _ = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
    return int(on) / 1e9, int(wait) / 1e9


def _spawn(s, src: str | None, log_file: str) -> subprocess.Popen:  # noqa: ANN001
    """A worker (every role) of this checkout, or of the files in ``src``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    if src:
        env["PYTHONPATH"] = src
    cmd = [sys.executable, "-m", "streamxai.cli", "worker", "--roles", "model,explain,change", "--loglevel", "warning"]
    with open(log_file, "ab") as log:
        return subprocess.Popen(cmd, env=env, cwd=src or None, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def timeline(s, evs: list, src: str | None, bin_s: float, tmp: str) -> dict:  # noqa: ANN001
    """One worker's run: its marks (s from the start of producing), CPU samples and counters per bin."""
    ensure_topics(s)
    proc = _spawn(s, src, f"{tmp}/w.log")
    cpu: list[tuple[float, float, float, float]] = []  # t, process CPU, loop thread on a core, waiting
    counts: list[tuple[float, dict]] = []
    marks: dict[str, float] = {}
    stop = threading.Event()
    try:
        wait_for_members(s, 1, timeout=120)
        n_values = len(s.features) * len(s.explainers)
        want = (len(evs) - 1) - len(evs) % s.emit_every
        t0 = time.perf_counter()

        def sample() -> None:
            next_count = t0
            while not stop.is_set():
                now = time.perf_counter()
                cpu.append((now - t0, _cpu_seconds([proc.pid]), *_schedstat(proc.pid)))
                if now >= next_count:
                    counts.append((now - t0, worker_metrics(s)["counters"]))
                    next_count += bin_s
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        produce_events(s, evs, first_delivered=lambda: marks.setdefault("first event on the broker",
                                                                         time.perf_counter() - t0))
        marks["all produced"] = time.perf_counter() - t0
        seen: set = set()
        n_expl = 0
        for rec in consume(s, [s.topic("explanations")], idle_timeout=180):
            n_expl += 1
            m = orjson.loads(rec.value)
            if m["seq"] >= want:
                seen.add((m["explainer"], m["feature"]))
                if len(seen) == n_values:
                    break
        marks["last explanation read here"] = time.perf_counter() - t0
        while not counts or counts[-1][1].get("explanations_seen", 0) < n_expl:
            time.sleep(0.01)
        marks["change agent done"] = counts[-1][0]
        stop.set()
        sampler.join()
    finally:
        stop.set()
        stop_worker(proc)
    return {"marks": marks, "cpu": cpu, "counts": counts}


def summary(run: dict) -> dict[str, float]:
    """Over the span (first event on the broker to the change agent done): wall, the worker's
    CPU, its loop's thread on a core, waiting for one, idle, and its longest idle stretch."""
    start, end = run["marks"]["first event on the broker"], run["marks"]["change agent done"]
    cpu = [c for c in run["cpu"] if start <= c[0] <= end]
    longest, stretch = 0.0, 0.0
    for a, b in zip(cpu, cpu[1:], strict=False):
        idle = (b[0] - a[0]) - (b[2] - a[2]) - (b[3] - a[3])
        stretch = stretch + (b[0] - a[0]) if idle > 0.8 * (b[0] - a[0]) else 0.0
        longest = max(longest, stretch)
    wall = cpu[-1][0] - cpu[0][0]
    ran, waited = cpu[-1][2] - cpu[0][2], cpu[-1][3] - cpu[0][3]
    return {"wall": wall, "cpu": cpu[-1][1] - cpu[0][1], "ran": ran, "waited": waited,
            "idle": wall - ran - waited, "longest idle": longest}


def print_bins(run: dict) -> None:
    for k, v in sorted(run["marks"].items(), key=lambda kv: kv[1]):
        print(f"    {v:6.2f} s  {k}")
    print("     from-to s   CPU   loop: ran wait idle " + " ".join(f"{c:>6s}" for c, _, _ in COLUMNS))
    prev = run["counts"][0]
    for t, c in run["counts"][1:]:
        in_bin = [x for x in run["cpu"] if prev[0] <= x[0] <= t]
        span = in_bin[-1][0] - in_bin[0][0] if len(in_bin) > 1 else 0.0
        busy, ran, waited = ((in_bin[-1][k] - in_bin[0][k]) / span if span else 0.0 for k in (1, 2, 3))
        deltas = [column(c, p, sfx) - column(prev[1], p, sfx) for _, p, sfx in COLUMNS]
        print(f"    {prev[0]:5.2f}-{t:5.2f}  {busy:4.0%}       {ran:4.0%} {waited:4.0%} {max(0.0, 1 - ran - waited):4.0%} "
              + " ".join(f"{d:6.0f}" for d in deltas))
        prev = (t, c)


def main() -> None:
    """One worker (all roles, ``fast_path = auto``) on a local broker, the stream of ``bench_speed.py``.
    From the moment the backlog is produced, a thread samples the worker process's CPU time and
    its main thread's (the event loop's) time on a core and waiting for one
    (``/proc/PID/task/PID/schedstat``, every 10 ms), and its counters (its metrics page, every
    ``--bin`` s: one request per bin, a little CPU of the worker's own). The span runs from the
    broker's acknowledgement of the first event to the bin in which the change agent had taken up
    every explanation (``bench_speed.py``'s end); in it the loop's thread was on a core, waiting
    for one (the machine's load) or idle (waiting for messages or the network: the waits to find).

    Each round runs the same handlers in this process (``bench_speed.py``'s baseline), then a
    worker of ``--before DIR`` (a copy of another version's files, e.g. ``git archive main | tar
    -x -C DIR``; run with ``DIR`` as its working directory) if given, then a worker of this
    checkout, and prints for each the wall ratio (in process / worker; and timed from the start of
    the benchmark's producer), the worker's CPU and its
    loop's idle time and longest idle stretch; then the medians. ``--bins`` prints the last
    round's bins: per bin the share of one core the worker used, how its loop's thread spent the
    bin (ran, waited for a core, idle) and the messages it took in and sent per topic.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="logistic")
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--bin", type=float, default=0.05)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", default="", help="a copy of another version's files: its worker too, each round")
    ap.add_argument("--bins", action="store_true", help="print the last round's bins")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="streamxai-bench-wait-")
    data = events(args.model, args.events)
    evs = [FeatureEvent(stream_id="bench", seq=i, ts=1.7e9 + i, x=x, y=y) for i, (x, y) in enumerate(data)]
    fields = {**stream_settings(args.model), "explain_groups": 1, "session_timeout_s": 30.0}
    sources = {**({"before": os.path.abspath(args.before)} if args.before else {}), "this checkout": None}
    results: dict[str, list[dict]] = {k: [] for k in sources}
    with broker_for(tmp) as bootstrap:
        for r in range(args.rounds):
            wall_in, _ = in_process_worker(make_settings(bootstrap, f"{tmp}/local{r}", **fields), evs)
            print(f"round {r + 1} (load average {os.getloadavg()[0]:.1f}): in process {wall_in:.2f} s")
            for label, src in sources.items():
                run = timeline(make_settings(bootstrap, f"{tmp}/{label}{r}".replace(" ", "-"), **fields), evs, src,
                               args.bin, tmp)
                res = {**summary(run), "ratio": wall_in / summary(run)["wall"],
                       "old clock": wall_in / run["marks"]["change agent done"]}
                results[label].append(res)
                print(f"  {label:13s} wall {res['wall']:.2f} s (ratio {res['ratio']:.2f}; {res['old clock']:.2f} timed from "
                      f"the producer's start), CPU {res['cpu']:.2f} s; "
                      f"loop: ran {res['ran']:.2f}, waited for a core {res['waited']:.2f}, idle {res['idle']:.2f} s "
                      f"(longest {res['longest idle']:.2f} s)")
                if args.bins and r == args.rounds - 1:
                    print_bins(run)
    print(f"{args.model}, {args.events} events, medians of {args.rounds} rounds:")
    for label, rs in results.items():
        med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        rounds = ", ".join(f"{x['ratio']:.2f}" for x in rs)
        print(f"  {label:13s} wall ratio {med['ratio']:.2f} (rounds {rounds}; {med['old clock']:.2f} timed from the "
              f"producer's start); "
              f"loop idle {med['idle']:.2f} s of {med['wall']:.2f}, longest {med['longest idle']:.2f} s")


if __name__ == "__main__":
    main()
