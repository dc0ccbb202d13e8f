"""Restart: how long a worker takes, from process start, until new explanations reach every
stream; and where the time goes.

    python tests/benchmarks/bench_restart.py [--streams 10] [--events 2000] [--more 10] [--repeat 3]
        [--results docs/results/bench_restart.json | '']
    python tests/benchmarks/bench_restart.py --change-history [--series 270] [--points 200] [--baseline-series 27]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package

import orjson  # noqa: E402
from confluent_kafka import Consumer  # noqa: E402
from helpers.pipeline_runs import make_settings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/benchmarks/, for the results writer
from _results import RESULTS_DIR, result_row, write_results  # noqa: E402
from streamxai.handlers import ChangeHandler, Source  # noqa: E402
from streamxai.kafka.config import confluent_config, ensure_topics  # noqa: E402
from streamxai.kafka.io import consume, produce_events, produce_raw  # noqa: E402
from streamxai.kafka.replay import PartitionHistory  # noqa: E402
from streamxai.local.broker import LocalBroker  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402
from streamxai.local.ports import free_port, free_ports  # noqa: E402
from streamxai.schemas import Explanation, dumps  # noqa: E402
from streamxai.settings import AGRAWAL_FEATURES, Settings  # noqa: E402
from streamxai.worker import spawn_worker, stop_worker  # noqa: E402


def rebuild(s, last, history) -> tuple[float, int]:
    """Feed each stream's last message to a fresh handler; seconds and explanations replayed."""
    h = ChangeHandler(s, history=history)
    t0 = time.perf_counter()
    for rec in last:
        h.on_message(rec.value, rec.key, Source(rec.topic, rec.partition, rec.offset))
    return time.perf_counter() - t0, h.metrics.get("replayed_explanations")


def change_history(args: argparse.Namespace, bootstrap: str, tmp: str) -> None:
    s = make_settings(bootstrap, f"{tmp}/state", emit_every=10)
    ensure_topics(s)
    rng, items = random.Random(1), []
    feats = s.features
    names = [(f"stream{i % 10}", ("ipfi", "isage", "ipdp")[i % 3], feats[(i // 30) % len(feats)])
             for i in range(args.series)]
    for k in range(args.points + 1):
        seq = (k + 1) * s.emit_every - 1
        for sid, ex, feat in names:
            v = rng.gauss(0.1, 0.02)
            block = {"n": s.emit_every, "mean": v, "m2": 0.04 * (s.emit_every - 1)}
            msg = Explanation(sid, ex, feat, v, seq, (k + 1) * s.emit_every, seq + 1, seq, block=block)
            items.append((sid.encode(), dumps(msg)))  # explanations are keyed by stream
    produce_raw(s, s.topic("explanations"), items)
    last = {}
    for rec in consume(s, [s.topic("explanations")], idle_timeout=5):
        last[rec.key] = rec
    last_recs = sorted(last.values(), key=lambda r: (r.partition, r.offset))
    print(f"{len(items)} explanations of {len(names)} series in {len(last_recs)} streams on "
          f"{s.partitions} partitions")
    history = PartitionHistory(s)

    def per_key(topic, partition, before, key, from_offset=0):  # no scan: one pass per key
        return history(topic, partition, before, key, from_offset)

    base = last_recs[:: max(1, len(last_recs) // args.baseline_series)][: args.baseline_series]
    t_base, n_base = rebuild(s, base, per_key)
    t_new, n_new = rebuild(s, last_recs, history)
    scaled = t_base / len(base) * len(last_recs)
    print(f"one pass per key: {t_base:.2f} s for {len(base)} streams ({n_base} replayed), "
          f"{t_base / len(base):.3f} s per stream -> {scaled:.1f} s for {len(last_recs)}")
    print(f"one pass per partition: {t_new:.2f} s for {len(last_recs)} streams ({n_new} replayed)")
    print(f"speed-up: {scaled / t_new:.1f}x")


# --- a worker restart ---------------------------------------------------------------------------

_READY = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\].*\[\^\w*Worker\]: Ready")


def _ready_at(log: Path, since: int) -> float | None:
    """Wall-clock time of the worker's "Ready" line after byte ``since`` of its log."""
    with open(log, "rb") as f:
        f.seek(since)
        for line in f.read().decode(errors="replace").splitlines():
            m = _READY.match(line)
            if m:
                return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return None


def _metrics(s: Settings) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{s.web_port}/streamxai/metrics", timeout=5) as r:
        return orjson.loads(r.read())


def _wait_explained(s: Settings, streams: list[str], from_seq: int, timeout: float, proc) -> tuple[float, float]:
    """When the first and the last stream had a new explanation (seq >= ``from_seq``) of every
    explainer: wall-clock times the worker sent them (the messages' timestamps, so this reader's
    own delay does not count). Fails if the worker ``proc`` exits meanwhile."""
    want = {(sid, ex) for sid in streams for ex in s.explainers}
    sent: dict[tuple[str, str], float] = {}  # (stream, explainer) -> its first new explanation
    deadline = time.monotonic() + timeout
    c = Consumer(confluent_config(s, **{"group.id": f"bench-{os.urandom(4).hex()}", "auto.offset.reset": "earliest",
                                        "enable.auto.commit": False, "log_level": 3}))
    c.subscribe([s.topic("explanations")])
    try:
        while time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is None or msg.error():
                if proc.poll() is not None:
                    raise RuntimeError(f"the worker exited with {proc.returncode}; see its log")
                continue
            m = orjson.loads(msg.value())
            pair = (m["stream_id"], m["explainer"])
            if m["seq"] >= from_seq and pair in want:
                at = msg.timestamp()[1] / 1000
                sent[pair] = min(at, sent.get(pair, at))
                if len(sent) == len(want):
                    per_stream = [max(sent[(sid, ex)] for ex in s.explainers) for sid in streams]
                    return min(per_stream), max(per_stream)
    finally:
        c.close()
    raise RuntimeError(f"no new explanations of every explainer for every stream within {timeout} s: {sorted(sent)}")


def restart_run(args: argparse.Namespace, bootstrap: str, tmp: str) -> None:
    run = os.urandom(4).hex()
    s = Settings(features=list(AGRAWAL_FEATURES), bootstrap_servers=bootstrap, topic_prefix=f"bench-{run}.",
                 app_id=f"bench-{run}", web_port=free_port(), state_dir=f"{tmp}/state", partitions=4,
                 checkpoint_on_stop=False)
    ensure_topics(s)
    streams = [f"s{i}" for i in range(args.streams)]
    total = args.events + args.more * 2 * args.repeat
    events = {sid: list(agrawal_events(sid, total, seed=i)) for i, sid in enumerate(streams)}
    print(f"settings: model {s.model}, explainers {s.explainers}, checkpoint_every {s.checkpoint_every}, "
          f"emit_every {s.emit_every}, explain_groups {s.explain_groups}, {s.partitions} partitions")
    log = Path(tmp) / "worker.log"
    procs = [spawn_worker(s, log_file=str(log))]
    try:
        runs = _restarts(args, s, streams, events, log, procs)
    finally:
        for p in procs:
            stop_worker(p, timeout=60)
    if args.results:
        print(f"results: {write_restart_results(args.results, runs, args, s)}")


#: seconds from a restarted worker's process start until every stream has new explanations
GOAL_S = 8.0

#: the restart's parts, as the printout and the results file name them: (key, measure, unit)
PARTS = [
    ("total", "process start -> new explanations of every stream", "s"),
    ("first", "process start -> new explanations of the first stream", "s"),
    ("faust", "Faust start-up (process start -> Worker ready)", "s"),
    ("model_checkpoint", "model: checkpoint reads", "s"),
    ("explain_checkpoint", "explain: checkpoint reads", "s"),
    ("model_replay", "model: replay after the checkpoint", "s"),
    ("explain_replay", "explain: replay after the checkpoint", "s"),
    ("change_checkpoint", "change state: checkpoint reads", "s"),
    ("change_replay", "change state: replay of explanations", "s"),
    ("restored", "checkpoints restored", "checkpoints"),
    ("replayed_events", "events replayed (model)", "events"),
    ("replayed_tasks", "tasks replayed (explain)", "tasks"),
]


def _restarts(args, s, streams, events, log, procs) -> dict[bool, list[dict]]:
    """The restarts (baseline first, then with checkpoints at stop): each one's parts, by ``PARTS`` key."""
    t0 = time.time()
    produce_events(s, [ev for i in range(args.events) for ev in (events[sid][i] for sid in streams)])
    last_emitted = args.events - args.events % s.emit_every - 1
    _wait_explained(s, streams, last_emitted, timeout=3600, proc=procs[-1])
    print(f"first run: {args.streams} x {args.events} events explained in {time.time() - t0:.0f} s")
    sent = args.events
    runs: dict[bool, list[dict]] = {False: [], True: []}
    # first the baseline (the stopping worker writes no checkpoints: a restart replays since the
    # last periodic ones), then the same with checkpoint_on_stop: the worker before a measured
    # restart decides, so the last baseline worker already has it on
    plan = [False] * args.repeat + [True] * args.repeat
    for r, on_stop in enumerate(plan):
        stop_worker(procs[-1], timeout=60)
        since = log.stat().st_size
        nxt = plan[r + 1] if r + 1 < len(plan) else True
        s = s.replace(web_port=free_port(), checkpoint_on_stop=nxt)
        t_start = time.time()
        procs.append(spawn_worker(s, log_file=str(log)))
        produce_events(s, [ev for i in range(sent, sent + args.more) for ev in (events[sid][i] for sid in streams)])
        sent += args.more
        t_first, t_all = _wait_explained(s, streams, sent - args.more, timeout=600, proc=procs[-1])
        ready = _ready_at(log, since)
        counters = _metrics(s)["counters"]
        rec = {k: v for k, v in counters.items() if k.startswith("recovery_seconds")}

        def part(stage: str, step: str, rec: dict = rec) -> float:
            return rec.get(f"recovery_seconds{{stage={stage},step={step}}}", 0.0)

        p = {"total": t_all - t_start, "first": t_first - t_start,
             "faust": (ready - t_start) if ready else None,
             "model_checkpoint": part("model", "checkpoint"), "explain_checkpoint": part("explain", "checkpoint"),
             "model_replay": part("model", "replay"), "explain_replay": part("explain", "replay"),
             "change_checkpoint": part("change", "checkpoint"), "change_replay": part("change", "replay"),
             "restored": counters.get("checkpoints_restored", 0),
             "replayed_events": counters.get("replayed_events", 0),
             "replayed_tasks": counters.get("replayed_tasks", 0)}
        runs[on_stop].append(p)
        what = "checkpoints at the previous stop" if on_stop else "baseline: periodic checkpoints only"
        print(f"restart {r + 1} ({what}): new explanations for all {args.streams} streams {p['total']:.1f} s after "
              f"process start (first stream {p['first']:.1f} s)")
        print(f"  Faust start-up (process start -> Worker ready): "
              f"{p['faust'] if p['faust'] is not None else float('nan'):.1f} s")
        print(f"  checkpoint reads: model {p['model_checkpoint']:.2f} s, explain {p['explain_checkpoint']:.2f} s "
              f"({p['restored']} restored)")
        print(f"  replay after the checkpoint: model {p['model_replay']:.2f} s "
              f"({p['replayed_events']} events), explain {p['explain_replay']:.2f} s "
              f"({p['replayed_tasks']} tasks)")
        print(f"  change-state rebuild: checkpoint {p['change_checkpoint']:.2f} s, replay {p['change_replay']:.2f} s "
              f"({counters.get('replayed_explanations', 0)} explanations, {counters.get('history_messages_scanned', 0)} "
              f"messages scanned)")

    def spread(xs: list[float]) -> str:
        return f"median {statistics.median(xs):.1f} s (min {min(xs):.1f}, max {max(xs):.1f}, n={len(xs)})"

    base, new = ([p["total"] for p in runs[k]] for k in (False, True))
    print(f"restart to new explanations of every stream, from process start: baseline {spread(base)}; "
          f"with checkpoints at stop {spread(new)}; ratio {statistics.median(new) / statistics.median(base):.2f}; "
          f"goal {GOAL_S:g} s")
    return runs


def medians(runs: list[dict]) -> dict[str, float]:
    """The median of each part over ``runs`` (the parts a run could not measure left out)."""
    out = {}
    for key, _, _ in PARTS:
        xs = [r[key] for r in runs if r.get(key) is not None]
        if xs:
            out[key] = statistics.median(xs)
    return out


def restart_rows(runs: dict[bool, list[dict]], streams: int, events: int) -> list[dict]:
    """The results file's rows: the median of each part of the restarts with checkpoints at stop,
    against the same part's median of the baseline restarts (periodic checkpoints only) where that
    is above 0 (a ratio needs it); a part the baseline lacks or has at 0 is a row without one."""
    new, base = medians(runs[True]), medians(runs[False])
    case = f"{streams} streams x {events:,} events, checkpoints at stop"
    rows = []
    for key, measure, unit in PARTS:
        if key not in new:
            continue
        b = base.get(key)
        digits = 3 if unit == "s" else 1
        rows.append(result_row(case, f"{measure} (median)", round(new[key], digits), unit,
                               baseline=round(b, digits) if b is not None and round(b, digits) > 0 else None))
    return rows


def write_restart_results(path: str, runs: dict[bool, list[dict]], args: argparse.Namespace,
                          s: Settings) -> Path:
    """The restart run as a results file (``_results.py``) for the docs' performance page."""
    return write_results(
        path, "bench_restart", f"Worker restart: seconds until new events are explained (goal {GOAL_S:g} s)",
        "the same restarts in the same run with the stopping worker writing no checkpoints "
        "(checkpoint_on_stop off: a restart replays since the last periodic checkpoints)",
        restart_rows(runs, args.streams, args.events),
        details={"streams": args.streams, "events per stream before the restarts": args.events,
                 "events per stream after each restart": args.more, "restarts of each kind (repeat)": args.repeat,
                 "goal_s": GOAL_S, "model": s.model, "explainers": list(s.explainers),
                 "checkpoint_every": s.checkpoint_every, "emit_every": s.emit_every, "partitions": s.partitions,
                 "baseline medians": _rounded(medians(runs[False])),
                 "runs": {"baseline": [_rounded(r) for r in runs[False]],
                          "checkpoints at stop": [_rounded(r) for r in runs[True]]}})


def _rounded(parts: dict) -> dict:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in parts.items()}


def main() -> None:
    """The restart run (the default): a worker with the default settings (all three explainers, the
    default checkpoint_every) explains ``--streams`` x ``--events`` events; it is stopped with
    SIGTERM and a new worker process is started; ``--more`` events per stream are sent at once. The
    time is measured from the new process's start until every stream has a new explanation of
    every explainer. The breakdown comes from the new worker: its Faust start-up (process start to
    "Worker ready", from its log) and, from its metrics, the seconds each handler spent reading
    checkpoints and replaying history (``recovery_seconds``; the model, explain and change agents
    recover concurrently, so the parts can add up to more than the wall time). ``--repeat`` restarts
    that many times (stop, start, ``--more`` events) with the stopping worker writing no checkpoints
    (the baseline: a restart replays since the last periodic checkpoints), then as many times with
    ``checkpoint_on_stop`` (the default), and prints both and their ratio; the goal is ``GOAL_S``.
    ``--results`` writes the medians of the restarts with checkpoints at stop, each against the
    baseline's, to a results file for the docs' performance page (default
    ``docs/results/bench_restart.json``; ``''`` writes none).

    ``--change-history``: the change agent's rebuild from the explanations topic, one pass per
    partition (HistoryCache) against one pass per key, measured in the same run on the same topic
    (270 series of 200 explanations on 4 partitions, 54,000 messages). Explanations are keyed by stream, so the 270 series are 10 keys.
    The baseline rebuilds only ``--baseline-series`` series and is scaled to all of them.

    Both start their own broker on free ports (or use $STREAMXAI_BOOTSTRAP).
    """
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--change-history", action="store_true", help="the change agent's rebuild comparison instead")
    ap.add_argument("--streams", type=int, default=10)
    ap.add_argument("--events", type=int, default=2000, help="events per stream before the restart")
    ap.add_argument("--more", type=int, default=10, help="events per stream after each restart")
    ap.add_argument("--repeat", type=int, default=3, help="restarts of each kind, for the spread")
    ap.add_argument("--series", type=int, default=270)
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--baseline-series", type=int, default=27)
    ap.add_argument("--results", default=str(RESULTS_DIR / "bench_restart.json"), metavar="FILE",
                    help="the restart run's results file for the docs' performance page "
                         "(default docs/results/bench_restart.json; '' writes none; --change-history writes none)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-restart-")
    broker = None
    bootstrap = os.environ.get("STREAMXAI_BOOTSTRAP")
    if not bootstrap:
        port, cport = free_ports(2)
        broker = LocalBroker(port, cport, data_dir=Path(tmp) / "kafka", heap="512m", die_with_parent=True)
        broker.start(timeout=120)
        bootstrap = broker.bootstrap
    try:
        if args.change_history:
            change_history(args, bootstrap, tmp)
        else:
            restart_run(args, bootstrap, tmp)
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
