"""Outputs handed to a producer keep delivery at least once: a worker SIGKILLed right after a
commit has every explanation of the committed inputs on the topic."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from helpers.pipeline_runs import collect, collect_all, killed_after_commit, make_settings
from streamxai.kafka.config import confluent_config, ensure_topics
from streamxai.kafka.io import produce_raw
from streamxai.kafka.watermarks import watermarks
from streamxai.local.demo_stream import agrawal_events
from streamxai.plan import stream_explainer
from streamxai.schemas import Source, dumps, parse_explain_task, unpack_tasks
from streamxai.worker import settings_env


def test_outputs_handed_over_are_covered_by_the_flush_a_commit_waits_for(bootstrap):
    """Outbox.send_all on a Faust producer, then at once the producer's flush (what Faust's commit
    awaits before it commits): every output is on the topic, in order, and counted."""
    import faust
    from streamxai.agents._forward import Outbox
    from streamxai.handlers import Out
    from streamxai.metrics import Metrics
    from streamxai.settings import Settings

    s = Settings(bootstrap_servers=bootstrap, topic_prefix=f"it-{uuid.uuid4().hex[:8]}.")
    ensure_topics(s)
    values = [b'{"n":%d,"pad":"%s"}' % (i, b"x" * 300) for i in range(60)]

    async def run() -> Outbox:
        app = faust.App(f"send-{uuid.uuid4().hex[:6]}", broker=f"kafka://{bootstrap}", producer_linger_ms=50,
                        autodiscover=False, web_enabled=False, datadir=tempfile.mkdtemp())
        await app.producer.start()
        try:
            box = Outbox(app.producer, s, Metrics())
            await box.send_all([Out("explanations", b"s", values[0])], Source("t", 0, 0), lambda o, e: None)
            await app.producer.flush()
            await box.send_all([Out("explanations", b"s", v) for v in values[1:]], Source("t", 0, 1),
                               lambda o, e: None)
            await app.producer.flush()
            return box
        finally:
            await app.producer.stop()

    box = asyncio.run(run())
    got = collect(s, "explanations", lambda ms: len(ms) >= len(values), timeout=30)
    assert [m["n"] for m in got] == list(range(len(values)))
    assert box.metrics.get(f"messages_out{{topic={s.topic('explanations')}}}") == len(values)
    assert box.metrics.get("send_errors{topic=explanations}") == 0


def test_a_workers_batches_hold_more_than_fausts_16_kib_but_no_more_than_max_dead_letter_bytes(bootstrap, admin, tmp_path):
    """Batches up to PRODUCER_MAX_BATCH_BYTES, never above max_dead_letter_bytes: 40 outputs of 14 KB to a topic
    taking 64 KiB (limit 60 KiB) are all on it in order (batches of 256 KiB were refused)."""
    from confluent_kafka.admin import NewTopic
    from streamxai.agents._forward import Outbox
    from streamxai.app import create_app
    from streamxai.handlers import Out
    from streamxai.kafka.faust_transport import PRODUCER_MAX_BATCH_BYTES
    from streamxai.metrics import Metrics

    default = make_settings(bootstrap, str(tmp_path / "default"))
    assert create_app(default, roles=()).producer._settings_default()["max_batch_size"] == PRODUCER_MAX_BATCH_BYTES
    assert PRODUCER_MAX_BATCH_BYTES > 16 * 1024 and PRODUCER_MAX_BATCH_BYTES <= default.max_dead_letter_bytes
    s = make_settings(bootstrap, str(tmp_path / "state"), max_dead_letter_bytes=60 * 1024)
    topic = s.topic("explanations")
    admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": str(64 * 1024)})])[topic].result(30)
    ensure_topics(s)
    values = [b'{"n":%d,"pad":"%s"}' % (i, b"x" * 14_000) for i in range(40)]

    async def run() -> tuple[Outbox, int]:
        app = create_app(s, roles=())
        await app.producer.start()
        try:
            box = Outbox(app.producer, s, Metrics())
            await box.send_all([Out("explanations", b"s", values[0])], Source("t", 0, 0), lambda o, e: None)
            await app.producer.flush()  # the topic's metadata loaded: the rest go the direct way, together
            await box.send_all([Out("explanations", b"s", v) for v in values[1:]], Source("t", 0, 1),
                               lambda o, e: None)
            await app.producer.flush()
            await asyncio.sleep(0)  # the acknowledgements' callbacks run
            return box, app.producer._producer._message_accumulator._batch_size
        finally:
            await app.producer.stop()

    box, batch = asyncio.run(run())
    assert box.metrics.get("send_errors{topic=explanations}") == 0
    got = collect(s, "explanations", lambda ms: len(ms) >= len(values), timeout=30)
    assert [m["n"] for m in got] == list(range(len(values)))
    assert batch == 60 * 1024


def test_a_worker_killed_right_after_a_commit_has_sent_every_explanation_of_the_committed_tasks(bootstrap, tmp_path):
    from confluent_kafka import Consumer, TopicPartition

    s = make_settings(bootstrap, str(tmp_path / "state"), explain_groups=1, explainers=["ipfi"], emit_every=5,
                      checkpoint_every=0)
    events = list(agrawal_events("k", 4000, seed=3))
    ensure_topics(s)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}, **settings_env(s)}
    with open(tmp_path / "worker.log", "ab") as log:
        worker = subprocess.Popen([sys.executable, "-c", killed_after_commit("explain-tasks", 4)], env=env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:  # a paced stream: the worker is busy explaining when a commit comes (every 2.8 s)
        for i in range(0, len(events), 100):
            produce_raw(s, s.topic("features"), [(b"k", dumps(e)) for e in events[i:i + 100]])
            if worker.poll() is not None:
                break
            time.sleep(0.2)
        assert worker.wait(180) == -signal.SIGKILL, (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)

    # the committed explain tasks: every record before the group's committed offset
    topic = s.topic("explain-tasks")
    c = Consumer(confluent_config(s, **{"group.id": s.app_id, "enable.auto.commit": False}))
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in parts], timeout=10)}
    finally:
        c.close()
    seqs = []
    for rec in _records(s, topic):
        if rec.offset() < ends.get(rec.partition(), -1):
            headers = tuple((k, bytes(v or b"")) for k, v in rec.headers() or ())
            src = Source(topic, rec.partition(), rec.offset(), headers=headers or None)
            for raw in unpack_tasks(rec.value(), src) or [rec.value()]:
                seqs.append(parse_explain_task(raw, where=str(src), groups=1).seq)
    assert seqs and max(seqs) < events[-1].seq, "the kill came after everything was committed: nothing tested"
    last = max(seqs)

    se, want = stream_explainer(s, "k"), set()
    for e in events:
        values = se.process_one(e.x, e.y)
        if se.n_seen % s.emit_every == 0 and e.seq <= last:
            want |= {(e.seq, v.feature) for v in values}
    sent = {(m["seq"], m["feature"]) for m in collect_all(s, "explanations")}
    assert len(want) > 9
    missing = sorted(want - sent)
    assert not missing, f"{len(missing)} explanations of committed tasks are not on the topic: {missing[:5]}"


def _records(s, topic: str):
    """Every record on ``topic`` (full name) now, from the start."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(confluent_config(s, **{"group.id": f"read-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}))
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: watermarks(c, topic, p, timeout=10)[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        left = {p for p, e in ends.items() if e > 0}
        for _ in range(10_000):  # bounded
            if not left:
                return
            rec = c.poll(1.0)
            if rec is None or rec.error():
                continue
            yield rec
            if rec.offset() + 1 >= ends[rec.partition()]:
                left.discard(rec.partition())
    finally:
        c.close()

