"""The ``produce``, ``tail`` and ``plot`` commands (``streamxai.cli`` parses, these run).
User errors raise :class:`schemas.StreamxaiError` subclasses; the CLI prints them as one line.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import sys
import threading
import time
import uuid
from collections.abc import Collection
from typing import Any

import orjson
from streamxai.schemas import ConfigError, LabelEvent, StreamxaiError

from . import exit_codes
from .kafka.config import TOPIC_NAMES, confluent_config
from .kafka.watermarks import watermarks
from .settings import Settings

__all__ = ["produce", "tail", "plot", "last_seq", "last_seqs", "resolve_topic", "OUTPUT_TOPICS"]

OUTPUT_TOPICS = tuple(dict.fromkeys((*TOPIC_NAMES, "change-episodes")))  # episodes: from the change detection


def _kafka_error(s: Settings, e: Exception) -> StreamxaiError:
    return StreamxaiError(f"cannot talk to Kafka at {s.bootstrap_servers}: {e}; is the broker running "
                          "(`streamxai broker status`) and --bootstrap right?")


def last_seq(s: Settings, stream_id: str, tail: int = 2000, timeout: float = 10.0) -> int | None:
    """The highest seq of ``stream_id`` on the features topic that a worker accepts (None if the
    stream has no event there): :func:`last_seqs` of one stream."""
    return last_seqs(s, [stream_id], tail, timeout).get(stream_id)


def last_seqs(s: Settings, stream_ids: Collection[str], tail: int = 2000, timeout: float = 10.0) -> dict[str, int]:
    """The highest seq on the features topic that a worker accepts of each of ``stream_ids``
    that has events there (:func:`accepted_last_seq`). The partitions are read back from their
    ends in rounds, ``tail`` messages and then four times as many each round, so a stream whose
    partition took many events of other streams since is found too. After ``timeout`` s it gives
    what it found, saying on stderr how far back it read for the streams it did not find."""
    from confluent_kafka import Consumer, KafkaException

    topic = s.topic("features")
    c = Consumer(confluent_config(s, **{"group.id": f"streamxai-check-{uuid.uuid4().hex[:8]}",
                                        "enable.auto.commit": False, "enable.partition.eof": True, "log_level": 3}))
    try:
        md = c.list_topics(topic, timeout=timeout).topics.get(topic)
        if md is None or md.error is not None:
            return {}
        wanted = {sid.encode(): sid for sid in stream_ids}
        deadline = time.monotonic() + timeout
        # partition -> (start, end) unread
        left = {p: watermarks(c, topic, p, deadline - time.monotonic()) for p in md.partitions}
        left = {p: span for p, span in left.items() if span[1] > span[0]}
        found: dict[str, int | None] = {}
        width = tail
        while left and wanted and time.monotonic() < deadline:
            windows = {p: (max(lo, end - width), end) for p, (lo, end) in left.items()}
            read = _seqs_of(c, topic, windows, set(wanted), deadline)
            for p, by_key in read.items():
                lo, start = left[p][0], windows[p][0]
                for key, seqs in by_key.items():  # a stream's events are keyed by it: one partition holds them
                    if seqs and key in wanted:
                        found[wanted.pop(key)] = accepted_last_seq(seqs, s.max_seq_gap, from_start=start <= lo)
                if start <= lo:
                    del left[p]
                else:
                    left[p] = (lo, start)
            width *= 4
        if left and wanted:
            unread = sum(end - lo for lo, end in left.values())
            names = ", ".join(map(repr, list(wanted.values())[:5])) + (" ..." if len(wanted) > 5 else "")
            print(f"note: stream{'s' if len(wanted) > 1 else ''} {names} {'have' if len(wanted) > 1 else 'has'} no "
                  f"event among the messages of {topic} read in {timeout:.0f} s; {unread} older ones were not read "
                  "(if it has events there, send with --resume or --force)", file=sys.stderr)
        return {sid: q for sid, q in found.items() if q is not None}
    except KafkaException as e:
        raise _kafka_error(s, e) from None
    finally:
        c.close()


def _seqs_of(c: Any, topic: str, windows: dict[int, tuple[int, int]], keys: set[bytes],
             deadline: float) -> dict[int, dict[bytes, list[int]]]:
    """The seqs of the messages keyed by each of ``keys`` at offsets [start, end) of each
    partition's window of ``topic``, in order, for the partitions read to their window's end by
    ``deadline``."""
    from confluent_kafka import KafkaError, TopicPartition

    c.assign([TopicPartition(topic, p, start) for p, (start, _) in windows.items()])
    seqs: dict[int, dict[bytes, list[int]]] = {p: {} for p in windows}
    done: dict[int, dict[bytes, list[int]]] = {}
    while len(done) < len(windows) and time.monotonic() < deadline:
        for msg in c.consume(500, 0.5):
            p = msg.partition()
            if p in done or p not in windows:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    done[p] = seqs[p]
                continue
            end = windows[p][1]
            if msg.offset() < end and msg.key() in keys:
                try:
                    seq = orjson.loads(msg.value()).get("seq")
                except (orjson.JSONDecodeError, AttributeError, TypeError):
                    seq = None
                if isinstance(seq, int) and not isinstance(seq, bool):
                    seqs[p].setdefault(msg.key(), []).append(seq)
            if msg.offset() >= end - 1:
                done[p] = seqs[p]
    return done


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
    from .ingest import FileReport, file_events, file_streams, labels_after
    from .kafka.config import ensure_topics
    from .kafka.io import produce_events
    from .local.demo_stream import agrawal_events

    stream_id = args.stream_id or ("file" if args.source not in ("demo", "control") else args.source)
    with_labels = not getattr(args, "without_labels", False)
    label_delay = getattr(args, "label_delay", 0) or 0
    top = s
    if label_delay and (getattr(args, "labels", False) or not with_labels):
        raise ConfigError(f"--label-delay sends the labels of the events it sends; with "
                          f"{'--labels' if getattr(args, 'labels', False) else '--without-labels'} it has none to send: "
                          "leave one of them out")
    if getattr(args, "labels", False):
        return _produce_labels(args, s, stream_id)
    if args.source in ("demo", "control"):
        if not with_labels:  # the demo's events carry their labels; sent without them, none would come
            raise ConfigError("--without-labels sends the features of a file; the demo stream's labels come later "
                              "with `streamxai demo --label-delay N`")
        _check_demo_features(s, stream_id)
    else:
        s = s.for_stream(stream_id)  # the features and task of its stream profile
        if not s.features and not _feature_events(args.source):  # a feature event names its own stream
            raise ConfigError(f"to read {args.source} as stream {stream_id!r}, give its features: features = [...] in "
                              "the settings file (or --set features=a,b), or a [streams.\"<glob>\"] table matching "
                              "the stream id")
        # read the header now: a missing file or column is one line, before any Kafka connection
        _check_file = file_events(args.source, stream_id, list(s.features), args.target or s.target or None, task=s.task,
                                  categorical=list(s.categorical), ts_column=args.ts_column, report=FileReport(),
                                  labels=with_labels, of_stream=_of_stream(top))
        next(_check_file, None)
        _check_file.close()
    # the streams whose earlier seqs count: the --stream-id's for plain rows (numbered here), and
    # each stream a feature event names, from the first seq the file gives it
    plain, firsts = (True, {}) if args.source in ("demo", "control") else file_streams(args.source)
    try:
        ensure_topics(s)
        lasts = {} if args.force else last_seqs(s, ([stream_id] if plain else []) + list(firsts))
    except StreamxaiError:
        raise
    except Exception as e:  # the client's own errors: no broker, no access
        raise _kafka_error(s, e) from None
    previous = lasts.get(stream_id) if plain else None
    _check_event_seqs(s, args.source, firsts, lasts)
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
            args.source, stream_id, list(s.features), args.target or s.target or None, task=s.task,
            categorical=list(s.categorical), ts_column=args.ts_column, start_seq=start, report=report,
            labels=with_labels, of_stream=_of_stream(top)), args.source, report)
    if label_delay:
        events = labels_after(events, label_delay)
    t0 = time.monotonic()
    sent = _Sent()
    n = produce_events(s, sent.track(events), rate=args.rate)
    later = (f", and {sent.labels} labels {label_delay} events later to {s.topic('labels')}" if label_delay else "")
    print(f"produced {n - sent.labels} events of {sent.streams(stream_id)} to {s.topic('features')}{later} "
          f"in {time.monotonic() - t0:.1f} s")
    if args.source not in ("demo", "control"):
        print(report.summary(args.source), file=sys.stderr if report.n_bad else sys.stdout)
        return exit_codes.INCOMPLETE if report.n_bad else exit_codes.OK
    return exit_codes.OK


def _check_event_seqs(s: Settings, source: str, firsts: dict[str, int], lasts: dict[str, int]) -> None:
    """Refuse a file whose feature events give a stream seqs it already has on the topic: the
    worker would drop them as duplicates, and they carry their own seqs, so ``--resume`` cannot
    number them on."""
    late = [(sid, first, lasts[sid]) for sid, first in firsts.items() if sid in lasts and first <= lasts[sid]]
    if late:
        sid, first, last = late[0]
        more = f" (and {len(late) - 1} more of its streams)" if len(late) > 1 else ""
        raise StreamxaiError(
            f"stream {sid!r} already has events up to seq {last} on {s.topic('features')}, and the feature events of "
            f"it in {source} start from seq {first}{more}; the worker would drop those up to {last} as duplicates. "
            "Send only the later events (they carry their own seqs: --resume numbers a file's plain rows only), "
            "or --force to send them anyway")


def _of_stream(s: Settings) -> Any:
    """A stream id's task and categorical features under ``s`` (its profile's, else the top level's),
    for the feature and label events of a file, which name their own streams."""
    from streamxai.schemas import NoProfile

    def of(stream_id: str) -> tuple[str, tuple[str, ...]]:
        its = s.for_stream(stream_id)
        if not its.features:  # the workers would dead-letter it (no_profile)
            raise NoProfile(f"stream {stream_id!r} matches no stream profile ({', '.join(map(repr, s.streams))}) and "
                            "the top-level settings give no features")
        return its.task, tuple(its.categorical)
    return of


def _feature_events(path: str) -> bool:
    """Whether the first line of a JSONL file is a feature event (which names its stream); a file
    that cannot be read says so when it is read.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "e.jsonl"
    >>> _ = p.write_text('\\n{"schema": "feature_event/v1", "stream_id": "s"}\\n')
    >>> _feature_events(str(p)), _feature_events(str(p.with_suffix(".csv")))
    (True, False)
    """
    if path.lower().endswith(".csv"):
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
        return json.loads(first).get("schema") == "feature_event/v1"
    except (OSError, ValueError, AttributeError):
        return False


def _check_demo_features(s: Settings, stream_id: str) -> None:
    """The demo stream carries agrawal's features: a stream id whose profile (or the top level)
    gives other features would have every event dead-lettered by the workers.

    >>> from streamxai.settings import AGRAWAL_FEATURES
    >>> s = Settings(streams={"agr-*": {"features": list(AGRAWAL_FEATURES)}, "reg-*": {"features": ["x0", "x1"]}})
    >>> _check_demo_features(s, "agr-1")
    >>> _check_demo_features(s, "reg-1")
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: stream 'reg-1' falls under stream profile "reg-*", whose features are ['x0', 'x1']; \
the demo stream carries agrawal's features (salary, commission, age, elevel, car, zipcode, hvalue, hyears, loan), so \
the workers would dead-letter every event: choose a --stream-id that no profile of other features matches
    """
    from streamxai.schemas.features import check_stream_id

    from .settings import AGRAWAL_FEATURES

    check_stream_id(stream_id)  # a stream id no worker takes says so, not that it matches no profile
    features = s.for_stream(stream_id).features
    if not features and s.streams:
        raise ConfigError(f"stream {stream_id!r} matches no stream profile ({', '.join(map(repr, s.streams))}) and the "
                          "top-level settings give no features, so the workers would dead-letter every event: choose "
                          "a --stream-id that a profile of agrawal's features matches")
    if not features or sorted(features) == sorted(AGRAWAL_FEATURES):
        return
    glob = s.profile(stream_id)
    where = f'falls under stream profile "{glob}", whose' if glob is not None else "matches no stream profile; its"
    raise ConfigError(f"stream {stream_id!r} {where} features are {list(features)}; the demo stream carries "
                      f"agrawal's features ({', '.join(AGRAWAL_FEATURES)}), so the workers would dead-letter every "
                      "event: choose a --stream-id that no profile of other features matches")


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
    of_stream = _of_stream(s)  # a label event names its own stream
    s = s.for_stream(stream_id)  # the task and label field of its stream profile
    target = args.target or s.target or None
    first = file_labels(args.source, stream_id, target, task=s.task, ts_column=args.ts_column,
                        report=FileReport(), of_stream=of_stream)
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
    n = produce_events(s, sent.track(_reporting(file_labels(args.source, stream_id, target, task=s.task,
                                                            ts_column=args.ts_column, report=report,
                                                            of_stream=of_stream),
                                                args.source, report)), rate=args.rate)
    print(f"produced {n} labels of {sent.streams(stream_id)} to {s.topic('labels')} in {time.monotonic() - t0:.1f} s")
    print(report.summary(args.source).replace("event(s)", "label(s)"), file=sys.stderr if report.n_bad else sys.stdout)
    return exit_codes.INCOMPLETE if report.n_bad else exit_codes.OK


class _Sent:
    """The streams and seqs of the events (or labels) a command sent, for its summary line: a
    file's feature and label events keep their own stream_id and seq.

    >>> from streamxai.schemas import LabelEvent
    >>> sent = _Sent()
    >>> _ = list(sent.track([LabelEvent("a", 4, 1, 0.0), LabelEvent("a", 2, 0, 0.0), LabelEvent("b", 0, 1, 0.0)]))
    >>> sent.streams("file")
    "2 streams: 'a' (seq 2..4), 'b' (seq 0..0)"
    """

    SHOWN = 5  # streams named in the line

    def __init__(self) -> None:
        self.seqs: dict[str, list[int]] = {}  # stream -> [lowest, highest]
        self.labels = 0  # label events among them (``produce FILE --label-delay N``)

    def track(self, events: Any) -> Any:
        for ev in events:
            if isinstance(ev, LabelEvent):
                self.labels += 1
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
    from streamxai.schemas import FeatureEvent

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
    from .kafka.config import check_broker
    from .kafka.io import consume

    topic = resolve_topic(s, args.topic)
    check_broker(s)  # no broker: its one line, before the notice that tail is waiting
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
        readable = topic == s.topic("local-explanations") and not args.json and not args.meta
        for rec in consume(s, [topic], from_beginning=args.from_beginning, idle_timeout=args.idle):
            got.set()
            sys.stdout.write((_local_block(rec, args.top) if readable else _json_line(rec, args.meta)) + "\n")
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
               "timestamp": rec.timestamp, "timestamp_type": rec.timestamp_type, "time": _utc(rec.timestamp),
               "key": rec.key.decode(errors="replace") if rec.key is not None else None,
               ("value" if ok else "value_base64"): value}
        return orjson.dumps(out).decode()
    return orjson.dumps(value).decode()


def _local_block(rec: Any, top: int) -> str:
    """A local explanation as ``streamxai tail local-explanations`` prints it: a few lines (a
    blank one after), or the message as JSON when it cannot be read as one."""
    from .local.waterfall import local_text, parse_local

    try:
        local = parse_local(orjson.loads(rec.value)) if rec.value is not None else None
    except orjson.JSONDecodeError:
        local = None
    return _json_line(rec, False) if local is None else local_text(local, top=top) + "\n"


def _utc(ms: int | None) -> str | None:
    """A Kafka timestamp (ms since the epoch) as ISO 8601 UTC, to the millisecond.

    >>> _utc(1_700_000_000_123), _utc(None)
    ('2023-11-14T22:13:20.123Z', None)
    """
    if ms is None:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def plot(args: argparse.Namespace, s: Settings) -> int:
    from .local.plot import plot_summary, plot_view, read_stream, require_matplotlib, write_html

    require_matplotlib()  # before the topics are read
    if args.event is not None and not args.local:
        raise ConfigError("--event chooses the event of a local explanation: give --local too")
    if args.local:
        from .local.plot_local import local_png_name, local_summary, plot_local, read_local

        if args.html:
            raise ConfigError("--html writes the report of a stream's explanations; --local writes a PNG only")
        local = read_local(s, args.stream_id, args.event, idle=args.idle)
        print(local_summary(local, plot_local(local, args.out or local_png_name(args.stream_id, args.event))))
        return exit_codes.OK
    view = read_stream(s, args.stream_id, idle=args.idle)
    png = plot_view(view, args.out or f"{args.stream_id}.png")
    print(plot_summary(view, png))
    if args.html:
        print(f"wrote {write_html(view, png, args.html)}")
    return exit_codes.OK
