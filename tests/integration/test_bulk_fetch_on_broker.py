"""The bulk fetch keeps delivery at least once: a worker SIGKILLed right after a commit has forwarded every
committed features and labels record to ``arrivals``, and its restart forwards the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

from helpers.pipeline_runs import collect, killed_after_commit, make_settings
from streamxai.kafka.config import confluent_config, ensure_topics
from streamxai.kafka.io import produce_raw
from streamxai.kafka.watermarks import watermarks
from streamxai.local.demo_stream import agrawal_events, labels_later
from streamxai.schemas import LabelEvent, Source, dumps, origin, unpack_arrivals
from streamxai.worker import settings_env


def _committed(s, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(confluent_config(s, **{"group.id": s.app_id, "enable.auto.commit": False}))
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        return {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in parts], timeout=10)}
    finally:
        c.close()


def _forwarded(s) -> list[Source]:
    """Where every message on the arrivals topic came from (its origin), in the topic's order."""
    from confluent_kafka import Consumer, TopicPartition

    topic = s.topic("arrivals")
    c = Consumer(confluent_config(s, **{"group.id": f"read-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}))
    out: list[Source] = []
    try:
        end = watermarks(c, topic, 0, timeout=10)[1]
        c.assign([TopicPartition(topic, 0, 0)])
        for _ in range(10_000):  # bounded
            if end == 0:
                break
            rec = c.poll(1.0)
            if rec is None or rec.error():
                continue
            headers = tuple((k, bytes(v or b"")) for k, v in rec.headers() or ())
            src = Source(topic, 0, rec.offset(), headers=headers or None)
            items = unpack_arrivals(rec.value(), src)
            if items is None:  # a lone message: its origin is in the headers
                out.append(origin(src))
            else:
                out.extend(came for _, came in items)
            if rec.offset() + 1 >= end:
                break
    finally:
        c.close()
    return out


def test_a_worker_killed_right_after_a_commit_has_forwarded_every_committed_record_and_learns_each_once(
        bootstrap, tmp_path):
    s = make_settings(bootstrap, str(tmp_path / "state"), explain_groups=1, explainers=["ipfi"], emit_every=5,
                      checkpoint_every=0)
    n = 3000
    # labels a while after their events, on their own topic: both topics go the bulk way
    messages = list(labels_later(agrawal_events("k", n, seed=5), delay=7))
    ensure_topics(s)

    def send(chunk: list) -> None:
        for topic in ("features", "labels"):
            batch = [m for m in chunk if isinstance(m, LabelEvent) == (topic == "labels")]
            if batch:
                produce_raw(s, s.topic(topic), [(b"k", dumps(m)) for m in batch])

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}, **settings_env(s)}
    with open(tmp_path / "worker.log", "ab") as log:
        worker = subprocess.Popen([sys.executable, "-c", killed_after_commit("features", n // 3, roles="model")], env=env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    sent = 0
    try:  # paced: the worker is forwarding when a commit comes
        while sent < len(messages) and worker.poll() is None:
            send(messages[sent:sent + 200])
            sent += 200
            time.sleep(0.1)
        assert worker.wait(180) == -signal.SIGKILL, (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)

    ends = {topic: _committed(s, s.topic(topic)) for topic in ("features", "labels")}
    forwarded = {(c.topic, c.partition, c.offset) for c in _forwarded(s)}
    want = {(s.topic(t), p, o) for t, parts in ends.items() for p, end in parts.items() for o in range(max(end, 0))}
    assert ends["features"][0] < n, "the kill came after everything was committed: nothing tested"
    assert len(want) >= n // 3
    missing = sorted(want - forwarded)
    assert not missing, f"{len(missing)} committed records were not forwarded to arrivals: {missing[:5]}"

    # the restart forwards what was not committed (and what came since), and every event is predicted
    send(messages[sent:])
    with open(tmp_path / "restart.log", "ab") as log:
        worker = subprocess.Popen([sys.executable, "-m", "streamxai.cli", "worker", "--loglevel", "warning",
                                   "--roles", "model"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        preds = collect(s, "predictions", lambda ms: len({m["seq"] for m in ms}) >= n, timeout=150)
    finally:
        worker.terminate()
        worker.wait(30)
    assert {p["seq"] for p in preds} == set(range(n))
    again = {(c.topic, c.offset) for c in _forwarded(s)}
    assert again == {(s.topic(t), o) for t, k in (("features", n), ("labels", n)) for o in range(k)}
