"""Throughput with more workers, partitions, streams and explain groups on one machine, each
figure against one worker on the same work measured in the same run; and the events per CPU
core of one worker by model and explainers, which the sizing page turns into cores for a rate.

    python tests/benchmarks/bench_scale.py [--events 6000] [--workers 1,2,4] [--partitions 4,8]
        [--streams 1,4,16,64] [--models hat,arf] [--groups 1,2,4] [--core-events 3000] [--rounds 1]
        [--skip cores,workers,groups] [--results docs/results/bench_scale.json | '']

Every run starts fresh workers on fresh topics of a local broker on free ports (or
$STREAMXAI_BOOTSTRAP), waits until they have joined and share the partitions, then produces the
backlog at once and waits until the change agents have taken up every explanation. The rate is
events over the wall time from the first output record (predictions, explanations) to the last,
by the records' own timestamps, so neither start-up, nor the group's joins, nor the producer's
start is counted. CPU is read from ``/proc`` for the workers, the broker and the whole machine,
whose other users (the machine is shared) show as "others": over the whole run for the CPU per
event, and every 0.1 s for how busy the cores were while the outputs came (the window of the
rate). The workers table runs each model of ``--models``: a model whose events cost the workers
far more than they cost the broker (ARF) shows how the workers scale where the broker, which
shares the machine's cores here, is not the bottleneck.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package

from _results import RESULTS_DIR, result_row, write_results  # noqa: E402  (the script's folder)
from _worker_runs import _cpu_seconds, broker_for, broker_pids, explanations_wanted  # noqa: E402
from helpers.pipeline_runs import make_settings, wait_for_members, worker_metrics  # noqa: E402
from streamxai.kafka.config import TOPIC_NAMES, confluent_config, ensure_topics  # noqa: E402
from streamxai.kafka.io import produce_events  # noqa: E402
from streamxai.kafka.watermarks import watermarks  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402
from streamxai.local.ports import free_port  # noqa: E402
from streamxai.worker import spawn_worker, stop_worker  # noqa: E402

#: name -> (model, its parameters, label); the speed bar's models
MODELS = {
    "hat": ("river.tree.HoeffdingAdaptiveTreeClassifier", {"grace_period": 50}, "HAT"),
    "arf": ("river.forest.ARFClassifier", {"n_models": 10}, "ARF(10)"),
    "logistic": ("river.linear_model.LogisticRegression", {}, "logistic regression"),
}
EXPLAINER_SETS = {"iPFI + iSAGE + iPDP": ["ipfi", "isage", "ipdp"], "iPFI only": ["ipfi"]}
#: an ARF(10) event costs about ten of the others': its runs take fewer events for a similar time
EVENT_SHARE = {"hat": 1.0, "logistic": 1.0, "arf": 0.25}
#: a run whose workers, broker and other users keep this share of the machine's cores busy is
#: bound by the cores: more workers cannot go faster there
CPU_BOUND = 0.9
#: how often the CPU is sampled during a run (s)
SAMPLE_S = 0.1
#: a run whose busiest worker does this much more than the mean worker is bound by the split of
#: the streams over the partitions (the note says what the split allows)
UNEVEN = 1.15


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def machine_busy() -> float:
    """CPU seconds all of the machine's cores have been busy since boot (``/proc/stat``)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class CpuSampler(threading.Thread):
    """The CPU seconds of the workers (``pids``), the broker, this process and the whole machine,
    every :data:`SAMPLE_S`, each stamped with the epoch time the output records' timestamps use."""

    def __init__(self, pids: list[int]):
        super().__init__(daemon=True)
        self.pids = pids
        self.samples: list[tuple[float, float, float, float, float]] = []
        self.done = threading.Event()

    def sample(self) -> None:
        self.samples.append((time.time(), _cpu_seconds(self.pids), _cpu_seconds(broker_pids), time.process_time(),
                             machine_busy()))

    def run(self) -> None:
        while not self.done.wait(SAMPLE_S):
            self.sample()

    def stop(self) -> None:
        self.done.set()
        self.join()
        self.sample()

    def busy(self, first: float, last: float) -> tuple[float, float, float] | None:
        """Cores busy with the workers, the broker and the machine's other users between the
        first and the last sample inside ``first`` to ``last`` (epoch seconds); None if those
        samples are under five sampling periods apart, too short a window to tell."""
        inside = [s for s in self.samples if first <= s[0] <= last]
        if len(inside) < 2 or inside[-1][0] - inside[0][0] < 5 * SAMPLE_S:
            return None
        (t0, w0, b0, o0, m0), (t1, w1, b1, o1, m1) = inside[0], inside[-1]
        dt = t1 - t0
        return (w1 - w0) / dt, (b1 - b0) / dt, max(0.0, (m1 - m0) - (w1 - w0) - (b1 - b0) - (o1 - o0)) / dt


@dataclass
class Run:
    """What one run measured: ``events`` over ``wall`` s from the first output to the last, and
    over the CPU span of ``span`` s (first event on the broker to the last explanation taken
    up) each worker's CPU seconds, the broker's, this process's and the whole machine's; the
    cores busy with the workers, the broker and others over the output window (``window``, None
    for a window too short to tell); and how the records fell on the workers' partitions
    (:func:`shares`)."""

    events: int
    wall: float
    span: float
    workers_cpu: list[float]
    broker_cpu: float
    own_cpu: float
    machine: float
    window: tuple[float, float, float] | None = None
    split: str = ""
    load: float = field(default_factory=lambda: os.getloadavg()[0])

    @property
    def rate(self) -> float:
        return self.events / self.wall

    def cores_used(self, what: str) -> float:
        """Cores busy with ``what`` (workers, broker, others) while the outputs came; over the
        whole run if that window was too short to tell."""
        if self.window is not None:
            return self.window[("workers", "broker", "others").index(what)]
        cpu = {"workers": sum(self.workers_cpu), "broker": self.broker_cpu,
               "others": max(0.0, self.machine - sum(self.workers_cpu) - self.broker_cpu - self.own_cpu)}[what]
        return cpu / self.span

    @property
    def per_core(self) -> float:
        """Events per second of one core of the workers' CPU."""
        return self.events / sum(self.workers_cpu)

    @property
    def spread(self) -> float:
        """The busiest worker's CPU over the mean worker's: 1 when the work is split evenly."""
        return max(self.workers_cpu) / statistics.mean(self.workers_cpu)

    def split_allows(self) -> float:
        """The ratio to one worker that this split of the work over the workers allows: the
        workers over the busiest one's share of their CPU."""
        return sum(self.workers_cpu) / max(self.workers_cpu)

    @property
    def cpu_bound(self) -> bool:
        busy = self.cores_used("workers") + self.cores_used("broker") + self.cores_used("others")
        return busy >= CPU_BOUND * cores()

    def cores_allow(self) -> float:
        """The rate the machine's cores allow at this run's CPU per event (workers and broker),
        if nothing else ran on them."""
        return cores() * self.events / (sum(self.workers_cpu) + self.broker_cpu)


def stream_events(n_streams: int, n: int, seed: int = 100) -> list:
    """``n`` agrawal events spread evenly over ``n_streams`` streams, taking turns."""
    per = [list(agrawal_events(f"s{i}", n // n_streams, seed=seed + i)) for i in range(n_streams)]
    return [ev for batch in zip(*per, strict=True) for ev in batch]


def output_window(s, timeout: float = 60.0) -> tuple[float, float]:
    """Epoch seconds of the first and the last record on the run's predictions and explanations
    topics (the timestamps the worker's producer gave them)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(confluent_config(s, **{"group.id": f"{s.app_id}-window", "enable.auto.commit": False}))
    first, last = float("inf"), 0.0
    try:
        ends: dict[tuple[str, int], int] = {}
        for name in ("predictions", "explanations"):
            topic = s.topic(name)
            for p in c.list_topics(topic, timeout=10).topics[topic].partitions:
                end = watermarks(c, topic, p, timeout=10)[1]
                if end > 0:
                    ends[(topic, p)] = end
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in ends])
        deadline = time.monotonic() + timeout
        while ends:
            if time.monotonic() > deadline:
                raise RuntimeError(f"read the output topics of {s.app_id} for {timeout:g} s, not yet to their ends")
            for rec in c.consume(1000, 0.5):
                if rec.error():
                    continue
                ts = rec.timestamp()[1] / 1000
                first, last = min(first, ts), max(last, ts)
                if rec.offset() + 1 >= ends.get((rec.topic(), rec.partition()), 0):
                    ends.pop((rec.topic(), rec.partition()), None)
    finally:
        c.close()
    return first, last


def assignment(s) -> list[set[tuple[str, int]]]:
    """Each worker's partitions (short topic name, partition) in the group of ``s``."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(confluent_config(s))
    for attempt in range(5):
        try:
            group = admin.describe_consumer_groups([s.app_id], request_timeout=10)[s.app_id].result(timeout=20)
            break
        except (KafkaException, TimeoutError):  # a busy machine's coordinator answers late
            if attempt == 4:
                raise
    prefix = len(s.topic_prefix)
    return [{(tp.topic[prefix:], tp.partition) for tp in m.assignment.topic_partitions} for m in group.members]


def shares(s, assigned: list[set[tuple[str, int]]]) -> str:
    """The records each worker's partitions of arrivals (the model's input) and explain-tasks
    took, as ``arrivals a/b, explain-tasks c/d`` (one figure a worker)."""
    from confluent_kafka import Consumer

    c = Consumer(confluent_config(s, **{"group.id": f"{s.app_id}-shares", "enable.auto.commit": False}))
    try:
        out = []
        for name in ("arrivals", "explain-tasks"):
            ends = {p: watermarks(c, s.topic(name), p, timeout=10)[1]
                    for p in range(s.partitions)}
            out.append(f"{name} " + "/".join(str(sum(ends[p] for t, p in mine if t == name)) for mine in assigned))
        return ", ".join(out)
    finally:
        c.close()


def delete_topics(s) -> None:
    """The run's topics, so the broker does not carry the partitions of every earlier run."""
    from confluent_kafka.admin import AdminClient

    futures = AdminClient(confluent_config(s)).delete_topics([s.topic(t) for t in TOPIC_NAMES], operation_timeout=30)
    for f in futures.values():
        with contextlib.suppress(Exception):  # a topic this run's settings did not create
            f.result(timeout=30)


def until_taken_up(workers: list, n: int, timeout: float = 900.0) -> None:
    """Until the change agents of ``workers`` have taken up ``n`` explanations in all (their
    metrics pages, read every 0.2 s). A worker whose page does not answer within its timeout,
    as happens on a machine loaded far beyond its cores, is asked again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if sum(worker_metrics(w, timeout=30)["counters"].get("explanations_seen", 0) for w in workers) >= n:
                return
        except OSError:  # a timeout or a refused connection: asked again below
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the change agents did not take up {n} explanations within {timeout:g} s")
        time.sleep(0.2)


def run(s, events: list, n_workers: int, tmp: str) -> Run:
    """``n_workers`` fresh workers on ``s`` through ``events`` (see the module's docstring)."""
    ensure_topics(s)
    each = [s.replace(web_port=free_port()) for _ in range(n_workers)]
    procs = [spawn_worker(w, log_file=f"{tmp}/{s.app_id}-w{i}.log", loglevel="warning") for i, w in enumerate(each)]
    try:
        wait_for_members(s, n_workers, timeout=180)
        assigned = assignment(s)
        want = explanations_wanted(s, events)
        pids = [p.pid for p in procs]
        sampler = CpuSampler(pids)
        started: list[tuple] = []
        sampler.start()
        try:
            produce_events(s, events, first_delivered=lambda: started.append(
                (time.perf_counter(), [_cpu_seconds([p]) for p in pids], _cpu_seconds(broker_pids),
                 time.process_time(), machine_busy())))
            until_taken_up(each, want)
        finally:
            sampler.stop()
        t0, w0, b0, o0, m0 = started[0]
        span = time.perf_counter() - t0
        workers = [_cpu_seconds([p]) - c for p, c in zip(pids, w0, strict=True)]
        broker = _cpu_seconds(broker_pids) - b0 if broker_pids else 0.0
        own, machine = time.process_time() - o0, machine_busy() - m0
    finally:
        for p in procs:
            stop_worker(p)
    first, last = output_window(s)
    split = shares(s, assigned)
    delete_topics(s)
    return Run(len(events), last - first, span, workers, broker, own, machine, sampler.busy(first, last), split)


def settings(bootstrap: str, tmp: str, model: str = "hat", **over):
    path, params, _ = MODELS[model]
    fields = dict(alpha=0.001, emit_every=10, storage_size=100, grid_size=10, model=path, model_params=params,
                  explain_groups=1, partitions=4, session_timeout_s=30.0)
    fields.update(over)
    return make_settings(bootstrap, f"{tmp}/state-{time.monotonic_ns()}", **fields)


def describe(r: Run) -> str:
    return (f"{r.rate:8.1f} events/s  cores: workers {r.cores_used('workers'):.2f} broker {r.cores_used('broker'):.2f} "
            f"others {r.cores_used('others'):.2f}  load {r.load:.1f}\n      worker CPU spread {r.spread:.2f} "
            f"(records a worker: {r.split})")


def bound_note(r: Run, base_rate: float, n_workers: int) -> str:
    """Why ``r`` is as fast as it is against the baseline: the cores or the split of the work."""
    if n_workers == 1:
        return ""
    notes = []
    if r.cpu_bound:
        notes.append(f"CPU-bound: the cores allow {r.cores_allow() / base_rate:.2f}x at this CPU per event, the "
                     f"broker takes {r.broker_cpu / (sum(r.workers_cpu) + r.broker_cpu):.0%} of it")
    if r.spread > UNEVEN:
        notes.append(f"uneven: the busiest worker does {r.spread:.2f}x the mean worker's work, the split allows "
                     f"{r.split_allows():.2f}x")
    return "".join(f"\n      <- {n}" for n in notes)


def per_core(bootstrap: str, tmp: str, args, rows: list[dict]) -> None:
    print(f"\nEvents per core: one worker, one stream, 4 partitions, explain_groups 1 ({args.core_events} events; "
          "ARF a quarter of them). Events per second of the worker's CPU, and with the broker's CPU added")
    for model, (_, _, label) in MODELS.items():
        n = int(args.core_events * EVENT_SHARE[model])
        events = stream_events(1, n)
        for name, explainers in EXPLAINER_SETS.items():
            r = run(settings(bootstrap, tmp, model, explainers=explainers), events, 1, tmp)
            with_broker = r.events / (sum(r.workers_cpu) + r.broker_cpu)
            print(f"  {label:20} {name:20} {r.per_core:8.1f} per worker core, {with_broker:8.1f} with the broker's, "
                  f"{r.rate:8.1f} events/s wall  (load {r.load:.1f})")
            case = f"{label}, {name}"
            rows.append(result_row(case, "events/s per worker core", round(r.per_core, 1), "events/s"))
            rows.append(result_row(case, "events/s per core, broker included", round(with_broker, 1), "events/s"))
            rows.append(result_row(case, "broker CPU per worker CPU", round(r.broker_cpu / sum(r.workers_cpu), 3), ""))


def scaled(bootstrap: str, tmp: str, args, base: tuple[str, dict, list], cases: list[tuple[str, dict, int]],
           rows: list[dict]) -> None:
    """``base`` ``(case, settings, events)`` with one worker first and last (their mean rate the
    baseline, so a machine that changes over the runs moves both), and between them each of
    ``cases`` ``(case, settings, workers)`` on the same events, in ``--rounds`` rounds (the
    cases' order reversed every other round); the medians of the rounds' rates."""
    label, base_over, events = base
    runs: dict[str, list[Run]] = {c: [] for c, _, _ in cases}
    base_runs: list[Run] = []
    bases: list[float] = []
    for i in range(args.rounds):
        first = run(settings(bootstrap, tmp, **base_over), events, 1, tmp)
        for case, over, n in (cases if i % 2 == 0 else cases[::-1]):
            runs[case].append(run(settings(bootstrap, tmp, **over), events, n, tmp))
        last = run(settings(bootstrap, tmp, **base_over), events, 1, tmp)
        base_runs += [first, last]
        bases.append((first.rate + last.rate) / 2)
    base_rate = statistics.median(bases)
    for r in base_runs:
        print(f"  {label}, 1 worker (baseline): {describe(r)}")
    rows.append(result_row(f"{label}, 1 worker", "events/s", round(base_rate, 1), "events/s"))
    for case, _, n in cases:
        done = runs[case]
        rate = statistics.median(r.rate for r in done)
        for r in done:
            print(f"  {case}: {describe(r)}  ratio {r.rate / base_rate:.2f}{bound_note(r, base_rate, n)}")
        rows.append(result_row(case, "events/s", round(rate, 1), "events/s", baseline=round(base_rate, 1)))
        if n > 1:  # each the median over the rounds, as the rate
            rows.append(result_row(case, "ratio the cores allow at its CPU per event",
                                   round(statistics.median(r.cores_allow() for r in done) / base_rate, 2), "x"))
            rows.append(result_row(case, "ratio the split allows",
                                   round(statistics.median(r.split_allows() for r in done), 2), "x"))
            rows.append(result_row(case, "cores busy: workers, broker, others",
                                   round(statistics.median(sum(r.cores_used(w) for w in ("workers", "broker", "others"))
                                                           for r in done), 2), f"of {cores()}"))
        if len(done) > 1:
            print(f"  {case}: ratio {rate / base_rate:.2f} (median of {len(done)} rounds)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=6000, help="events of a run of the workers and groups tables")
    ap.add_argument("--core-events", type=int, default=3000, help="events of a run of the per-core table")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--partitions", default="4,8")
    ap.add_argument("--streams", default="1,4,16,64")
    ap.add_argument("--models", default="hat,arf", help="models of the workers table (ARF: a quarter of the events)")
    ap.add_argument("--groups", default="1,2,4")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--skip", default="", help="tables to leave out: cores, workers, groups")
    ap.add_argument("--results", default=str(RESULTS_DIR / "bench_scale.json"), help="results file ('': none)")
    args = ap.parse_args()
    workers = [int(v) for v in args.workers.split(",")]
    if workers[0] != 1:
        raise SystemExit("--workers must start with 1: one worker is every row's baseline")
    skip = set(filter(None, args.skip.split(",")))
    tmp = tempfile.mkdtemp(prefix="streamxai-bench-scale-")
    rows: list[dict] = []
    print(f"{cores()} cores, load average {os.getloadavg()[0]:.1f}; model HAT (grace_period 50), iPFI + iSAGE + iPDP, "
          "alpha 0.001, storage 100, grid 10, emit_every 10 unless said")
    with broker_for(tmp) as bootstrap:
        # one run not counted: a fresh broker's JVM compiles its request paths during its first runs
        run(settings(bootstrap, tmp), stream_events(1, 1000), 1, tmp)
        if "cores" not in skip:
            per_core(bootstrap, tmp, args, rows)
        if "workers" not in skip:
            print(f"\nWorkers against partitions and streams ({args.events} events a run, ARF a quarter of them; "
                  "explain_groups 1); baseline: one worker on the same model, partitions and streams")
            for model in args.models.split(","):
                n_events = int(args.events * EVENT_SHARE[model])
                for p in map(int, args.partitions.split(",")):
                    for n in map(int, args.streams.split(",")):
                        label = f"{MODELS[model][2]}, {p} partitions, {n} stream(s)"
                        over = {"partitions": p, "model": model}
                        cases = [(f"{label}, {w} workers", over, w) for w in workers[1:] if w <= p]
                        scaled(bootstrap, tmp, args, (label, over, stream_events(n, n_events)), cases, rows)
        if "groups" not in skip:
            p = max(map(int, args.partitions.split(",")))
            print(f"\nOne busy stream: explain_groups against workers ({args.events} events, {p} partitions); "
                  "baseline: one worker, explain_groups 1")
            cases = [(f"one stream, explain_groups {g}, {w} worker(s)", {"partitions": p, "explain_groups": g}, w)
                     for g in map(int, args.groups.split(",")) for w in workers if (g, w) != (1, 1)]
            scaled(bootstrap, tmp, args, ("one stream, explain_groups 1", {"partitions": p}, stream_events(1, args.events)),
                   cases, rows)
    if args.results:
        path = write_results(args.results, "bench_scale", "Scaling with workers, partitions, streams and explain groups",
                             "one worker on the same events and settings in the same run (the mean of a run before "
                             "and after the others); events per core: one worker's events over its CPU seconds",
                             rows)
        print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
