"""A soak of one worker at default settings (every explainer, checkpoints as configured by
default): ``--events`` agrawal events with drift over ``--streams`` streams, half of them with
labels in line and half with labels that come ``--label-delay`` events later, produced in
chunks so the group's lag stays under ``--max-lag``. Every ``--every`` events it prints the
worker's RSS (``/proc``), its checkpoints' bytes, each internal topic's bytes on the broker's
disk, events per second (of wall time and of the worker's CPU time) and the lag; at the end it
says whether memory and throughput stayed flat after ``--warmup`` events, and exits 1 if not.

    python tests/benchmarks/bench_soak.py [--events 1000000] [--every 100000] [--streams 10]
        [--label-delay 300] [--keep-dir] [--results docs/results/bench_soak.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package

from _results import RESULTS_DIR, result_row, write_results  # noqa: E402  (the script's folder)
from _worker_runs import broker_for  # noqa: E402
from helpers.pipeline_runs import wait_for_members, worker_metrics  # noqa: E402
from streamxai.kafka.config import confluent_config, ensure_topics  # noqa: E402
from streamxai.kafka.io import produce_events  # noqa: E402
from streamxai.local.demo_stream import agrawal_events  # noqa: E402
from streamxai.local.ports import free_port  # noqa: E402
from streamxai.modelspec import build_model  # noqa: E402
from streamxai.schemas import FeatureEvent, LabelEvent  # noqa: E402
from streamxai.settings import AGRAWAL_FEATURES, Settings  # noqa: E402
from streamxai.worker import spawn_worker, stop_worker  # noqa: E402

MB = 1024 * 1024
#: the topics of the stages after the model, whose lag the producer bounds too
LATER_STAGES = ("explain-tasks", "drift-feed")
#: how long one ask of the worker's metrics page may take (seconds)
PAGE_TIMEOUT_S = 30.0
#: how long the metrics page may go unanswered before the soak fails (--stall-limit's default, seconds)
STALL_LIMIT_S = 600.0
#: the models' memory is measured every this many events of each stream, for its high-water mark
MODEL_STEP = 500


def stream_events(i: int, per_stream: int) -> Iterator[FeatureEvent]:
    """Stream ``i``'s events: agrawal function 1 until a third of them, then function 2, and from
    two thirds on ``elevel`` and ``car`` swapped (the demo's drifts)."""
    return agrawal_events(f"soak-{i}", per_stream, drift_at=per_stream // 3, swap_at=2 * per_stream // 3, seed=i)


def soak_events(streams: int, per_stream: int, label_delay: int,
                sent: list[int]) -> Iterator[FeatureEvent | LabelEvent]:
    """The streams' events (:func:`stream_events`) round-robin, made as they are sent (a million
    events never sit in memory). Streams of even index carry their labels; the others send each
    event without it, and its label after the stream's event ``label_delay`` places later (the
    last ones at the end). ``sent[0]`` counts the feature events handed out."""
    gens = [stream_events(i, per_stream) for i in range(streams)]
    waiting: list[deque[FeatureEvent]] = [deque() for _ in range(streams)]

    def label(ev: FeatureEvent) -> LabelEvent:
        return LabelEvent(ev.stream_id, ev.seq, ev.y, ev.ts + label_delay)

    for _ in range(per_stream):
        for i, gen in enumerate(gens):
            ev = next(gen)
            sent[0] += 1
            if i % 2 == 0:
                yield ev
                continue
            yield FeatureEvent(ev.stream_id, ev.seq, ev.ts, ev.x, None)
            waiting[i].append(ev)
            if len(waiting[i]) > label_delay:
                yield label(waiting[i].popleft())
    for i in range(streams):
        while waiting[i]:
            yield label(waiting[i].popleft())


def model_bytes(rows: list[dict], streams: int, per_stream: int, label_delay: int,
                step: int = MODEL_STEP) -> list[tuple[int, int]]:
    """The memory the worker's models take at each row, and the most they took at any time up to
    it, by river's own measure (``_raw_memory_usage``: the object graph's ``sys.getsizeof``):
    each stream's default model (the worker's class, parameters and seed) learns the stream's
    labelled events in this process, and is measured at the count it had learned by the row (the
    row's predictions spread evenly over the streams, less ``label_delay`` for the streams with
    late labels) and every ``step`` events of each stream between rows. Models are deterministic,
    so these are the worker's trees. The worker holds ``1 + explain_groups`` of each (the model
    stage's and the explain groups' replicas). A default tree keeps splitting on agrawal, up to
    river's ``max_size``, so this part of the worker's memory grows by design; and at a drift a
    Hoeffding adaptive tree grows alternate subtrees beside the old ones before it drops either,
    a peak between rows whose memory the process keeps (the allocator seldom hands freed pages
    back), hence the high-water mark."""
    s = Settings(features=list(AGRAWAL_FEATURES))
    copies = 1 + s.explain_groups

    def learned(t: int, i: int) -> int:  # what stream i had learned when each stream had t events predicted
        return max(0, min(per_stream, t - (label_delay if i % 2 else 0)))

    row_t = [r["events"] // streams for r in rows]
    times = sorted(set(row_t) | set(range(0, max(row_t, default=0) + 1, step)))
    total = dict.fromkeys(times, 0)
    for i in range(streams):
        at: dict[int, int] = {}
        model = build_model(s.model, s.model_params, s.model_seed)
        events = stream_events(i, per_stream)
        done = 0
        for mark in sorted({learned(t, i) for t in times}):
            for ev in itertools.islice(events, mark - done):
                model.learn_one({f: ev.x[f] for f in s.features}, ev.y)
            done = mark
            at[mark] = model._raw_memory_usage
        for t in times:
            total[t] += copies * at[learned(t, i)]
    peak, peak_at = 0, {}
    for t in times:
        peak = peak_at[t] = max(peak, total[t])
    return [(total[t], peak_at[t]) for t in row_t]


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (``/proc/PID/task/TID/children``)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return out


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (exists and is no zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and its children (VmRSS, summed)."""
    total = 0
    for p in process_tree(pid):
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def cpu_seconds(pid: int) -> float:
    """User and system CPU of ``pid`` and its children so far (``/proc/PID/stat``)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in process_tree(pid):
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def dir_bytes(root: Path, on_disk: bool = False) -> tuple[int, int, int]:
    """``(total bytes, largest file's bytes, files)`` of the regular files under ``root``; with
    ``on_disk`` the blocks they take rather than their length (the broker's index files are
    sparse, preallocated to 10 MiB)."""
    total = largest = files = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:  # replaced while we walk
                continue
            size = st.st_blocks * 512 if on_disk else st.st_size
            total += size
            largest = max(largest, size)
            files += 1
    return total, largest, files


def topic_bytes(log_dir: Path, prefix: str) -> dict[str, int]:
    """Bytes on the broker's disk per topic of ``prefix`` (short names), summed over its
    partitions' folders (``<topic>-<partition>`` in the broker's log.dirs)."""
    out: dict[str, int] = {}
    for part in log_dir.glob(f"{prefix}*-*"):
        topic = part.name[len(prefix):].rsplit("-", 1)[0]
        out[topic] = out.get(topic, 0) + dir_bytes(part, on_disk=True)[0]
    return out


class GroupLag:
    """End offset minus the worker group's committed offset, per topic it consumes (a consumer
    that reads the group's commits without joining it)."""

    def __init__(self, s: Settings):
        from confluent_kafka import Consumer

        self.s = s
        self.c = Consumer(confluent_config(s, **{"group.id": s.app_id, "enable.auto.commit": False}))

    def by_topic(self) -> dict[str, int]:
        from confluent_kafka import TopicPartition

        topics = self.c.list_topics(timeout=10).topics
        tps = [TopicPartition(name, p) for name, meta in topics.items() if name.startswith(self.s.topic_prefix)
               for p in meta.partitions]
        lag: dict[str, int] = {}
        for tp in self.c.committed(tps, timeout=10):
            if tp.offset < 0:  # the group reads no such topic, or has committed nothing there yet
                continue
            end = self.c.get_watermark_offsets(tp, timeout=10, cached=False)[1]
            short = tp.topic[len(self.s.topic_prefix):]
            lag[short] = lag.get(short, 0) + max(0, end - tp.offset)
        return lag

    def close(self) -> None:
        self.c.close()


class Soak:
    """The run's measurements: a row every ``every`` events the worker has predicted."""

    def __init__(self, s: Settings, pid: int, log_dir: Path | None, every: int, total: int, rows_file: str = "",
                 stall_limit: float = STALL_LIMIT_S):
        self.s, self.pid, self.log_dir, self.every, self.total = s, pid, log_dir, every, total
        self.stall_limit = stall_limit
        #: since the last row: the longest the metrics page took to answer, and the asks it left unanswered
        self.page_wait, self.page_unanswered = 0.0, 0
        self.rows_file = rows_file
        self.lag = GroupLag(s)
        self.sent = [0]  # feature events handed to the producer (soak_events counts them)
        self.rows: list[dict] = []
        self.next_row = every
        self.t0 = time.monotonic()
        self.c0 = cpu_seconds(pid)
        self.last = (0, self.t0, self.c0)

    def metrics(self) -> dict:
        """The worker's metrics page. An ask it does not answer within ``PAGE_TIMEOUT_S`` is made
        again: the longest wait and the unanswered asks go into the next row (a worker whose event
        loop is held up answers late), and the soak fails once the page has not answered for
        ``stall_limit`` seconds or the worker has exited."""
        since = time.monotonic()
        while True:
            t0 = time.monotonic()
            try:
                page = worker_metrics(self.s, timeout=PAGE_TIMEOUT_S)
            except OSError as e:  # a timeout, or a connection refused or reset
                self.page_wait = max(self.page_wait, time.monotonic() - t0)
                self.page_unanswered += 1
                if not alive(self.pid):
                    raise RuntimeError(f"the worker (pid {self.pid}) exited") from e
                if time.monotonic() - since > self.stall_limit:
                    raise RuntimeError(f"the worker's metrics page has not answered for {self.stall_limit:g} s "
                                       f"({self.page_unanswered} asks; last: {e})") from e
                time.sleep(1.0)
                continue
            self.page_wait = max(self.page_wait, time.monotonic() - t0)
            return page

    def done(self) -> int:
        return int(self.metrics()["counters"].get("predictions", 0))

    def look(self) -> tuple[int, dict[str, int]]:
        """The events the worker predicted and the group's lag by topic; a row for each
        ``every`` passed."""
        done = self.done()
        lag = self.lag.by_topic()
        while done >= self.next_row:
            self.row(done, lag)
            self.next_row += self.every
        return done, lag

    def row(self, done: int, lag: dict[str, int]) -> None:
        now, cpu = time.monotonic(), cpu_seconds(self.pid)
        n0, t0, c0 = self.last
        metrics = self.metrics()
        ckpt, ckpt_max, ckpt_files = dir_bytes(Path(self.s.state_dir))
        row = {
            "events": done, "wall_s": now - self.t0, "rss": rss_bytes(self.pid),
            "rate": (done - n0) / (now - t0), "cpu_rate": (done - n0) / max(cpu - c0, 1e-9),
            "checkpoint_bytes": ckpt, "checkpoint_max": ckpt_max, "checkpoint_files": ckpt_files,
            "topics": topic_bytes(self.log_dir, self.s.topic_prefix) if self.log_dir else {},
            "lag": dict(lag), "behind": self.sent[0] - done, "pending": metrics["gauges"].get("labels_pending", 0),
            "metric_keys": len(metrics["counters"]) + len(metrics["gauges"]),
            "load": os.getloadavg()[0],
            "page_wait_max": self.page_wait, "page_unanswered": self.page_unanswered,
        }
        self.page_wait, self.page_unanswered = 0.0, 0
        self.last = (done, now, cpu)
        self.rows.append(row)
        if self.rows_file:
            with open(self.rows_file, "a") as f:
                f.write(json.dumps(row) + "\n")
        if len(self.rows) == 1:
            print(f"{'events':>9} {'wall s':>7} {'RSS MB':>7} {'ev/s':>6} {'ev/cpu-s':>8} {'ckpt MB':>7} "
                  f"{'largest':>8} {'files':>5} {'topics MB':>9} {'lag':>6} {'pending':>7} {'metrics':>7} {'load':>5} "
                  f"{'page s':>6}")
        print(f"{done:9d} {row['wall_s']:7.0f} {row['rss'] / MB:7.1f} {row['rate']:6.0f} {row['cpu_rate']:8.0f} "
              f"{ckpt / MB:7.2f} {ckpt_max / 1024:6.0f}kB {ckpt_files:5d} {sum(row['topics'].values()) / MB:9.1f} "
              f"{sum(lag.values()):6d} {row['pending']:7.0f} {row['metric_keys']:7d} {row['load']:5.1f} "
              f"{row['page_wait_max']:6.1f}", flush=True)
        if row["page_unanswered"]:
            print(f"          the metrics page left {row['page_unanswered']} asks unanswered within {PAGE_TIMEOUT_S:g} s "
                  "since the last row: the worker's event loop was held up", flush=True)
        if row["topics"]:
            print("          topics MB: " + ", ".join(f"{t} {b / MB:.1f}" for t, b in sorted(row["topics"].items())),
                  flush=True)
        print(f"          lag: {', '.join(f'{t} {n}' for t, n in sorted(lag.items()))}; {row['behind']} events "
              "sent but not yet predicted", flush=True)

    def wait_below(self, sent: int, backlog: int, bound: int, stage_bound: int, timeout: float) -> None:
        """Until fewer than ``backlog`` of the ``sent`` events wait for their prediction, the
        group's lag is below ``bound`` messages, and the lag of each stage after the model
        (:data:`LATER_STAGES`) below ``stage_bound`` (rows printed meanwhile). Events: the
        intake packs several events into one message of the arrivals topic, and the model agent
        several steps into one of explain-tasks, so messages alone undercount the events
        behind. Stages: were the explanations or the change test slower than the producer,
        their backlog would grow all run long, and the records Faust fetches ahead for them
        (up to its ``stream_buffer_maxsize`` a topic) with it, which is not the worker's own
        memory growing."""
        deadline = time.monotonic() + timeout
        while True:
            done, lag = self.look()
            stage = max((lag.get(t, 0) for t in LATER_STAGES), default=0)
            if sent - done < backlog and sum(lag.values()) < bound and stage < stage_bound:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{sent - done} events unpredicted, lag {lag} messages (bounds {backlog}, {bound}, "
                                   f"{stage_bound} a later stage) for {timeout:g} s")
            time.sleep(0.5)

    def finish(self, timeout: float, drain: float = 120.0) -> None:
        """Until the worker has predicted every event and then, for at most ``drain`` s, until
        the group has no lag; the last row then."""
        deadline = time.monotonic() + timeout
        while True:
            done, lag = self.look()
            if done >= self.total:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the worker predicted {done} of {self.total} events, lag {lag}, in {timeout:g} s")
            time.sleep(0.5)
        deadline = time.monotonic() + drain
        while sum(lag.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
            done, lag = self.look()
        if not self.rows or self.rows[-1]["events"] < done:
            self.row(done, self.lag.by_topic())


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs``."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def verdict(rows: list[dict], args: argparse.Namespace) -> tuple[bool, list[str], dict]:
    """Whether memory and throughput stayed flat after the warm-up, the lines that say why, and
    the figures (for the results file)."""
    after = [r for r in rows if r["events"] >= args.warmup]
    if len(after) < 3:
        return False, [f"too few rows after the warm-up of {args.warmup} events ({len(after)}; need 3): "
                       "run more --events or a smaller --every"], {}
    base = after[0]
    xs = [r["events"] / 100_000 for r in after]  # growth is judged per 100,000 events, whatever --every is
    # the worker's own memory: its RSS less the most its models took so far (model_bytes), which
    # grow by design and peak at a drift, a peak the process's RSS keeps
    own = [(r["rss"] - r.get("models_peak", r.get("models", 0))) / MB for r in after]
    rss_slope = slope(xs, own)
    models_slope = slope(xs, [r.get("models", 0) / MB for r in after])
    raw_slope = slope(xs, [r["rss"] / MB for r in after])
    k = max(1, min(2, (len(after) - 1) // 2))
    # the first interval after the warm-up is the one ending at the row after `base`
    first = sum(r["cpu_rate"] for r in after[1:1 + k]) / k
    last = sum(r["cpu_rate"] for r in after[-k:]) / k
    wall_first = sum(r["rate"] for r in after[1:1 + k]) / k
    wall_last = sum(r["rate"] for r in after[-k:]) / k
    ckpt_slope = slope(xs, [r["checkpoint_bytes"] / MB for r in after])
    ok_rss = rss_slope <= args.max_rss_growth
    ok_rate = last >= (1 - args.max_rate_drop) * first
    models = any("models" in r for r in after)
    lines = [
        f"flat memory: {'RSS less the models high-water mark' if models else 'RSS'} grows at most {args.max_rss_growth:g} MB per "
        f"100000 events after the first {args.warmup} (least-squares slope over the rows from {base['events']} events "
        f"on): {rss_slope:+.2f} MB per 100000 events ({own[0]:.1f} MB after the warm-up, at most "
        f"{max(own):.1f} MB later) -> {'flat' if ok_rss else 'NOT FLAT'}",
    ]
    if models:
        lines.append(f"the models, every copy the worker holds: {models_slope:+.2f} MB per 100000 events "
                     f"({base['models'] / MB:.1f} MB after the warm-up, {after[-1]['models'] / MB:.1f} MB at the end, "
                     f"at most {after[-1].get('models_peak', after[-1]['models']) / MB:.1f} MB in between); "
                     f"the whole RSS: {raw_slope:+.2f} MB per 100000 events ({base['rss'] / MB:.1f} MB after the "
                     f"warm-up, {after[-1]['rss'] / MB:.1f} MB at the end)")
    lines += [
        f"flat throughput: the last {k} interval(s) keep at least {1 - args.max_rate_drop:.0%} of the first {k} after "
        f"the warm-up, in events per CPU second of the worker (the machine is shared; wall-time rates move with "
        f"the neighbours' load): {last:.0f} against {first:.0f} ev/cpu-s (ratio {last / first:.2f}; wall "
        f"{wall_last:.0f} against {wall_first:.0f} ev/s, ratio {wall_last / wall_first:.2f}) "
        f"-> {'flat' if ok_rate else 'NOT FLAT'}",
        f"checkpoints: {ckpt_slope:+.3f} MB per 100000 events after the warm-up (largest file "
        f"{base['checkpoint_max'] / 1024:.0f} kB after the warm-up, {rows[-1]['checkpoint_max'] / 1024:.0f} kB at the "
        f"end; {rows[-1]['checkpoint_files']} files)",
    ]
    topics = sorted(set(after[0]["topics"]) | set(after[-1]["topics"]))
    if topics:
        span = (after[-1]["events"] - after[0]["events"]) / 100_000
        growth = {t: (after[-1]["topics"].get(t, 0) - after[0]["topics"].get(t, 0)) / span for t in topics}
        lines.append("internal topics on disk, growth per 100000 events after the warm-up (retention keeps them): "
                     + ", ".join(f"{t} {g / MB:.1f} MB" for t, g in growth.items()))
    figures = {"rss_base": base["rss"] / MB, "rss_end": after[-1]["rss"] / MB, "rss_slope": rss_slope,
               "own_base": own[0], "models_slope": models_slope, "raw_slope": raw_slope,
               "cpu_rate_first": first, "cpu_rate_last": last, "rate_first": wall_first, "rate_last": wall_last}
    return ok_rss and ok_rate, lines, figures


def write(path: str, rows: list[dict], figures: dict, args: argparse.Namespace, ok: bool) -> Path:
    """The results file: for each row after the warm-up, the worker's RSS, the models' memory and
    high-water mark, the RSS less that mark, and the rate of the interval up to the row."""
    after = [r for r in rows if r["events"] >= args.warmup]
    out = []
    for i, r in enumerate(after):
        case = f"{r['events']:,} events"
        out.append(result_row(case, "worker RSS", round(r["rss"] / MB, 1), "MB", baseline=round(figures["rss_base"], 1)))
        if "models" in r:
            peak = r.get("models_peak", r["models"])
            out += [result_row(case, "models (every copy)", round(r["models"] / MB, 1), "MB"),
                    result_row(case, "models' high-water mark", round(peak / MB, 1), "MB"),
                    result_row(case, "RSS less that mark", round((r["rss"] - peak) / MB, 1), "MB",
                               baseline=round(figures["own_base"], 1))]
        if i:
            out.append(result_row(case, "events per CPU second", round(r["cpu_rate"], 1), "events/cpu-s",
                                  baseline=round(figures["cpu_rate_first"], 1)))
        out.append(result_row(case, "checkpoints", round(r["checkpoint_bytes"] / MB, 1), "MB"))
    verdict_text = "flat" if ok else "NOT flat"
    return write_results(
        path, "bench_soak",
        f"Soak: one worker at default settings, {args.events:,} agrawal events with drift over {args.streams} "
        f"streams (half with labels {args.label_delay} events late): memory and throughput {verdict_text} after "
        f"{args.warmup:,} events (RSS less the models' high-water mark {figures['rss_slope']:+.2f} MB per 100,000 "
        f"events, at most {args.max_rss_growth:g}; events per CPU second {figures['cpu_rate_last']:.0f} at the end "
        f"against {figures['cpu_rate_first']:.0f}, at least {1 - args.max_rate_drop:.0%})",
        f"the same run after its warm-up of {args.warmup:,} events: memory then, and the mean rate of the first "
        f"post-warm-up intervals", out)


def main() -> int:
    """Starts its own broker on free ports (or uses $STREAMXAI_BOOTSTRAP; then no topic sizes)
    and one worker with the default settings (its topics and group its own), joined before the
    first event. The producer sends ``--chunk`` messages at a time and then waits until the
    group's lag over every topic it reads is below ``--max-lag`` messages, and that of each stage
    after the model below ``--max-stage-lag``, so every backlog stays bounded and the worker is
    never idle (:meth:`Soak.wait_below`). Events are counted by the worker's ``predictions``
    counter."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="feature events in all (default %(default)s)")
    ap.add_argument("--streams", type=int, default=10, help="streams, half of them with labels later (default %(default)s)")
    ap.add_argument("--every", type=int, default=100_000, help="events between rows (default %(default)s)")
    ap.add_argument("--label-delay", type=int, default=300,
                    help="a late label comes after this many later events of its stream (default %(default)s)")
    ap.add_argument("--warmup", type=int, default=0,
                    help="events before memory and throughput must be flat (default: 2 x --every)")
    ap.add_argument("--max-lag", type=int, default=20_000, help="bound of the group's lag, messages (default %(default)s)")
    ap.add_argument("--max-stage-lag", type=int, default=1_000,
                    help="bound of the lag of each stage after the model (explain-tasks, drift-feed), messages "
                         "(default %(default)s)")
    ap.add_argument("--backlog", type=int, default=10_000,
                    help="bound of the events produced but not yet predicted (default %(default)s)")
    ap.add_argument("--chunk", type=int, default=5_000, help="messages produced between looks at the lag")
    ap.add_argument("--max-rss-growth", type=float, default=4.0,
                    help="flat memory: RSS slope after the warm-up, MB per 100,000 events (default %(default)s: "
                         "40 bytes an event, less than one small Python object kept per event)")
    ap.add_argument("--max-rate-drop", type=float, default=0.2,
                    help="flat throughput: the last intervals' rate may fall this fraction below the first ones "
                         "after the warm-up (default %(default)s)")
    ap.add_argument("--stall-limit", type=float, default=STALL_LIMIT_S,
                    help="seconds the worker's metrics page may go unanswered before the soak fails (default "
                         "%(default)s); shorter holds are counted in the rows")
    ap.add_argument("--keep-dir", action="store_true", help="keep the run's folder (broker data, state, worker log)")
    ap.add_argument("--rows", default="", metavar="FILE",
                    help="append each row to this file as a JSON line, as it is measured")
    ap.add_argument("--verdict-of", default="", metavar="FILE",
                    help="run nothing: the verdict (and --results) of the rows a run wrote with --rows")
    ap.add_argument("--results", default="", metavar="FILE",
                    help=f"write the rows as a results file (e.g. {RESULTS_DIR.name}/bench_soak.json under docs/)")
    args = ap.parse_args()
    args.warmup = args.warmup or 2 * args.every
    per_stream = args.events // args.streams
    args.events = per_stream * args.streams
    if args.verdict_of:
        return report([json.loads(line) for line in Path(args.verdict_of).read_text().splitlines() if line], args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the worker and the broker are stopped
    tmp = tempfile.mkdtemp(prefix="bench-soak-")
    failed = True
    try:
        with broker_for(tmp) as bootstrap:
            run = uuid.uuid4().hex[:8]
            s = Settings(features=list(AGRAWAL_FEATURES), bootstrap_servers=bootstrap, topic_prefix=f"soak-{run}.",
                         app_id=f"soak-{run}", web_port=free_port(), state_dir=f"{tmp}/state")
            ensure_topics(s)
            log_dir = Path(tmp) / "kafka" / "data"
            print(f"{args.events} events over {args.streams} streams (labels {args.label_delay} events late in half of "
                  f"them), one worker: model {s.model}, explainers {s.explainers}, checkpoint_every "
                  f"{s.checkpoint_every}, emit_every {s.emit_every}; at most {args.backlog} events unpredicted and "
                  f"a lag under {args.max_lag} messages, {args.max_stage_lag} a stage after the model; "
                  f"run folder {tmp}", flush=True)
            worker = spawn_worker(s, log_file=f"{tmp}/worker.log", loglevel="warning")
            try:
                wait_for_members(s, 1, timeout=120)
                soak = Soak(s, worker.pid, log_dir if log_dir.is_dir() else None, args.every, args.events, args.rows,
                            args.stall_limit)
                try:
                    produce_events(s, soak_events(args.streams, per_stream, args.label_delay, soak.sent),
                                   pause=lambda _n: soak.wait_below(soak.sent[0], args.backlog, args.max_lag,
                                                                    args.max_stage_lag,
                                                                    timeout=900),
                                   every=args.chunk)
                    soak.finish(timeout=1200)
                finally:
                    soak.lag.close()
                if worker.poll() is not None:
                    raise RuntimeError(f"the worker exited with {worker.returncode}; see {tmp}/worker.log")
            finally:
                stop_worker(worker)
        failed = False
        return report(soak.rows, args)
    except BaseException:
        if failed:  # the run itself, not its report: the worker's log says what it met
            print(f"the soak failed: its folder {tmp} is kept; the end of the worker's log:", flush=True)
            print(log_tail(Path(tmp) / "worker.log"), flush=True)
        raise
    finally:
        if args.keep_dir or failed:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of ``path`` (or why there are none)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})"


def report(rows: list[dict], args: argparse.Namespace) -> int:
    """Print the verdict of ``rows`` (and write the results file if asked); 0 if flat, else 1.
    Rows without the models' memory get it first (:func:`model_bytes`: a few minutes for a
    million events)."""
    if rows and not all("models_peak" in r for r in rows):
        per_stream = args.events // args.streams
        for r, (now, peak) in zip(rows, model_bytes(rows, args.streams, per_stream, args.label_delay), strict=True):
            r["models"], r["models_peak"] = now, peak
    print(f"{'events':>9} {'RSS MB':>7} {'models MB':>9} {'their peak':>10} {'RSS less peak':>13} {'ev/cpu-s':>8}")
    for r in rows:
        print(f"{r['events']:9d} {r['rss'] / MB:7.1f} {r['models'] / MB:9.1f} {r['models_peak'] / MB:10.1f} "
              f"{(r['rss'] - r['models_peak']) / MB:13.1f} {r['cpu_rate']:8.0f}")
    ok, lines, figures = verdict(rows, args)
    print("\n".join(lines))
    if args.results and figures:
        print(f"results: {write(args.results, rows, figures, args, ok)}")
    print("FLAT" if ok else "NOT FLAT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
