"""The worker's outputs through OutputProducer: acknowledged when the flush returns, keyed outputs on
Faust's partitions, batches within the broker's limit, and an oversized message a dead letter."""

from __future__ import annotations

import asyncio
import tempfile
import uuid

from helpers.pipeline_runs import collect, make_settings
from streamxai.agents._forward import Outbox
from streamxai.handlers import Out
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.output_producer import OutputProducer
from streamxai.metrics import Metrics
from streamxai.schemas import Source
from streamxai.settings import Settings

MAX_REQUEST = 1_000_000  # Faust's producer_max_request_size


def _settings(bootstrap: str, **over) -> Settings:
    return Settings(bootstrap_servers=bootstrap, topic_prefix=f"it-{uuid.uuid4().hex[:8]}.", **over)


def test_every_output_handed_over_is_on_the_topic_in_order_when_the_flush_returns(bootstrap):
    s = _settings(bootstrap)
    ensure_topics(s)
    values = [b'{"n":%d,"pad":"%s"}' % (i, b"x" * 300) for i in range(300)]

    async def run() -> tuple[Outbox, list[bool]]:
        out = OutputProducer(s, MAX_REQUEST)
        box = Outbox(out, s, Metrics())
        futures = []
        for i in range(0, len(values), 30):  # ten inputs of 30 outputs each, as an explain agent's reports
            await box.send_all([Out("explanations", b"s", v) for v in values[i:i + 30]], Source("t", 0, i),
                               lambda o, e: None)
        futures = [await out.send(s.topic("predictions"), b"s", b'{"last":1}', None, None)]
        await out.flush()
        settled = [f.done() for f in futures]
        await asyncio.sleep(0)  # the Outbox's acknowledgement callbacks run
        assert await out.close(5) == 0
        return box, settled

    box, settled = asyncio.run(run())
    assert settled == [True]  # flushed: acknowledged, not only sent
    got = collect(s, "explanations", lambda ms: len(ms) >= len(values), timeout=30)
    assert [m["n"] for m in got] == list(range(len(values)))
    assert box.metrics.get(f"messages_out{{topic={s.topic('explanations')}}}") == len(values)
    assert box.metrics.get("send_errors{topic=explanations}") == 0


def test_hops_and_outputs_through_their_two_clients_are_each_on_their_topic_in_order_when_the_flush_returns(bootstrap):
    """The hops (here arrivals) linger 5 ms in a client of their own, the outputs (here
    explanations) ``output_linger_ms`` in the other; one flush waits for both."""
    s = _settings(bootstrap, output_linger_ms=200)  # long enough that a flush not waiting for it would be seen
    ensure_topics(s)

    async def run() -> None:
        out = OutputProducer(s, MAX_REQUEST)
        box = Outbox(out, s, Metrics())
        for i in range(100):
            await box.send_all([Out("explanations", b"s", b'{"n":%d}' % i), Out("arrivals", b"s", b'{"n":%d}' % i)],
                               Source("t", 0, i), lambda o, e: None)
        await out.flush()
        assert out._client is not out._hops and out._settled_below == 200
        assert await out.close(5) == 0

    asyncio.run(run())
    for topic in ("explanations", "arrivals"):
        got = collect(s, topic, lambda ms: len(ms) >= 100, timeout=30)
        assert [m["n"] for m in got] == list(range(100)), topic


def test_a_keyed_output_goes_to_the_partition_fausts_producer_sends_it_to(bootstrap):
    """Keyed outputs use murmur2_random (aiokafka's DefaultPartitioner), so a stream keeps its partition."""
    import faust

    s = _settings(bootstrap, partitions=5)
    ensure_topics(s)
    keys = [f"stream-{i}".encode() for i in range(40)] + [b"a", b"shop-17", "ü".encode()]

    async def run() -> None:
        app = faust.App(f"send-{uuid.uuid4().hex[:6]}", broker=f"kafka://{bootstrap}", autodiscover=False,
                        web_enabled=False, datadir=tempfile.mkdtemp())
        await app.producer.start()
        out = OutputProducer(s, MAX_REQUEST)
        try:
            for k in keys:  # Faust's producer to predictions, ours to explanations (outputs) and arrivals (hops)
                await app.producer.send(s.topic("predictions"), k, b'{"k":"%s"}' % k.hex().encode(), None, None, None)
                await out.send(s.topic("explanations"), k, b'{"k":"%s"}' % k.hex().encode(), None, None)
                await out.send(s.topic("arrivals"), k, b'{"k":"%s"}' % k.hex().encode(), None, None)
            await app.producer.flush()
            await out.flush()
        finally:
            await out.close(5)
            await app.producer.stop()

    asyncio.run(run())

    def placed(topic: str) -> dict[str, int]:
        return {m["k"]: m["_partition"] for m in collect(s, topic, lambda ms: len(ms) >= len(keys), timeout=30)}

    faust_way, ours = placed("predictions"), placed("explanations")
    assert len(ours) == len(keys) and ours == faust_way
    assert placed("arrivals") == faust_way
    assert len(set(ours.values())) == 5  # the keys spread over every partition: the partitioner ran


def test_batches_stay_within_max_dead_letter_bytes_which_the_broker_takes(bootstrap, admin, tmp_path):
    """40 outputs of 14 KB to a topic taking 64 KiB (max_dead_letter_bytes 60 KiB) are all on it in order; batches
    of 256 KiB are refused whole (the control)."""
    from confluent_kafka.admin import NewTopic

    def run(s: Settings) -> Outbox:
        topic = s.topic("explanations")
        admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": str(64 * 1024)})])[topic].result(30)
        ensure_topics(s)
        values = [b'{"n":%d,"pad":"%s"}' % (i, b"x" * 14_000) for i in range(40)]

        async def send() -> Outbox:
            out = OutputProducer(s, MAX_REQUEST)
            box = Outbox(out, s, Metrics())
            await box.send_all([Out("explanations", b"s", v) for v in values], Source("t", 0, 0), lambda o, e: None)
            await out.flush()
            await asyncio.sleep(0)
            await out.close(5)
            return box

        return asyncio.run(send())

    box = run(make_settings(bootstrap, str(tmp_path / "state"), max_dead_letter_bytes=60 * 1024))
    assert box.metrics.get("send_errors{topic=explanations}") == 0
    s = box.settings
    got = collect(s, "explanations", lambda ms: len(ms) >= 40, timeout=30)
    assert [m["n"] for m in got] == list(range(40))
    control = run(make_settings(bootstrap, str(tmp_path / "control")))  # max_dead_letter_bytes 512 KiB
    assert control.metrics.get("send_errors{topic=explanations}") > 0


def test_a_message_over_the_size_limit_is_refused_at_the_hand_over_and_dead_lettered(bootstrap):
    s = _settings(bootstrap)
    ensure_topics(s)
    dead = []

    async def run() -> Outbox:
        out = OutputProducer(s, 100_000)
        box = Outbox(out, s, Metrics())
        await box.send_all([Out("explanations", b"s", b'{"n":1}'), Out("explanations", b"s", b"x" * 200_000),
                            Out("explanations", b"s", b'{"n":3}')], Source("t", 0, 7),
                           lambda o, e: dead.append(type(e).__name__) or None)
        await out.flush()
        await out.close(5)
        return box

    box = asyncio.run(run())
    assert dead == ["KafkaException"]
    assert box.metrics.get("send_errors{topic=explanations}") == 1
    got = collect(s, "explanations", lambda ms: len(ms) >= 2, timeout=30)
    assert [m["n"] for m in got] == [1, 3]


def test_the_output_producer_shows_no_secret():
    s = Settings(bootstrap_servers="127.0.0.1:1", security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                 sasl_username="u", sasl_password="hunter2-secret")
    out = OutputProducer(s, MAX_REQUEST)
    assert "hunter2" not in repr(out) and "hunter2" not in str(vars(out).get("_config"))


def test_a_flush_under_steady_sending_returns_once_what_came_before_it_is_acknowledged(bootstrap):
    """A flush waits for what was handed over before it, not for an empty queue, so it returns while a sender
    keeps sending (bounded: 20,000 messages, 60 s)."""
    s = _settings(bootstrap)
    ensure_topics(s)

    async def run() -> tuple[float, list[bool], int]:
        out = OutputProducer(s, MAX_REQUEST)
        out.start()
        topic = s.topic("explanations")
        before = [await out.send(topic, b"s", b'{"n":%d}' % i, None, None) for i in range(200)]
        stop = asyncio.Event()
        sent = 0

        async def keep_sending() -> None:
            nonlocal sent
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not stop.is_set() and sent < 20_000 and loop.time() < deadline:
                for _ in range(20):
                    await out.send(topic, b"t", b'{"m":1}', None, None)
                    sent += 1
                await asyncio.sleep(0.001)

        sender = asyncio.get_running_loop().create_task(keep_sending())
        await asyncio.sleep(0.05)
        t0 = asyncio.get_running_loop().time()
        await asyncio.wait_for(out.flush(), timeout=30)  # a bound on the wait, not a measurement
        took = asyncio.get_running_loop().time() - t0
        settled = [f.done() for f in before]
        still_sending = not sender.done()
        stop.set()
        await sender
        await out.flush()
        await out.close(10)
        return took, settled, still_sending

    took, settled, still_sending = asyncio.run(run())
    assert all(settled) and still_sending, (took, still_sending)
