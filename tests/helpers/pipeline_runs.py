"""Runs of the pipeline on a broker: settings with their own topics and group, collecting output, the
arrivals as the reference reads them, a worker's metrics, and bounded waits for the group to form or commit."""

from __future__ import annotations

import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable

import orjson
from confluent_kafka import KafkaError
from streamxai.kafka.config import confluent_config
from streamxai.kafka.io import consume
from streamxai.kafka.replay import PartitionHistory
from streamxai.kafka.watermarks import watermarks
from streamxai.local.ports import free_port
from streamxai.reference import Recorded
from streamxai.schemas import Source, origin, parse_arrival, unpack_arrivals
from streamxai.settings import AGRAWAL_FEATURES, Settings


def make_settings(bootstrap: str, state_dir: str, **over) -> Settings:
    run = uuid.uuid4().hex[:8]
    base = dict(
        features=list(AGRAWAL_FEATURES), bootstrap_servers=bootstrap, topic_prefix=f"it-{run}.", app_id=f"it-{run}",
        web_port=free_port(), state_dir=state_dir, partitions=4,
        model="river.tree.HoeffdingTreeClassifier", model_params={"grace_period": 100},
        alpha=0.01, emit_every=5, explain_groups=2, storage_size=50, grid_size=5, session_timeout_s=10.0,
    )
    base.update(over)
    return Settings(**base)


def reference_values(s: Settings, events: Iterable) -> dict[tuple[str, int, str, str], float]:
    """The in-process core's values at the seqs where the pipeline emits:
    {(stream_id, seq, explainer, feature): value}."""
    from streamxai.plan import stream_explainer

    out = {}
    by_stream: dict = {}
    for ev in events:
        se = by_stream.setdefault(ev.stream_id, stream_explainer(s, ev.stream_id))
        values = se.process_one(ev.x, ev.y)
        if se.n_seen % s.emit_every == 0:
            for v in values:
                out[(ev.stream_id, ev.seq, v.explainer, v.feature)] = v.value
    return out


def explanation_values(msgs: Iterable[dict]) -> dict[tuple[str, int, str, str], float]:
    """Decoded ``explanations`` messages as {(stream_id, seq, explainer, feature): value}."""
    return {(m["stream_id"], m["seq"], m["explainer"], m["feature"]): m["value"] for m in msgs}


def recorded_arrivals(s: Settings, batches: list[int] | None = None) -> list[Recorded]:
    """The arrivals topic as the reference reads it: every message with its record's timestamp and origin
    (each batch's size appended to ``batches``)."""
    history, out = PartitionHistory(s), []
    topic = s.topic("arrivals")
    for p in range(s.partitions):
        for off, value, ts, headers in history.records(topic, p, None, None):
            at = Source(topic, p, off, timestamp=ts, headers=headers)
            items = unpack_arrivals(value, at)
            if items is not None and batches is not None:
                batches.append(len(items))
            for raw, came in items or [(value, origin(at))]:
                out.append(Recorded(parse_arrival(raw, s.feature_spec(), where=str(came)), ts,
                                    ((came.topic, came.partition), came.offset)))
    return out


def collect(s: Settings, topic: str, done: Callable[[list[dict]], bool], timeout: float = 180.0) -> list[dict]:
    """Decoded messages of ``topic`` (short name) until ``done(messages)`` or ``timeout`` s."""
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    for rec in _poll(s, topic, deadline):
        obj = orjson.loads(rec.value)
        obj["_partition"] = rec.partition
        out.append(obj)
        if done(out):
            break
    return out


def collect_all(s: Settings, topic: str, timeout: float = 60.0) -> list[dict]:
    """Every decoded message of ``topic`` up to each partition's end offset when called, in partition order;
    fails after ``timeout`` s rather than give part of them."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    full = s.topic(topic)
    c = Consumer(confluent_config(s, **{"group.id": f"read-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False}))
    out: list[dict] = []
    try:
        parts = c.list_topics(full, timeout=10).topics[full].partitions
        ends = {p: watermarks(c, full, p, timeout=10)[1] for p in parts}
        left = {p for p, end in ends.items() if end > 0}
        c.assign([TopicPartition(full, p, OFFSET_BEGINNING) for p in left])
        deadline = time.monotonic() + timeout
        while left:
            if time.monotonic() > deadline:
                raise AssertionError(f"read {len(out)} messages of {full} in {timeout:g} s, not yet to its ends {ends}")
            rec = c.poll(0.5)
            if rec is None or rec.error() or rec.offset() >= ends[rec.partition()]:
                continue
            obj = orjson.loads(rec.value())
            obj["_partition"] = rec.partition()
            out.append(obj)
            if rec.offset() + 1 >= ends[rec.partition()]:
                left.discard(rec.partition())
    finally:
        c.close()
    return out


def _poll(s: Settings, topic: str, deadline: float) -> Iterable:
    for rec in consume(s, [s.topic(topic)], idle_timeout=max(1.0, deadline - time.monotonic())):
        yield rec
        if time.monotonic() > deadline:
            return


def worker_metrics(s: Settings, timeout: float = 5.0) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{s.web_port}/streamxai/metrics", timeout=timeout) as r:
        return orjson.loads(r.read())


def until(check: Callable[[], object], timeout: float, what: str, *, every: float = 0.2,
          last: Callable[[], object] | None = None) -> object:
    """Poll ``check`` every ``every`` s until it returns something true; fail after ``timeout``
    s, saying what ``last()`` returns then (what the check saw last, say)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            seen = f"; last seen: {last()}" if last is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{seen}")
        time.sleep(every)


def wait_for_members(s: Settings, n: int, timeout: float = 60.0) -> None:
    """Until the workers' consumer group (``s.app_id``) is stable with ``n`` members that each
    hold partitions."""
    from confluent_kafka import ConsumerGroupState, KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(confluent_config(s))

    def formed() -> bool:
        try:
            group = admin.describe_consumer_groups([s.app_id], request_timeout=5)[s.app_id].result(timeout=10)
        except (KafkaException, TimeoutError):  # the group's coordinator is not ready yet
            return False
        return (group.state == ConsumerGroupState.STABLE and len(group.members) == n
                and all(m.assignment.topic_partitions for m in group.members))

    until(formed, timeout, f"{n} workers to share the partitions of group {s.app_id}")


#: what a broker answers for a group's offsets while it loads them (librdkafka does not ask again)
_NO_COORDINATOR_YET = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.COORDINATOR_NOT_AVAILABLE}


def committed(s: Settings, topic: str) -> tuple[int, int]:
    """``(committed, produced)`` message counts of ``topic`` summed over partitions; a broker not yet the
    group's coordinator is asked again for up to 10 s."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    c = Consumer(confluent_config(s, **{"group.id": s.app_id, "enable.auto.commit": False}))
    try:  # never subscribes, so it does not join the workers' group
        meta = c.list_topics(s.topic(topic), timeout=10).topics[s.topic(topic)]
        tps = [TopicPartition(s.topic(topic), p) for p in meta.partitions]
        deadline = time.monotonic() + 10
        while True:
            try:
                found = c.committed(tps, timeout=10)
                break
            except KafkaException as e:
                if e.args[0].code() not in _NO_COORDINATOR_YET or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        done = sum(max(tp.offset, 0) for tp in found)
        ends = sum(watermarks(c, tp.topic, tp.partition, timeout=10)[1] for tp in tps)
        return done, ends
    finally:
        c.close()


def wait_for_commit(s: Settings, topics: Iterable[str], at_least: int | None = None, timeout: float = 60.0) -> None:
    """Until the workers' group has committed ``at_least`` messages on each of ``topics`` (None: all there now)."""
    for topic in topics:
        def enough(topic: str = topic) -> bool:
            done, ends = committed(s, topic)
            return done >= (ends if at_least is None else at_least)

        until(enough, timeout, f"group {s.app_id} to commit {at_least or 'everything'} on {topic}")


#: run in a worker's process (``python -c``): Faust's commit, then SIGKILL at once (no turn of the
#: event loop after the commit) once a commit took the worker's ``{topic}`` records past ``{at_least}``
_KILLED_AFTER_COMMIT = """
import os, signal, sys
from faust.transport import consumer

committed = consumer.Consumer._commit_offsets

async def commit_then_die(self, offsets, *args, **kwargs):
    done = await committed(self, offsets, *args, **kwargs)
    if done and any(tp.topic.endswith(".{topic}") and o >= {at_least} for tp, o in offsets.items()):
        os.kill(os.getpid(), signal.SIGKILL)
    return done

consumer.Consumer._commit_offsets = commit_then_die
from streamxai.cli import main
sys.exit(main(["worker", "--loglevel", "warning", "--roles", "{roles}"]))
"""


def killed_after_commit(topic: str, at_least: int, roles: str = "model,explain,change") -> str:
    """A worker's code (``python -c``) that SIGKILLs itself right after committing ``at_least`` ``topic`` records."""
    return _KILLED_AFTER_COMMIT.format(topic=topic, at_least=at_least, roles=roles)

