"""``streamxai demo``: a local broker, workers, a drifting demo stream, the dashboard and a live view."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
from streamxai.schemas import ConfigError

from .. import exit_codes
from ..kafka.config import confluent_config, ensure_topics, replication
from ..kafka.io import consume, produce_events, produce_raw
from ..settings import AGRAWAL_FEATURES, Settings
from ..worker import spawn_worker, stop_worker
from .demo_source import PAYMENTS_STREAM, payments_messages, payments_settings
from .demo_stream import DemoPlan, agrawal_events, labels_later
from .live_view import LiveView
from .ports import free_port, port_unused

__all__ = ["run_demo", "demo_settings", "demo_plan", "demo_overrides"]

DEMO_STREAM = "demo"
CONTROL_STREAM = "control"


SHORT_RUN = 12_000
#: how many payments later the labels of ``--source payments`` come, unless --label-delay says
SOURCE_LABEL_DELAY = 500


def demo_plan(n: int) -> DemoPlan:
    """Concept drift at a third of the run, feature swap (elevel <-> car) at two thirds.

    The drift switches agrawal's classification function 1 (salary and age) to 2 (age and
    elevel). Runs shorter than ``SHORT_RUN`` start from function 0 (age alone), which the
    default model learns within ~500 events, instead of 1.

    >>> p = demo_plan(3000); (p.drift_at, p.swap_at, p.f_before, p.f_after)
    (1000, 2000, 0, 2)
    >>> demo_plan(18000).f_before
    1
    """
    return DemoPlan(n, n // 3, 2 * n // 3, ("elevel", "car"), f_before=0 if n < SHORT_RUN else 1, f_after=2)


def demo_settings(n: int, label_delay: int = 0) -> dict[str, object]:
    """Smoothing that lets a run of ``n`` events show its changes in the explanations.

    The smoothed explanation reacts within ~1/alpha events, so 1/alpha is kept to ~1/200 of a
    segment between induced drifts, within [0.002, 0.03]. A short demo keeps at least half of
    the segment before its first drift past the change warm-up (<= n / 6), and the episode gap
    to a quarter of a segment (<= n / 12), so one drift's episode closes before the next begins.

    >>> demo_settings(18000)
    {'alpha': 0.005}
    >>> demo_settings(3000)
    {'alpha': 0.03, 'change_warmup': 500, 'change_episode_gap': 250}

    With labels ``label_delay`` events late the change detection counts positions (an event's
    arrival and its label's are two), so its warm-up and episode gap count twice as many:

    >>> demo_settings(3000, label_delay=500)
    {'alpha': 0.03, 'change_warmup': 1000, 'change_episode_gap': 500}
    """
    segment = max(1, n // 3)
    out: dict[str, object] = {"alpha": round(min(0.03, max(0.002, 30.0 / segment)), 4)}
    steps = 2 if label_delay else 1  # positions per event
    if n // 6 < _DEFAULT_WARMUP or steps > 1:
        out["change_warmup"] = steps * min(n // 6, _DEFAULT_WARMUP)
    if n // 12 < _DEFAULT_EPISODE_GAP or steps > 1:
        out["change_episode_gap"] = steps * max(1, min(n // 12, _DEFAULT_EPISODE_GAP))
    return out


_DEFAULT_WARMUP = Settings.__dataclass_fields__["change_warmup"].default
_DEFAULT_EPISODE_GAP = Settings.__dataclass_fields__["change_episode_gap"].default


def demo_overrides(run: str, n: int, explicit: set[str] | frozenset[str], label_delay: int = 0) -> tuple[dict, dict]:
    """The demo's own topic names, directory and features (agrawal's), and its settings scaled
    to ``n`` (and ``label_delay``), minus every setting a file, the environment or ``--set``
    gave (``explicit``).

    >>> names, scaled = demo_overrides("abc", 3000, {"alpha", "change_warmup"})
    >>> names["topic_prefix"], names["features"][:2], scaled
    ('streamxai.demo-abc.', ['salary', 'commission'], {'change_episode_gap': 250})
    """
    names = {"topic_prefix": f"streamxai.demo-{run}.", "app_id": f"streamxai-demo-{run}",
             "state_dir": f".streamxai/demo-{run}", "features": list(AGRAWAL_FEATURES)}
    return ({k: v for k, v in names.items() if k not in explicit},
            {k: v for k, v in demo_settings(n, label_delay).items() if k not in explicit})


def _local_broker(s: Settings):
    from .broker import LocalBroker

    host, _, port = s.bootstrap_servers.partition(",")[0].rpartition(":")
    if host not in ("127.0.0.1", "localhost") or _answers(s):
        return None, False  # a remote broker, or one already running here: use it, never stop it
    broker = LocalBroker(port=int(port), controller_port=int(port) + 1)
    st = broker.status()
    if st.running and st.bootstrap != broker.bootstrap:  # started with --port: it is not where the demo looks
        from streamxai.schemas import ConfigError

        raise ConfigError(f"the local Kafka broker (pid {st.pid}, data dir {st.data_dir}) runs on {st.bootstrap}, "
                          f"not on {broker.bootstrap}: run the demo with --bootstrap {st.bootstrap}, or stop it "
                          "(streamxai broker stop) and the demo starts one")
    already = st.ready
    if not already:
        print(f"starting the local Kafka broker on {broker.bootstrap} (first run resolves its jars with Maven) ...")
        broker.start()
    return broker, not already


def _counters(ws: Settings) -> dict | None:
    """The counters of the worker of settings ``ws`` (its JSON metrics), None if it does not answer."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{ws.web_host}:{ws.web_port}/streamxai/metrics", timeout=2) as r:
            return orjson.loads(r.read()).get("counters", {})
    except OSError:
        return None


def _change_caught_up(workers: list[Settings]) -> bool:
    """Whether the workers' change agents have read as many explanations as their explainers sent."""
    out = seen = 0
    for ws in workers:
        counters = _counters(ws)
        if counters is None:
            return False
        out += counters.get("explanations_out", 0)
        seen += counters.get("explanations_seen", 0)
    return seen >= out


def _wait_for_intake(workers: list[Settings], s: Settings, n: int, timeout: float = 60.0,
                     topics: list[str] | None = None) -> None:
    """Wait (up to ``timeout`` s) until the workers' intake agents have read ``n`` messages of
    the features and labels topics (or of ``topics``)."""
    inputs = {f"messages_in{{topic={t}}}" for t in (topics or [s.topic("features"), s.topic("labels")])}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        read = 0
        for ws in workers:
            counters = _counters(ws)
            if counters is None:
                break
            read += sum(v for k, v in counters.items() if k in inputs)
        else:
            if read >= n:
                return
        time.sleep(0.05)


def ensure_source_topics(s: Settings) -> None:
    """Create the topics of the sources (the team's, in the demo) if missing."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(confluent_config(s, log_level=3))
    md = admin.list_topics(timeout=10)
    have = md.topics
    rep = replication(s, len(md.brokers))
    new = [NewTopic(src.topic, num_partitions=s.partitions, replication_factor=rep.factor,
                    config={"min.insync.replicas": str(rep.min_insync)})
           for src in s.source_specs.values() if src.topic not in have]
    for fut in (admin.create_topics(new, operation_timeout=30).values() if new else ()):
        fut.result(timeout=30)


def _answers(s: Settings) -> bool:
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient(confluent_config(s, log_level=0)).list_topics(timeout=3)
        return True
    except Exception:
        return False


def _start_dashboard(s: Settings, port: int, logs: Path, started: list) -> None:
    """Start the dashboard; its process joins ``started`` (the processes the demo stops at its
    end) as soon as it exists, so an interrupt while it starts does not leave it running."""
    from .dashboard import spawn_dashboard, wait_for_dashboard

    if not port_unused(port, "127.0.0.1"):
        port = free_port("127.0.0.1")
    proc = spawn_dashboard(s, port, log_file=str(logs / "dashboard.log"))
    started.append(proc)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for_dashboard(url, proc, timeout=30)
    except ValueError as e:
        print(f"the dashboard did not start ({e}); see {logs}/dashboard.log")
        return
    print(f"dashboard: {url}")


def _cleanup(s: Settings, logs: Path, keep_logs: bool, explicit: set[str] | frozenset[str]) -> None:
    """Remove the demo's own topics and directory (never ones a user named in the settings)."""
    from confluent_kafka.admin import AdminClient

    if "topic_prefix" in explicit or "app_id" in explicit:
        print(f"kept the topics {s.topic_prefix}* (you chose the prefix or app id)")
        keep_logs = keep_logs or "state_dir" in explicit
        if not keep_logs:
            shutil.rmtree(logs, ignore_errors=True)
        return

    admin = AdminClient(confluent_config(s, log_level=3))
    try:
        topics = [t for t in admin.list_topics(timeout=10).topics
                  if t.startswith(s.topic_prefix) or t.startswith(s.app_id + "-")]
        for fut in admin.delete_topics(topics, operation_timeout=30).values() if topics else ():
            try:
                fut.result(timeout=30)
            except Exception:  # already gone
                pass
        print(f"removed the demo's {len(topics)} topics ({s.topic_prefix}*)")
    except Exception as e:  # the broker went away: nothing more to clean there
        print(f"could not remove the demo's topics {s.topic_prefix}*: {e}")
    if keep_logs or "state_dir" in explicit:
        print(f"kept {logs}/")
    else:
        shutil.rmtree(logs, ignore_errors=True)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the demo as Ctrl-C does: its workers, dashboard and broker are stopped and its
    topics removed (Python's default for SIGTERM would leave them running)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_demo(args: argparse.Namespace, s: Settings, explicit: set[str] | frozenset[str] | None = None) -> int:
    """Run the demo. The settings a file, the environment or the command line gave stay as given
    (``explicit``, by default ``s.explicit()``): the demo changes only defaults
    (:func:`demo_overrides`). Its topics and directory are removed at the end unless ``--keep``;
    SIGTERM stops it as Ctrl-C does.
    """
    with _sigterm_as_interrupt():
        return _run_demo(args, s, explicit)


def _run_demo(args: argparse.Namespace, s: Settings, explicit: set[str] | frozenset[str] | None) -> int:
    n = args.n
    explicit = s.explicit() if explicit is None else explicit
    label_delay = getattr(args, "label_delay", 0) or 0
    if label_delay < 0:
        raise ConfigError(f"--label-delay {label_delay} must be >= 0 (events between an event and its label)")
    source = getattr(args, "source", None)
    if source and args.control:
        raise ConfigError("--control runs a second stream in the own envelope; run --source without it")
    if source:
        label_delay = label_delay or SOURCE_LABEL_DELAY  # the team's labels come later, from another system
    changes, scaled = demo_overrides(uuid.uuid4().hex[:6], n, explicit, label_delay)
    s = s.replace(**changes, **scaled)
    stream = DEMO_STREAM
    if source:  # the demo stream as a team's payments and labels, read by [sources.*]
        s = s.replace(**payments_settings(s.topic_prefix))
        stream = PAYMENTS_STREAM
        print(f"the demo stream as team records: payments on {s.source_specs['payments'].topic} keyed by account, "
              f"labels on {s.source_specs['fraud'].topic} keyed by txn_id, {label_delay} payments later")
    if scaled:
        print("demo settings for", n, "events:", ", ".join(f"{k}={v}" for k, v in scaled.items()),
              "(set them in the settings file, the environment or --set to choose others)")
    plan = demo_plan(n)
    broker, started = _local_broker(s)
    workers = []
    board: list = []  # the dashboard's process, once spawned
    failed = timed_out = False
    logs = Path(s.state_dir)
    logs.mkdir(parents=True, exist_ok=True)
    try:
        ensure_topics(s)
        if source:
            ensure_source_topics(s)
        workers_settings = []
        for i in range(args.workers):
            ws = s.replace(web_port=free_port())
            workers.append(spawn_worker(ws, log_file=str(logs / f"worker-{i}.log"),
                                        loglevel=getattr(args, "loglevel", "info")))
            workers_settings.append(ws)
        print(f"{args.workers} worker(s) started; logs in {logs}/; topics {s.topic_prefix}*")
        if getattr(args, "dashboard_port", 0):
            _start_dashboard(s, args.dashboard_port, logs, board)

        def produce() -> None:
            events = agrawal_events(stream, n, plan.drift_at, plan.swap_at, seed=42, f_before=plan.f_before,
                                    f_after=plan.f_after)
            # with --label-delay N the demo keeps at most N/4 messages ahead of the intake, which
            # records the order
            chunk = max(1, label_delay // 4)
            if source:
                topics = [src.topic for src in s.source_specs.values()]
                produce_raw(s, topics[0], payments_messages(events, s.topic_prefix, label_delay), every=chunk,
                            pause=lambda n: _wait_for_intake(workers_settings, s, n - chunk, topics=topics))
                return
            streams = [events]
            if args.control:
                streams.append(agrawal_events(CONTROL_STREAM, n, None, None, seed=43, f_before=plan.f_before))
            # with --label-delay N each label goes to the labels topic N events after its features
            sent = [labels_later(evs, label_delay) if label_delay else list(evs) for evs in streams]
            msgs = [m for ms in itertools.zip_longest(*sent) for m in ms if m is not None]
            produce_events(s, msgs, rate=args.rate, every=chunk if label_delay else 0,
                           pause=lambda n: _wait_for_intake(workers_settings, s, n - chunk))

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        view = LiveView(list(s.for_stream(stream).features), s.topic_prefix, plan=plan.describe())
        topics = [s.topic(t) for t in (*view.reader.TOPICS, "dead-letters")]
        deadline = time.monotonic() + args.timeout
        done_at = None
        streams = [stream] + ([CONTROL_STREAM] if args.control else [])
        for rec in consume(s, topics, idle_timeout=30.0):
            view.add(rec)
            view.render()
            finished = all(view.min_explained_seq(sid) >= n - s.emit_every for sid in streams)
            if finished and done_at is None:
                done_at = time.monotonic()
            if done_at and time.monotonic() - done_at > 3.0:
                break
            if time.monotonic() > deadline:
                print(f"timed out after {args.timeout} s")
                timed_out = True
                break
            if any(w.poll() is not None for w in workers):
                print(f"a worker exited; see {logs}/worker-*.log")
                failed = True
                break
        # the change agent trails the explainers: wait (up to two minutes) until it has read every
        # explanation, then re-read the change topics, so the summary holds the last episodes
        wait_until = time.monotonic() + 120.0
        while not failed and not _change_caught_up(workers_settings) and time.monotonic() < wait_until:
            time.sleep(1.0)
        view.forget_changes()
        for rec in consume(s, [s.topic("drift-events"), s.topic("change-episodes")], idle_timeout=3.0):
            view.add(rec)
        view.render(force=True)
        print(view.summary())
        # the story: where the drifts were induced and how far each change is from them, in the
        # seqs of the events explained (with labels that come later, changes are found at positions)
        print(plan.story(stream, view.changes, view.episodes))
        return exit_codes.INCOMPLETE if failed or timed_out else exit_codes.OK
    finally:
        for w in workers:
            stop_worker(w)
        for proc in board:
            stop_worker(proc)
        if getattr(args, "keep", False):
            print(f"kept the demo's topics {s.topic_prefix}* and {logs}/; look at them again with "
                  f"`streamxai dashboard --set topic_prefix={s.topic_prefix}` or "
                  f"`streamxai plot {stream} --set topic_prefix={s.topic_prefix}`")
        else:
            _cleanup(s, logs, keep_logs=failed, explicit=explicit)
        if broker is not None and started and not args.keep_broker:
            broker.stop()
            print("local broker stopped")
