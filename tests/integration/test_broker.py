"""The local broker: messages go through it, and start/status behave as documented."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from streamxai.local.broker import BrokerError, LocalBroker

pytestmark = pytest.mark.integration


def _local(broker: object) -> LocalBroker:
    if not isinstance(broker, LocalBroker):
        pytest.skip("STREAMXAI_BOOTSTRAP points at a broker these tests did not start")
    return broker


def test_produce_and_consume_on_three_partitions(bootstrap, topic_factory, group_id):
    topic = topic_factory(partitions=3)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    sent = {f"key-{i}".encode(): f"value-{i}".encode() for i in range(30)}
    for key, value in sent.items():
        producer.produce(topic, value=value, key=key)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    received: dict[bytes, bytes] = {}
    partitions: set[int] = set()
    try:
        for _ in range(60):
            for msg in consumer.consume(num_messages=100, timeout=1.0):
                assert msg.error() is None, msg.error()
                received[msg.key()] = msg.value()
                partitions.add(msg.partition())
            if len(received) == len(sent):
                break
    finally:
        consumer.close()
    assert received == sent
    assert partitions == {0, 1, 2}  # 30 distinct keys spread over all three partitions


def test_start_twice_is_idempotent_and_status_reports_running(broker):
    local = _local(broker)
    before = local.status()
    assert before.running and before.ready and before.pid is not None
    assert before.bootstrap == local.bootstrap == f"127.0.0.1:{local.port}"

    again = local.start(timeout=10)
    assert again.pid == before.pid

    # A second handle on the same data dir finds the same JVM instead of starting one.
    other = LocalBroker(local.port, local.controller_port, data_dir=local.data_dir)
    assert other.start(timeout=10).pid == before.pid
    assert other.status().pid == before.pid


def test_start_on_other_ports_leaves_the_running_broker_alone(broker):
    """``broker start --port`` with other ports than the running broker's is refused at once (never stopping
    it), and ``broker status`` reports the broker on its own ports."""
    local = _local(broker)
    before = local.status()
    other = LocalBroker(local.port + 2, local.controller_port + 2, data_dir=local.data_dir)
    with pytest.raises(BrokerError, match=rf"already runs on 127\.0\.0\.1:{local.port} .*--port {local.port}"):
        other.start(timeout=5)
    after = local.status()
    assert after.ready and after.pid == before.pid  # still the same JVM, still answering
    seen = other.status()
    assert seen.ready and seen.pid == before.pid and seen.bootstrap == local.bootstrap


def test_port_in_use_is_reported(broker, tmp_path):
    local = _local(broker)
    clash = LocalBroker(local.port, local.controller_port + 7, data_dir=tmp_path / "clash")
    with pytest.raises(BrokerError, match=rf"127\.0\.0\.1:{local.port} \(port\) is already in use"):
        clash.start(timeout=10)
    assert not clash.status().running
    assert clash.stop() is False  # nothing to stop


def test_reading_to_idle_counts_idle_time_from_the_assignment(bootstrap, topic_factory):
    """The idle time counts from the end of the group join (slower than ``--idle`` here): every message is read."""
    from streamxai.kafka.io import consume
    from streamxai.settings import Settings

    topic = topic_factory(partitions=2)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(topic, value=b"%d" % i, key=b"k%d" % (i % 5))
    assert producer.flush(30) == 0
    got = [r.value for r in consume(Settings(features=["a"], bootstrap_servers=bootstrap), [topic], idle_timeout=0.05)]
    assert sorted(got, key=int) == [b"%d" % i for i in range(20)]


def test_the_session_admin_client_logs_to_its_logger_not_to_the_shared_stderr(admin, topic_factory, bootstrap,
                                                                              capfd, caplog):
    # a topic deleted under a client that knows it and re-created by a producer's request (the
    # broker auto-creates it with its default 4 partitions): librdkafka notes the new partition
    # count on the admin client's next metadata refresh
    import logging
    import time

    name = topic_factory(partitions=2, prefix="recreated")
    for future in admin.delete_topics([name], operation_timeout=30).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    for _ in range(30):  # the deletion reaches the metadata cache within a few tries
        producer.produce(name, b"v")
        if producer.flush(10) == 0 and len(admin.list_topics(topic=name, timeout=10).topics[name].partitions) == 4:
            break
        time.sleep(0.5)
    assert len(admin.list_topics(topic=name, timeout=10).topics[name].partitions) == 4
    with caplog.at_level(logging.DEBUG, logger="tests.admin"):
        admin.poll(0)  # a client with a logger hands its lines over when polled
    assert "partition count changed from 2 to 4" in caplog.text
    assert "rdkafka" not in capfd.readouterr().err


def test_a_broker_with_a_small_heap_starts_its_log_cleaner(tmp_path):
    """The log cleaner takes its dedupe buffer from the heap when it starts (Kafka's default,
    128 MiB, is most of a small heap): a local broker with a 128 MiB heap starts and answers."""
    from streamxai.local.ports import free_ports

    port, controller_port = free_ports(2)
    small = LocalBroker(port, controller_port, data_dir=tmp_path / "small", heap="128m")
    try:
        assert small.start(timeout=60).ready
    finally:
        small.stop()
