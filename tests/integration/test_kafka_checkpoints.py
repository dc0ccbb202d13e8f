"""Checkpoints on a compacted topic: any worker, on any host, restores what another wrote;
forged or foreign records are refused; the two newest checkpoints of a key survive compaction."""

from __future__ import annotations

import logging

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from helpers.pipeline_runs import make_settings
from streamxai.app import checkpoint_store
from streamxai.kafka.checkpoint_topic import CHECKPOINT_TOPIC, KafkaCheckpointStore
from streamxai.schemas import Source
from streamxai.settings import Secret


def kafka_settings(bootstrap, tmp_path, **over):
    return make_settings(bootstrap, str(tmp_path / "a"), checkpoint_store="kafka",
                         checkpoint_key=Secret("0123456789abcdef-shared"), checkpoint_every=10, **over)


def test_a_worker_on_another_host_restores_the_newest_checkpoint_before_its_offset(bootstrap, tmp_path):
    s = kafka_settings(bootstrap, tmp_path)
    writer = checkpoint_store(s)
    assert isinstance(writer, KafkaCheckpointStore)
    for offset in (10, 20, 30):
        writer.save("model", b"stream-1", {"seen": offset}, Source("t", 2, offset))
    writer.save("model", b"stream-2", {"seen": 7}, Source("t", 1, 7))
    # another worker: its own state_dir, the shared key, a fresh index
    reader = checkpoint_store(s.replace(state_dir=str(tmp_path / "b")))
    assert reader.load("model", b"stream-1", "t", 2) == ({"seen": 30}, 30)
    assert reader.load("model", b"stream-1", "t", 2, before_offset=30) == ({"seen": 20}, 20)
    assert reader.load("model", b"stream-1", "t", 2, before_offset=20) is None  # slot of 10 was reused by 30
    assert reader.load("model", b"stream-1", "t", 3) is None  # another partition's
    assert reader.load("model", b"stream-2", "t", 1) == ({"seen": 7}, 7)
    # the reader catches up with what is written after its first look-up
    writer.save("model", b"stream-2", {"seen": 9}, Source("t", 1, 9))
    assert reader.load("model", b"stream-2", "t", 1) == ({"seen": 9}, 9)
    writer.close()
    reader.close()


def test_forged_records_and_other_keys_are_refused(bootstrap, tmp_path, caplog):
    s = kafka_settings(bootstrap, tmp_path)
    store = checkpoint_store(s)
    store.save("explain", b"s/0", {"ok": 1}, Source("t", 0, 5))
    # an attacker who can write to the topic but lacks the key overwrites the other slot
    forged = KafkaCheckpointStore(s, 10, secret=b"not-the-shared-key!")
    forged.save("explain", b"s/0", {"evil": 1}, Source("t", 0, 6))
    forged.close()
    raw = Producer({"bootstrap.servers": bootstrap})
    prefix = KafkaCheckpointStore._prefix("explain", b"s/0")
    raw.produce(s.topic(CHECKPOINT_TOPIC), key=prefix + b"1", value=b"streamxai-checkpoint/v2\nnope\n{}\n",
                partition=store._partition(prefix))
    raw.flush(10)
    fresh = checkpoint_store(s.replace(state_dir=str(tmp_path / "c")))
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        assert fresh.load("explain", b"s/0", "t", 0) == ({"ok": 1}, 5)
    assert "refusing checkpoint" in caplog.text
    store.close()
    fresh.close()


def test_the_checkpoint_topic_is_compacted(bootstrap, tmp_path):
    s = kafka_settings(bootstrap, tmp_path)
    checkpoint_store(s)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.TOPIC, s.topic(CHECKPOINT_TOPIC))
    config = admin.describe_configs([res])[res].result(timeout=30)
    assert config["cleanup.policy"].value == "compact"
    assert int(config["max.message.bytes"].value) >= 64 * 1024 * 1024
