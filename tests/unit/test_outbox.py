"""The Outbox counts every message the broker refuses in ``send_errors``, also one answered after the last
output's (a retried batch)."""

from __future__ import annotations

import asyncio

from streamxai.agents._forward import Outbox
from streamxai.handlers import Out, Source
from streamxai.metrics import Metrics
from streamxai.settings import Settings


class _Producer:
    """Faust's producer's send; the test settles each delivery future itself."""

    def __init__(self):
        self.futures = []

    async def send(self, topic, key, value, partition, timestamp, headers):
        fut = asyncio.get_running_loop().create_future()
        self.futures.append(fut)
        return fut


def test_failures_after_the_send_are_counted_per_message_also_one_answered_after_the_last():
    async def run():
        producer = _Producer()
        box = Outbox(producer, Settings(topic_prefix="x."), Metrics())
        outs = [Out("explanations", b"s", b"%d" % i) for i in range(4)] + [Out("drift-feed", b"s", b"f")]
        await box.send_all(outs, Source("explain-tasks", 0, 3), lambda out, err: None)
        first, second, third, fourth, last = producer.futures
        first.set_exception(RuntimeError("NotLeaderForPartition"))
        second.set_result(None)
        fourth.set_exception(RuntimeError("RequestTimedOut"))
        last.set_result(None)  # the last output answered while the third's batch is retried
        await asyncio.sleep(0)
        counted_then = box.metrics.get("send_errors{topic=explanations}")
        third.set_exception(RuntimeError("RequestTimedOut"))
        await asyncio.sleep(0)
        return box.metrics, counted_then

    metrics, counted_then = asyncio.run(run())
    assert counted_then == 2
    assert metrics.get("send_errors{topic=explanations}") == 3
    assert metrics.get("send_errors{topic=drift-feed}") == 0
    assert metrics.get("messages_out{topic=x.explanations}") == 4
    assert metrics.get("messages_out{topic=x.drift-feed}") == 1
