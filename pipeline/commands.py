"""The ``produce``, ``tail`` and ``plot`` commands (``pipeline.cli`` parses, these run).

User errors raise :class:`schemas.StreamxaiError` subclasses; the CLI prints them as one line.
"""

from __future__ import annotations

import argparse
import base64
import sys
import threading
import time
import uuid
from typing import Any

import orjson

from schemas import ConfigError, StreamxaiError

from . import exit_codes
from .kafka.config import TOPIC_NAMES, confluent_config
from .settings import Settings

__all__ = ["produce", "tail", "plot", "last_seq", "resolve_topic", "OUTPUT_TOPICS"]

OUTPUT_TOPICS = tuple(dict.fromkeys((*TOPIC_NAMES, "change-episodes")))  # episodes: from the change detection


def _kafka_error(s: Settings, e: Exception) -> StreamxaiError:
    return StreamxaiError(f"cannot talk to Kafka at {s.bootstrap_servers}: {e}; is the broker running "
                          "(`streamxai broker status`) and --bootstrap right?")


def last_seq(s: Settings, stream_id: str, tail: int = 2000, timeout: float = 10.0) -> int | None:
    """The highest seq of ``stream_id`` among the last ``tail`` messages of each partition of the
    features topic that a worker accepts (None if none is there): enough to catch a file or demo
    produced twice. A seq more than ``max_seq_gap`` beyond the one before it is a dead letter
    (reason ``seq_gap``) and is passed over (:func:`accepted_last_seq`)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    topic = s.topic("features")
    c = Consumer(confluent_config(s, **{"group.id": f"streamxai-check-{uuid.uuid4().hex[:8]}",
                                        "enable.auto.commit": False, "log_level": 3}))
    try:
        md = c.list_topics(topic, timeout=timeout).topics.get(topic)
        if md is None or md.error is not None:
            return None
        ends, starts, whole = {}, [], {}
        deadline = time.monotonic() + timeout
        for p in md.partitions:
            while True:  # a topic created a moment ago may have no leader yet
                try:
                    lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
                    break
                except KafkaException as e:
                    transient = e.args[0].code() in (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                                                     KafkaError.UNKNOWN_TOPIC_OR_PART)
                    if not (transient or e.args[0].retriable()) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            if hi > lo:
                ends[p] = hi
                starts.append(TopicPartition(topic, p, max(lo, hi - tail)))
                whole[p] = hi - tail <= lo  # the window holds the partition's whole history
        if not starts:
            return None
        c.assign(starts)
        key = stream_id.encode()
        seqs: dict[int, list[int]] = {}  # by partition, in offset order
        deadline = time.monotonic() + timeout
        while ends and time.monotonic() < deadline:
            for msg in c.consume(500, 0.5):
                if msg.error():
                    continue
                if msg.key() == key:
                    try:
                        seq = orjson.loads(msg.value()).get("seq")
                    except (orjson.JSONDecodeError, AttributeError, TypeError):
                        seq = None
                    if isinstance(seq, int) and not isinstance(seq, bool):
                        seqs.setdefault(msg.partition(), []).append(seq)
                if msg.offset() >= ends.get(msg.partition(), 0) - 1:
                    ends.pop(msg.partition(), None)
        found = [accepted_last_seq(q, s.max_seq_gap, from_start=whole[p]) for p, q in seqs.items()]
        return max((q for q in found if q is not None), default=None)
    except KafkaException as e:
        raise _kafka_error(s, e) from None
    finally:
        c.close()


def accepted_last_seq(seqs: list[int], max_seq_gap: int, from_start: bool = True) -> int | None:
    """The last seq a worker accepts of a stream whose events came with ``seqs`` (in order): a
    seq more than ``max_seq_gap`` beyond the last accepted one is refused, and so is a negative
    one. ``from_start``: ``seqs`` begin with the stream's first event (else the first is taken
    as accepted).

    >>> accepted_last_seq([0, 1, 2, 10**9, 3], 10_000), accepted_last_seq([10**9], 10_000)
    (3, None)
    >>> accepted_last_seq([50_000, 50_001], 10_000, from_start=False)
    50001
    """
    last = -1 if from_start else None
    for q in seqs:
        if q >= 0 and (last is None or last < q <= last + max_seq_gap):
            last = q
    return None if last is None or last < 0 else last


def produce(args: argparse.Namespace, s: Settings) -> int:
    from .ingest import FileReport, file_events
    from .kafka.config import ensure_topics
    from .kafka.io import produce_events
    from .local.demo_stream import agrawal_events

    stream_id = args.stream_id or ("file" if args.source not in ("demo", "control") else args.source)
    with_labels = not getattr(args, "without_labels", False)
    if getattr(args, "labels", False):
        return _produce_labels(args, s, stream_id)
    if args.source not in ("demo", "control"):
        s = s.for_stream(stream_id)  # the features and target of its stream profile
        if not s.features:
            raise ConfigError(f"to read {args.source} as stream {stream_id!r}, give its features: features = [...] in "
                              "the settings file (or --set features=a,b), or a [streams.\"<glob>\"] table matching "
                              "the stream id")
        # read the header now: a missing file or column is one line, before any Kafka connection
        _check_file = file_events(args.source, stream_id, list(s.features), args.target, target_kind=s.target,
                                  categorical=list(s.categorical), ts_column=args.ts_column, report=FileReport(),
                                  labels=with_labels)
        next(_check_file, None)
        _check_file.close()
    try:
        ensure_topics(s)
        previous = None if args.force else last_seq(s, stream_id)
    except StreamxaiError:
        raise
    except Exception as e:  # the client's own errors: no broker, no access
        raise _kafka_error(s, e) from None
    start = 0
    if previous is not None:
        if not args.resume:
            raise StreamxaiError(
                f"stream {stream_id!r} already has events up to seq {previous} on {s.topic('features')}; the worker "
                f"would drop these as duplicates. Use --stream-id NEW for a new stream, --resume to number these "
                f"from seq {previous + 1}, or --force to send them anyway")
        start = previous + 1
    report = FileReport()
    if args.source in ("demo", "control"):
        drift = args.source == "demo"
        events: Any = agrawal_events(
            stream_id, args.n,
            drift_at=(args.drift_at if args.drift_at is not None else args.n // 3) if drift else None,
            swap_at=(args.swap_at if args.swap_at is not None else 2 * args.n // 3) if drift else None,
            seed=args.seed)
        if start:
            events = _renumber(events, start)
    else:
        events = _reporting(file_events(
            args.source, stream_id, list(s.features), args.target, target_kind=s.target,
            categorical=list(s.categorical), ts_column=args.ts_column, start_seq=start, report=report,
            labels=with_labels), args.source, report)
    t0 = time.monotonic()
    sent = _Sent()
    n = produce_events(s, sent.track(events), rate=args.rate)
    print(f"produced {n} events of {sent.streams(stream_id)} to {s.topic('features')} "
          f"in {time.monotonic() - t0:.1f} s")
    if args.source not in ("demo", "control"):
        print(report.summary(args.source), file=sys.stderr if report.bad else sys.stdout)
        return exit_codes.INCOMPLETE if report.bad else exit_codes.OK
    return exit_codes.OK


def _produce_labels(args: argparse.Namespace, s: Settings, stream_id: str) -> int:
    """``produce FILE --labels``: the file's labels as label events on the labels topic."""
    from .ingest import FileReport, file_labels
    from .kafka.config import ensure_topics
    from .kafka.io import produce_events

    if args.source in ("demo", "control"):
        raise ConfigError("--labels sends the labels of a file; for the demo use `streamxai demo --label-delay N`")
    if getattr(args, "without_labels", False):
        raise ConfigError("--labels and --without-labels exclude each other: send the features first "
                          "(--without-labels), then the labels (--labels)")
    s = s.for_stream(stream_id)  # the target of its stream profile (a regression's `number`)
    first = file_labels(args.source, stream_id, args.target, target_kind=s.target, ts_column=args.ts_column,
                        report=FileReport())
    next(first, None)  # a missing file or target column: one line, before any Kafka connection
    first.close()
    try:
        ensure_topics(s)
    except StreamxaiError:
        raise
    except Exception as e:
        raise _kafka_error(s, e) from None
    report = FileReport()
    t0 = time.monotonic()
    sent = _Sent()
    n = produce_events(s, sent.track(_reporting(file_labels(args.source, stream_id, args.target, target_kind=s.target,
                                                            ts_column=args.ts_column, report=report),
                                                args.source, report)), rate=args.rate)
    print(f"produced {n} labels of {sent.streams(stream_id)} to {s.topic('labels')} in {time.monotonic() - t0:.1f} s")
    print(report.summary(args.source).replace("event(s)", "label(s)"), file=sys.stderr if report.bad else sys.stdout)
    return exit_codes.INCOMPLETE if report.bad else exit_codes.OK


class _Sent:
    """The streams and seqs of the events (or labels) a command sent, for its summary line: a
    file's feature and label events keep their own stream_id and seq.

    >>> from schemas import LabelEvent
    >>> sent = _Sent()
    >>> _ = list(sent.track([LabelEvent("a", 4, 1, 0.0), LabelEvent("a", 2, 0, 0.0), LabelEvent("b", 0, 1, 0.0)]))
    >>> sent.streams("file")
    "2 streams: 'a' (seq 2..4), 'b' (seq 0..0)"
    """

    SHOWN = 5  # streams named in the line

    def __init__(self) -> None:
        self.seqs: dict[str, list[int]] = {}  # stream -> [lowest, highest]

    def track(self, events: Any) -> Any:
        for ev in events:
            span = self.seqs.get(ev.stream_id)
            if span is None:
                self.seqs[ev.stream_id] = [ev.seq, ev.seq]
            else:
                span[0], span[1] = min(span[0], ev.seq), max(span[1], ev.seq)
            yield ev

    def streams(self, default: str) -> str:
        if not self.seqs:
            return f"stream {default!r}"
        parts = [f"{sid!r} (seq {lo}..{hi})" for sid, (lo, hi) in list(self.seqs.items())[:self.SHOWN]]
        if len(self.seqs) > self.SHOWN:
            parts.append(f"... and {len(self.seqs) - self.SHOWN} more")
        return f"stream {parts[0]}" if len(self.seqs) == 1 else f"{len(self.seqs)} streams: {', '.join(parts)}"


def _reporting(events: Any, path: str, report: Any) -> Any:
    shown = 0
    for ev in events:
        while shown < len(report.bad):
            line, why = report.bad[shown]
            print(f"{path}:{line}: skipped: {why}", file=sys.stderr)
            shown += 1
        yield ev
    for line, why in report.bad[shown:]:
        print(f"{path}:{line}: skipped: {why}", file=sys.stderr)


def _renumber(events: Any, start: int) -> Any:
    from schemas import FeatureEvent

    for ev in events:
        yield FeatureEvent(ev.stream_id, ev.seq + start, ev.ts, ev.x, ev.y)


def resolve_topic(s: Settings, name: str, timeout: float = 10.0) -> str:
    """A short name (``explanations``) or a full topic name that exists; else an error that
    lists the valid names."""
    if name in OUTPUT_TOPICS:
        return s.topic(name)
    from confluent_kafka.admin import AdminClient

    try:
        existing = set(AdminClient(confluent_config(s, log_level=3)).list_topics(timeout=timeout).topics)
    except Exception as e:
        raise _kafka_error(s, e) from None
    if name in existing:
        return name
    ours = sorted(t for t in existing if t.startswith(s.topic_prefix))
    # every topic of a deployment (the pipeline's and its checkpoints), no more: a prefix may hold others
    raise ConfigError(f"unknown topic {name!r}; use one of {', '.join(OUTPUT_TOPICS)} (prefix {s.topic_prefix!r})"
                      + (f" or a full name such as {', '.join(ours[:len(TOPIC_NAMES) + 1])}" if ours else ""))


def tail(args: argparse.Namespace, s: Settings) -> int:
    from .kafka.io import consume

    topic = resolve_topic(s, args.topic)
    got = threading.Event()

    def notice() -> None:
        if not got.is_set():
            where = "messages" if args.from_beginning else "new messages"
            print(f"waiting for {where} on {topic} (Ctrl-C to stop"
                  + ("" if args.from_beginning else "; --from-beginning shows earlier ones")
                  + ("" if args.idle else "; --idle S stops after S quiet seconds") + ")", file=sys.stderr, flush=True)

    timer = threading.Timer(2.0, notice)
    timer.daemon = True
    timer.start()
    n = 0
    try:
        for rec in consume(s, [topic], from_beginning=args.from_beginning, idle_timeout=args.idle):
            got.set()
            sys.stdout.write(_json_line(rec, args.meta) + "\n")
            sys.stdout.flush()
            n += 1
            if args.max is not None and n >= args.max:
                break
    finally:
        timer.cancel()
    return exit_codes.OK


def _json_line(rec: Any, meta: bool) -> str:
    try:
        value: Any = orjson.loads(rec.value) if rec.value is not None else None
        ok = True
    except orjson.JSONDecodeError:
        value, ok = base64.b64encode(rec.value).decode(), False
    if meta or not ok:
        out = {"topic": rec.topic, "partition": rec.partition, "offset": rec.offset,
               "key": rec.key.decode(errors="replace") if rec.key is not None else None,
               ("value" if ok else "value_base64"): value}
        return orjson.dumps(out).decode()
    return orjson.dumps(value).decode()


def plot(args: argparse.Namespace, s: Settings) -> int:
    from .local.plot import plot_summary, plot_view, read_stream, write_html

    view = read_stream(s, args.stream_id, idle=args.idle)
    png = plot_view(view, args.out or f"{args.stream_id}.png")
    print(plot_summary(view, png))
    if args.html:
        print(f"wrote {write_html(view, png, args.html)}")
    return exit_codes.OK
