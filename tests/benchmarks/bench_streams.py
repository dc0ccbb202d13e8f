"""Many streams per worker: memory per stream, events per second and the CPU of idle streams,
for N small streams at default settings, through Kafka (one worker, a local broker on free
ports) and the same handlers in process, in one run; then the worker's stop and the checkpoints
it leaves on disk, and with ``--max-live`` the peak memory under ``max_live_streams``.

    python tests/benchmarks/bench_streams.py [--streams 100,1000,10000] [--models hat,logistic]
        [--events 120] [--idle-s 5] [--skip hat:10000] [--main-src DIR] [--no-kafka] [--no-write]
        [--max-live L] [--burst B]

Each stream gets ``--events`` events (round-robin over the streams, one Agrawal sequence dealt
out; ``--burst B``: B events of a stream at a time), enough to fill its explainers' reservoirs
(``storage_size`` 100) and grids with the default of 120. In process, a fresh child process runs
the worker's three handlers (model, explain, change, with the file checkpoint store a worker
has) and reports its resident memory before the streams (after one warm-up stream, so imports
and caches are not counted), after them and at its peak (VmHWM), its CPU per event, and the time
the checkpoints of a stop take (every state changed since its last checkpoint) and their bytes
on disk. The model's own memory is measured apart: the traced allocations (``tracemalloc``) of a
model built and taught a sampled stream's events, times the models a stream holds (the model
stage's and one replica per explain group), so "beyond the models" is per-stream memory minus
those. Through Kafka: the worker's resident memory when it has joined (no streams) and once the
change agent has taken every explanation of the backlog, its events per second of wall time and
of CPU, and its CPU while every stream is idle for ``--idle-s`` seconds, against the same
worker's CPU over as long before any stream came (the baseline of a worker without streams);
then how long a SIGTERM takes to stop it, against ``shutdown_timeout_s``, and its checkpoints'
bytes per stream, newest and previous ones.

``--max-live L`` runs each case of more than L streams again with ``max_live_streams=L``, in
process and through Kafka: its peak memory over the start, against what L streams cost without
a limit (a run of L streams in the same run, in process and through Kafka). ``--limit-only``
runs only those; ``--append`` keeps the rows of the results file this run does not measure. With round-robin dealing every event of a stream past the limit
restores its state and evicts another (a checkpoint read and one written a stage); ``--burst``
keeps a stream's events together, as streams that are busy for a while and then quiet are.
``--main-src DIR`` runs the in-process children with the code in DIR too (a copy of main's
files), in the same run, as the "before". Writes ``docs/results/bench_streams.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

CHILD = "--child" in sys.argv
if not CHILD:  # this checkout's pipeline and the tests' helpers; a child runs the code on its PYTHONPATH
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

AGRAWAL = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]
#: name -> (the stream's settings besides the defaults, label)
MODELS = {
    "hat": ({}, "HoeffdingAdaptiveTreeClassifier(grace_period=50) (the default)"),
    "logistic": ({"model": "river.linear_model.LogisticRegression", "model_params": {}}, "LogisticRegression()"),
}
MODEL_SAMPLE = 10  # streams whose model is rebuilt apart to measure its size
MB = 1024 * 1024


def rss_bytes(pid: int | str = "self") -> int:
    """Resident memory of process ``pid`` (``/proc/PID/status``, VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def dealt(n_streams: int, n_events: int, seed: int = 7, burst: int = 1):
    """``(stream index, seq, x, y)``: one Agrawal sequence dealt out to the streams round-robin,
    ``burst`` events of a stream at a time (1: event ``k`` to stream ``k % n_streams``)."""
    from river.datasets import synth

    gen = iter(synth.Agrawal(classification_function=1, seed=seed).take(n_streams * n_events))
    for first in range(0, n_events, burst):
        for i in range(n_streams):
            for seq in range(first, min(first + burst, n_events)):
                x, y = next(gen)
                yield i, seq, {f: float(v) for f, v in x.items()}, int(y)


def peak_rss_bytes(pid: int | str = "self") -> int:
    """The most resident memory process ``pid`` has had since :func:`reset_peak` (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def reset_peak(pid: int | str = "self") -> None:
    """Start the peak resident memory of process ``pid`` (VmHWM) again from its memory now."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def checkpoint_disk(state_dir: str) -> dict:
    """The checkpoints under ``state_dir``: their bytes, and how many are newest ones (``.ckpt``)
    and previous ones (``.prev``)."""
    files = [p for p in Path(state_dir).rglob("*") if p.suffix in (".ckpt", ".prev")]
    return {"bytes": sum(p.stat().st_size for p in files), "ckpt": sum(p.suffix == ".ckpt" for p in files),
            "prev": sum(p.suffix == ".prev" for p in files)}


def stream_settings(model: str, **over):
    from streamxai.settings import Settings

    return Settings(features=AGRAWAL, **MODELS[model][0], **over)


# --- in process (a child process of its own: its memory is the streams') ------------------------
def child_main(args: argparse.Namespace) -> None:
    """Run by the parent: the worker's handlers over ``--events`` events of each of ``--child-streams``
    streams in this process; prints one JSON line."""
    from streamxai.app import checkpoint_store
    from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler, Source
    from streamxai.schemas import FeatureEvent, dumps

    try:
        from streamxai.handlers import checkpoint_changed
    except ImportError:  # (an older checkout, --main-src): every changed state, in its order
        def checkpoint_changed(handlers, until=None):
            return sum(h.checkpoint_all() for h in handlers), 0

    model, n, e = args.child, args.child_streams, args.events
    with tempfile.TemporaryDirectory(prefix="streamxai-bench-streams-") as tmp:
        s = stream_settings(model, state_dir=tmp, max_live_streams=args.child_max_live)
        store = checkpoint_store(s)
        handlers = {"features": ModelHandler(s, checkpoints=store), "explain-tasks": ExplainHandler(s, checkpoints=store),
                    "drift-feed": ChangeHandler(s, checkpoints=store)}
        offsets: dict[tuple[str, int], int] = {}

        def feed(topic: str, partition: int, key: bytes | None, value: bytes, headers=None) -> None:
            off = offsets[(topic, partition)] = offsets.get((topic, partition), -1) + 1
            for out in handlers[topic].on_message(value, key, Source(topic, partition, off, headers=headers)):
                if out.topic in handlers:
                    feed(out.topic, out.partition or 0, out.key, out.value, out.headers)

        def event(sid: str, seq: int, x: dict, y: int) -> tuple[bytes, bytes]:
            return sid.encode(), dumps(FeatureEvent(stream_id=sid, seq=seq, ts=1.7e9 + seq, x=x, y=y))

        for _, seq, x, y in dealt(1, e, seed=1):  # a warm-up stream: imports, caches, kernels
            feed("features", 0, *event("warm", seq, x, y))
        gc.collect()
        rss0 = rss_bytes()
        reset_peak()
        sample: dict[int, list] = {}
        cpu = 0.0
        for i, seq, x, y in dealt(n, e, burst=args.burst):
            if i < MODEL_SAMPLE:
                sample.setdefault(i, []).append((x, y))
            key, raw = event(f"s{i}", seq, x, y)
            c0 = time.process_time()
            feed("features", 0, key, raw)
            cpu += time.process_time() - c0
        gc.collect()
        rss1, peak = rss_bytes(), peak_rss_bytes()
        t0 = time.perf_counter()
        written, _ = checkpoint_changed(list(handlers.values()))  # as a worker's stop does, with time enough
        stop_s = time.perf_counter() - t0
        print(json.dumps({"rss_start": rss0, "rss_built": rss1, "rss_peak": peak, "cpu": cpu, "events": n * e,
                          "model_bytes": model_bytes(s, list(sample.values())),
                          "models_per_stream": 1 + s.explain_groups,
                          "states": [len(h.states) for h in handlers.values()],
                          "stop_checkpoints": written, "stop_s": stop_s, "disk": checkpoint_disk(tmp)}))


def model_bytes(s, streams: list[list]) -> float:
    """The mean traced memory of a model of settings ``s`` built and taught each stream's
    events (predicting each first, as the model stage does)."""
    from streamxai.modelspec import build_model

    sizes = []
    for events in streams:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        m = build_model(s.model, s.model_params, s.model_seed)
        for x, y in events:
            m.predict_proba_one(x)
            m.learn_one(x, y)
        gc.collect()
        sizes.append(tracemalloc.get_traced_memory()[0] - before)
        tracemalloc.stop()
        del m
    return sum(sizes) / len(sizes)


def in_process(model: str, n: int, args: argparse.Namespace, src: str | None = None, max_live: int = 0) -> dict:
    """The in-process child's report (``src``: the code in that directory, e.g. main's; ``max_live``:
    its ``max_live_streams``)."""
    env = dict(os.environ, PYTHONPATH=src) if src else dict(os.environ)
    cmd = [sys.executable, __file__, "--child", model, "--child-streams", str(n), "--events", str(args.events),
           "--child-max-live", str(max_live), "--burst", str(args.burst)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=src or None, check=False)
    if done.returncode:
        raise RuntimeError(f"the in-process child failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["mb_per_stream"] = (out["rss_built"] - out["rss_start"]) / n / MB
    out["peak_mb"] = (out["rss_peak"] - out["rss_start"]) / MB
    out["model_mb"] = out["model_bytes"] / MB
    out["beyond_mb"] = out["mb_per_stream"] - out["models_per_stream"] * out["model_mb"]
    out["events_per_s"] = out["events"] / out["cpu"]
    out["disk_mb_per_stream"] = out["disk"]["bytes"] / n / MB
    return out


# --- through Kafka ------------------------------------------------------------------------
def through_kafka(model: str, n: int, args: argparse.Namespace, bootstrap: str, tmp: str, max_live: int = 0) -> dict:
    """One worker on ``bootstrap`` (``max_live``: its ``max_live_streams``) taking the backlog of
    ``n`` streams: its memory (and peak), rates and idle CPU; then how long its stop took, and the
    checkpoints it leaves on disk."""
    import re

    from _worker_runs import _change_done
    from helpers.pipeline_runs import wait_for_members
    from streamxai.kafka.config import ensure_topics
    from streamxai.kafka.io import produce_events
    from streamxai.local.ports import free_port
    from streamxai.schemas import FeatureEvent
    from streamxai.worker import spawn_worker, stop_worker

    run = uuid.uuid4().hex[:8]
    s = stream_settings(model, bootstrap_servers=bootstrap, topic_prefix=f"bs-{run}.", app_id=f"bs-{run}",
                        web_port=free_port(), state_dir=f"{tmp}/state-{run}", session_timeout_s=30.0,
                        max_live_streams=max_live)
    ensure_topics(s)
    log_file = f"{tmp}/worker-{run}.log"
    proc = spawn_worker(s, log_file=log_file, loglevel="warning")
    try:
        wait_for_members(s, 1, timeout=120)
        time.sleep(2.0)  # the first fetches and metadata settle
        c0 = cpu_seconds(proc.pid)
        time.sleep(args.idle_s)
        idle_before = (cpu_seconds(proc.pid) - c0) / args.idle_s
        rss0 = rss_bytes(proc.pid)
        reset_peak(proc.pid)
        started: list[tuple[float, float]] = []
        chunk: list = []

        def send() -> None:
            produce_events(s, chunk, first_delivered=None if started else lambda: started.append(
                (time.perf_counter(), cpu_seconds(proc.pid))))
            chunk.clear()

        for i, seq, x, y in dealt(n, args.events, burst=args.burst):
            chunk.append(FeatureEvent(stream_id=f"s{i}", seq=seq, ts=1.7e9 + seq, x=x, y=y))
            if len(chunk) >= 20_000:
                send()
        send()
        want = n * (args.events // s.emit_every) * len(s.features) * len(s.explainers)
        _change_done([s], want, timeout=max(180.0, n * args.events / 50))
        t0, cpu0 = started[0]
        wall, cpu = time.perf_counter() - t0, cpu_seconds(proc.pid) - cpu0
        rss1, peak = rss_bytes(proc.pid), peak_rss_bytes(proc.pid)
        time.sleep(2.0)  # the last commits and flushes
        c0 = cpu_seconds(proc.pid)
        time.sleep(args.idle_s)
        idle_after = (cpu_seconds(proc.pid) - c0) / args.idle_s
        stopped = time.perf_counter()
        code = stop_worker(proc, timeout=s.shutdown_timeout_s + 30)
        stop_s = time.perf_counter() - stopped
        left = re.search(r"(\d+) states changed since their last checkpoint were not checkpointed",
                         Path(log_file).read_text(errors="replace"))
        return {"rss_start": rss0, "rss_built": rss1, "mb_per_stream": (rss1 - rss0) / n / MB,
                "peak_mb": (peak - rss0) / MB,
                "events_per_s": n * args.events / wall, "cpu_events_per_s": n * args.events / cpu,
                "idle_cpu": 100 * idle_after, "idle_cpu_no_streams": 100 * idle_before,
                "stop_s": stop_s, "stop_code": code, "stop_left": int(left.group(1)) if left else 0,
                "shutdown_timeout_s": s.shutdown_timeout_s, "disk": checkpoint_disk(s.state_dir)}
    finally:
        stop_worker(proc)


def kafka_rows(case: str, n: int, mine: dict | None, k: dict) -> list[dict]:
    """Prints the worker's figures of ``case`` and gives their rows, each against the same run's
    in-process figure (memory, CPU per event; none without ``mine``) or the same worker before any
    stream (idle CPU)."""
    from _results import result_row

    m = mine or {}
    print(f"  worker: {k['mb_per_stream']:.3f} MB per stream (RSS {k['rss_start'] / MB:.0f} -> "
          f"{k['rss_built'] / MB:.0f} MB), {k['events_per_s']:.0f} events/s ({k['cpu_events_per_s']:.0f} of CPU), "
          f"idle CPU {k['idle_cpu']:.2f}% with {n} idle streams, {k['idle_cpu_no_streams']:.2f}% with none"
          + (f"; in process {m['mb_per_stream']:.3f} MB per stream, {m['events_per_s']:.0f} events/s of CPU" if m else ""))
    rows = [result_row(case, "worker: MB per stream", round(k["mb_per_stream"], 4), "MB",
                       round(m["mb_per_stream"], 4) if m.get("mb_per_stream", 0) > 0 else None)]
    if m:
        beyond = k["mb_per_stream"] - m["models_per_stream"] * m["model_mb"]
        rows.append(result_row(case, "worker: MB per stream beyond the models", round(beyond, 4), "MB"))
    return rows + [
            result_row(case, "worker: events/s", round(k["events_per_s"], 1), "events/s"),
            result_row(case, "worker: events/s of CPU", round(k["cpu_events_per_s"], 1), "events/s",
                       round(m["events_per_s"], 1) if m else None),
            result_row(case, "worker: idle CPU %", round(k["idle_cpu"], 3), "%",
                       round(k["idle_cpu_no_streams"], 3) if k["idle_cpu_no_streams"] > 0 else None),
            *stop_rows(case, n, k)]


def stop_rows(case: str, n: int, k: dict) -> list[dict]:
    """Prints how the worker of ``case`` stopped and what it left on disk, and gives their rows:
    the stop against ``shutdown_timeout_s``."""
    from _results import result_row

    d = k["disk"]
    print(f"  worker stop: {k['stop_s']:.1f} s (shutdown_timeout_s {k['shutdown_timeout_s']:g}, exit code "
          f"{k['stop_code']}, {k['stop_left']} changed states left to replay); checkpoints on disk "
          f"{d['bytes'] / MB:.0f} MB, {d['bytes'] / n / MB:.3f} MB per stream ({d['ckpt']} newest, {d['prev']} previous)")
    return [result_row(case, "worker: stop s", round(k["stop_s"], 2), "s", k["shutdown_timeout_s"]),
            result_row(case, "worker: changed states left to replay at the stop", k["stop_left"], "states"),
            result_row(case, "worker: checkpoint disk MB per stream", round(d["bytes"] / n / MB, 4), "MB"),
            result_row(case, "worker: previous checkpoints kept per stream", round(d["prev"] / n, 3), "files")]


def limit_rows(case: str, n: int, limit: int, mine: dict, live: dict, main_: dict | None) -> list[dict]:
    """Prints the in-process figures of ``case`` run with ``max_live_streams=limit`` and gives their
    rows: its peak memory against what ``limit`` streams cost without a limit (``live``), the same
    run; with ``main_``, main's code's peak."""
    from _results import result_row

    live_mb = live["rss_built"] / MB - live["rss_start"] / MB
    print(f"  in process, max_live_streams={limit}: peak {mine['peak_mb']:.0f} MB over the start (at rest "
          f"{mine['mb_per_stream'] * n:.0f} MB), against {live_mb:.0f} MB for {limit} streams without a limit: ratio "
          f"{mine['peak_mb'] / live_mb:.2f}" + (f"; main's code: peak {main_['peak_mb']:.0f} MB, ratio "
                                               f"{main_['peak_mb'] / live_mb:.2f}" if main_ else "")
          + f"; {mine['events_per_s']:.0f} events/s of CPU")
    rows = [result_row(case, "in process: peak MB (limit) vs MB of that many streams", round(mine["peak_mb"], 1), "MB",
                       round(live_mb, 1)),
            result_row(case, "in process: events/s of CPU", round(mine["events_per_s"], 1), "events/s"),
            result_row(case, "in process: checkpoint disk MB per stream", round(mine["disk_mb_per_stream"], 4), "MB")]
    if main_:
        rows.append(result_row(case, "in process, main's code: peak MB (limit) vs MB of that many streams",
                               round(main_["peak_mb"], 1), "MB", round(live_mb, 1)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="100,1000,10000", help="numbers of streams, comma-separated")
    ap.add_argument("--models", default="hat,logistic", help=f"of {', '.join(MODELS)}")
    ap.add_argument("--events", type=int, default=120, help="events per stream")
    ap.add_argument("--idle-s", type=float, default=5.0, help="seconds the worker's idle CPU is measured over")
    ap.add_argument("--skip", action="append", default=[], metavar="MODEL:N",
                    help="leave out one case, such as hat:10000 (repeatable)")
    ap.add_argument("--main-src", default="", help="a copy of main's files: the in-process child with that code too")
    ap.add_argument("--max-live", type=int, default=0, metavar="L",
                    help="also run each case with max_live_streams=L: its peak memory against L streams without one")
    ap.add_argument("--worker-only-above", type=int, default=10**9, metavar="N",
                    help="cases of more than N streams run only the worker (no in-process runs, no limit)")
    ap.add_argument("--limit-only", action="store_true", help="only the runs of --max-live (and their baselines)")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of docs/results/bench_streams.json that this run does not measure again")
    ap.add_argument("--burst", type=int, default=1, help="events of a stream dealt out at a time (1: round-robin)")
    ap.add_argument("--no-kafka", action="store_true", help="only the in-process runs")
    ap.add_argument("--no-write", action="store_true", help="do not write docs/results/bench_streams.json")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--child-streams", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--child-max-live", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args)
        return

    import contextlib

    from _results import RESULTS_DIR, result_row, write_results
    from _worker_runs import broker_for

    counts = [int(v) for v in args.streams.split(",")]
    models = args.models.split(",")
    rows: list[dict] = []
    print(f"load average {os.getloadavg()}; {args.events} events per stream, default settings "
          f"(explainers ipfi, isage, ipdp; 9 agrawal features)")
    kept: dict = {"rows": [], "commands": []}
    if args.append and (RESULTS_DIR / "bench_streams.json").exists():
        before = json.loads((RESULTS_DIR / "bench_streams.json").read_text())
        kept = {"rows": before["rows"],
                "commands": [*before.get("details", {}).get("earlier runs kept", []), before["command"]]}
    tmp = tempfile.mkdtemp(prefix="streamxai-bench-streams-")
    with broker_for(tmp) if not args.no_kafka else contextlib.nullcontext(None) as bootstrap:
        for model in models:
            for n in counts:
                if f"{model}:{n}" in args.skip:
                    continue
                case = f"{model}, {n} streams"
                print(f"\n{case} ({MODELS[model][1]}), load {os.getloadavg()[0]:.1f}")
                mine = None
                if n <= args.worker_only_above and not args.limit_only:
                    mine = in_process(model, n, args)
                    main_ = in_process(model, n, args, args.main_src) if args.main_src else None
                    print(f"  in process: {mine['mb_per_stream']:.3f} MB per stream (RSS {mine['rss_start'] / MB:.0f} -> "
                          f"{mine['rss_built'] / MB:.0f} MB), model {mine['model_mb']:.3f} MB x {mine['models_per_stream']}, "
                          f"beyond the models {mine['beyond_mb']:.3f} MB, {mine['events_per_s']:.0f} events/s of CPU")
                    if main_:
                        print(f"  main's code: {main_['mb_per_stream']:.3f} MB per stream, beyond the models "
                              f"{main_['beyond_mb']:.3f} MB, {main_['events_per_s']:.0f} events/s of CPU; ratios "
                              f"{mine['mb_per_stream'] / main_['mb_per_stream']:.2f} (memory), "
                              f"{mine['events_per_s'] / main_['events_per_s']:.2f} (events/s)")
                    print(f"  in process: stop checkpoints {mine['stop_checkpoints']} in {mine['stop_s']:.2f} s; "
                          f"checkpoint disk {mine['disk_mb_per_stream']:.3f} MB per stream")
                    was = main_ or {}
                    rows += [result_row(case, "in process: MB per stream", round(mine["mb_per_stream"], 4), "MB",
                                        was.get("mb_per_stream")),
                             result_row(case, "in process: MB per stream beyond the models", round(mine["beyond_mb"], 4),
                                        "MB", was.get("beyond_mb")),
                             result_row(case, "model: MB (one of the stream's models)", round(mine["model_mb"], 4), "MB"),
                             result_row(case, "in process: events/s of CPU", round(mine["events_per_s"], 1), "events/s",
                                        was.get("events_per_s"))]
                    rows += [result_row(case, "in process: stop checkpoints s", round(mine["stop_s"], 2), "s",
                                        round(main_["stop_s"], 2) if main_ else None),
                             result_row(case, "in process: checkpoint disk MB per stream",
                                        round(mine["disk_mb_per_stream"], 4), "MB")]
                k = None
                if bootstrap is not None and not args.limit_only:
                    k = through_kafka(model, n, args, bootstrap, tmp)
                    rows += kafka_rows(case, n, mine, k)
                if args.max_live and args.max_live < n and n <= args.worker_only_above:
                    limit = args.max_live
                    lcase = f"{case}, max_live_streams={limit}"
                    lim = in_process(model, n, args, max_live=limit)
                    live = in_process(model, limit, args)
                    main_lim = in_process(model, n, args, args.main_src, max_live=limit) if args.main_src else None
                    rows += limit_rows(lcase, n, limit, lim, live, main_lim)
                    if bootstrap is not None:
                        # the baseline: a worker that holds that many streams, no limit, in the same run
                        kw = through_kafka(model, limit, args, bootstrap, tmp)
                        kl = through_kafka(model, n, args, bootstrap, tmp, max_live=limit)
                        want = (kw["rss_built"] - kw["rss_start"]) / MB
                        print(f"  worker, max_live_streams={limit}: peak {kl['peak_mb']:.0f} MB over the start, "
                              f"against {want:.0f} MB for a worker holding {limit} streams without a limit: ratio "
                              f"{kl['peak_mb'] / want:.2f}; {kl['events_per_s']:.0f} events/s")
                        rows += [result_row(lcase, "worker: peak MB (limit) vs MB of that many streams",
                                            round(kl["peak_mb"], 1), "MB", round(want, 1)),
                                 result_row(lcase, "worker: events/s", round(kl["events_per_s"], 1), "events/s",
                                            round(k["events_per_s"], 1) if k else None),
                                 *stop_rows(lcase, n, kl)]
                if not args.no_write:  # after each case: a long run's finished cases are kept
                    new = {(r["case"], r["measure"]) for r in rows}
                    path = write_results(RESULTS_DIR / "bench_streams.json", "bench_streams",
                                         "Many streams per worker: memory, events/s and idle CPU",
                                         "in process: the same handlers in a process of their own (with --main-src: "
                                         "main's code); worker: in-process rates and memory of the same run; idle "
                                         "CPU: the same worker before any stream; with a limit: the same run's "
                                         "worker and handlers holding that many streams without one",
                                         [r for r in kept["rows"] if (r["case"], r["measure"]) not in new] + rows,
                                         {"earlier runs kept": kept["commands"]} if kept["commands"] else None)
                    print(f"  wrote {path}")


if __name__ == "__main__":
    main()
