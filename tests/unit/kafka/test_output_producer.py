"""OutputProducer.hand: a flush waits for every message handed over before it, whatever the delivery
reports' order (served by a stand-in client), failures reach the caller, and through the Outbox count in
``send_errors`` and become dead letters; the worker's own hops' client is flushed too."""

from __future__ import annotations

import asyncio

from streamxai.agents._forward import Outbox
from streamxai.handlers import Out, Source
from streamxai.kafka.output_producer import OutputProducer
from streamxai.metrics import Metrics
from streamxai.settings import Settings


class _Err:
    def str(self):
        return "RequestTimedOut"


class _Msg:
    def __init__(self, topic):
        self._topic = topic

    def topic(self):
        return self._topic


class _Client:
    """What the OutputProducer calls of confluent-kafka's Producer; ``deliver`` serves reports."""

    def __init__(self):
        self.sent = []  # (topic, value, on_delivery)

    def produce(self, topic, value, key, partition, on_delivery, headers=None):
        self.sent.append((topic, value, on_delivery))

    def poll(self, _timeout):
        return 0

    def __len__(self):
        return 0

    def deliver(self, i, fail=False):
        topic, _, cb = self.sent[i]
        cb(_Err() if fail else None, _Msg(topic))


def _producer() -> tuple[OutputProducer, _Client]:
    out = OutputProducer(Settings(bootstrap_servers="127.0.0.1:1"), max_request_size=1_000_000)
    client = _Client()
    out._client, out._loop, out._wake = client, asyncio.get_running_loop(), asyncio.Event()
    out._hops = client  # one client for outputs and hops (output_linger_ms = 5)
    return out, client


def test_a_flush_waits_for_an_earlier_message_whose_report_comes_after_later_ones():
    async def run():
        out, client = _producer()
        errors = []
        for i in range(4):
            assert out.hand("t", b"k", b"%d" % i, None, None, errors.append)
        for i in (1, 2, 3):  # the later ones acknowledged first: another partition's batch
            client.deliver(i)
        flush = asyncio.get_running_loop().create_task(out.flush())
        assert out.hand("t", b"k", b"4", None, None, errors.append)  # after the flush began
        client.deliver(4)  # four settled since, as many as the flush waits for, but not the first
        await asyncio.sleep(0.02)
        waited = not flush.done()
        client.deliver(0, fail=True)
        await asyncio.wait_for(flush, 1)  # a bound on the wait, not a measurement
        return waited, errors, out._settled_below, out._settled_above

    waited, errors, below, above = asyncio.run(run())
    assert waited
    assert [str(e) for e in errors] == ["t: RequestTimedOut"]
    assert below == 5 and above == set()  # every report taken, nothing kept


def test_through_the_outbox_a_failed_output_is_counted_and_a_dead_letter_once_acknowledged():
    async def run():
        out, client = _producer()
        box = Outbox(out, Settings(topic_prefix="x."), Metrics())
        outs = [Out("explanations", b"s", b"%d" % i) for i in range(3)]
        outs.append(Out("dead-letters", b"s", b"{}", reason="bad_json"))
        await box.send_all(outs, Source("explain-tasks", 0, 3), lambda o, e: None)
        client.deliver(0)
        client.deliver(1, fail=True)
        client.deliver(2)
        client.deliver(3)
        await asyncio.sleep(0)  # the dead letter's future's callback runs
        await out.flush()
        return box.metrics, [t for t, _, _ in client.sent]

    metrics, topics = asyncio.run(run())
    assert topics == ["x.explanations"] * 3 + ["x.dead-letters"]
    assert metrics.get("send_errors{topic=explanations}") == 1
    assert metrics.get("messages_out{topic=x.explanations}") == 3
    assert metrics.get("dead_letters{reason=bad_json}") == 1


def test_hops_go_through_their_own_client_and_a_flush_waits_for_both():
    async def run():
        out = OutputProducer(Settings(bootstrap_servers="127.0.0.1:1", topic_prefix="x."), max_request_size=1_000_000)
        outputs, hops = _Client(), _Client()
        out._client, out._hops, out._loop, out._wake = outputs, hops, asyncio.get_running_loop(), asyncio.Event()
        for topic in ("x.predictions", "x.arrivals", "x.explanations", "x.explain-tasks", "x.explain-decisions",
                      "x.drift-feed", "x.drift-events", "x.change-episodes", "x.dead-letters"):
            assert out.hand(topic, b"k", b"v", None, None)
        flush = asyncio.get_running_loop().create_task(out.flush())
        for i in range(len(hops.sent)):
            hops.deliver(i)
        await asyncio.sleep(0.02)
        waited = not flush.done()  # the outputs, still lingering, are not acknowledged yet
        for i in range(len(outputs.sent)):
            outputs.deliver(i)
        await asyncio.wait_for(flush, 1)  # a bound on the wait, not a measurement
        return waited, [t for t, _, _ in outputs.sent], [t for t, _, _ in hops.sent]

    waited, to_outputs, to_hops = asyncio.run(run())
    assert waited
    assert to_hops == ["x.arrivals", "x.explain-tasks", "x.explain-decisions", "x.drift-feed"]
    assert to_outputs == ["x.predictions", "x.explanations", "x.drift-events", "x.change-episodes", "x.dead-letters"]


def test_the_outputs_linger_is_a_setting_and_at_the_hops_linger_one_client_serves_both():
    async def clients(**over):
        out = OutputProducer(Settings(bootstrap_servers="127.0.0.1:1", **over), max_request_size=1_000_000)
        out.start()  # librdkafka connects in the background; nothing here waits for it
        try:
            return out._client is out._hops, repr(out)
        finally:
            await out.close(0)

    assert asyncio.run(clients()) == (False, "OutputProducer(127.0.0.1:1, PLAINTEXT, batches of at most 262144 "
                                             "bytes, lingering 50 ms (hops 5 ms))")
    assert asyncio.run(clients(output_linger_ms=5))[0] is True
    assert asyncio.run(clients(output_linger_ms=0))[0] is False
