"""Checkpoints on a compacted topic: a worker on another host (another store, nothing shared
but the broker and checkpoint_key) resumes from them; big states are chunked; forged, torn or
foreign records are refused and never unpickled."""

from __future__ import annotations

import logging
import os
import pickle

import orjson
from pipeline_helpers import make_settings

from pipeline.demo_stream import agrawal_events
from pipeline.handlers import ModelHandler, Source
from pipeline.kafka_checkpoints import KafkaCheckpointStore
from pipeline.kafka_config import confluent_config, ensure_topics
from pipeline.settings import Secret
from schemas import dumps

KEY = Secret("integration-checkpoint-key-0123")


def settings(bootstrap, tmp_path, **over):
    s = make_settings(bootstrap, str(tmp_path / "state"), checkpoint_store="kafka", checkpoint_key=KEY,
                      checkpoint_every=25, **over)
    ensure_topics(s)
    return s


def store(s, **kw):
    return KafkaCheckpointStore(s, s.checkpoint_every, secret=s.checkpoint_key.reveal().encode(), **kw)


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_the_checkpoint_topic_is_compacted(bootstrap, tmp_path):
    from confluent_kafka.admin import AdminClient, ConfigResource

    s = settings(bootstrap, tmp_path)
    admin = AdminClient(confluent_config(s))
    res = ConfigResource(ConfigResource.Type.TOPIC, s.topic("checkpoints"))
    cfg = admin.describe_configs([res])[res].result(timeout=30)
    assert cfg["cleanup.policy"].value == "compact"


def test_another_host_resumes_from_a_chunked_checkpoint(bootstrap, tmp_path):
    s = settings(bootstrap, tmp_path)
    big = {"weights": os.urandom(1_300_000)}  # over the broker's 1 MiB message limit: 3 chunks
    writer = store(s)
    writer.save("model", b"s1", {"n": 1}, Source("features", 2, 10))
    writer.save("model", b"s1", big, Source("features", 2, 20))
    other_host = store(s)
    assert other_host.load("model", b"s1", "features", 2) == (big, 20)
    assert other_host.load("model", b"s1", "features", 2, before_offset=20) == ({"n": 1}, 10)
    assert other_host.load("model", b"s1", "features", 1) is None  # another partition's
    assert other_host.load("model", b"nope", "features", 2) is None


def test_forged_and_foreign_records_are_refused(bootstrap, tmp_path, caplog):
    from confluent_kafka import Producer

    s = settings(bootstrap, tmp_path)
    marker = tmp_path / "pwned"
    st = store(s)
    st.save("model", b"victim", {"ok": 1}, Source("features", 0, 5))
    name, partition = st._name("model", b"victim")
    # an attacker with write access to the topic but without the key replaces generation 0
    forged = b"streamxai-checkpoint/v1\n" + pickle.dumps(_Exploit(marker))
    p = Producer(confluent_config(s))
    p.produce(s.topic("checkpoints"), key=f"{name}/0/0".encode(), value=forged, partition=partition)
    manifest = {"chunks": 1, "size": len(forged), "sha256": __import__("hashlib").sha256(forged).hexdigest()}
    p.produce(s.topic("checkpoints"), key=f"{name}/0".encode(), value=orjson.dumps(manifest), partition=partition)
    p.flush(30)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        assert store(s).load("model", b"victim", "features", 0) is None
    assert not marker.exists()
    assert "not a signed (v2) streamxai checkpoint" in caplog.text
    # a store with another key refuses the genuine ones too
    st.save("model", b"k2", {"ok": 2}, Source("features", 0, 6))
    other = KafkaCheckpointStore(s, 25, secret=b"another-key-0123456789")
    assert other.load("model", b"k2", "features", 0) is None


def test_a_model_handler_on_another_host_restores_the_checkpoint(bootstrap, tmp_path):
    s = settings(bootstrap, tmp_path / "a")
    events = list(agrawal_events("kc", 80, seed=2))
    items = [(b"kc", dumps(e)) for e in events]

    class Log:
        def __call__(self, topic, partition, before, key, from_offset=0):
            for k, v in items[from_offset:before]:
                if k == key:
                    yield v

    def preds(handler, offsets):
        out = {}
        for off in offsets:
            for o in handler.on_message(items[off][1], b"kc", Source("features", 0, off)):
                if o.topic == "predictions":
                    m = orjson.loads(o.value)
                    out[m["seq"]] = m["y_pred"]
        return out

    whole = preds(ModelHandler(s), range(80))
    preds(ModelHandler(s, checkpoints=store(s)), range(60))  # checkpoints after events 24 and 49
    resumed = ModelHandler(s.replace(state_dir=str(tmp_path / "b")), history=Log(), checkpoints=store(s))
    assert preds(resumed, range(60, 80)) == {q: whole[q] for q in range(60, 80)}
    assert resumed.metrics.get("checkpoints_restored") == 1
    assert resumed.metrics.get("replayed_events") == 60 - 50
