"""The intake's bulk hand-over (``streamxai.agents._forward.forward_fetched``): each fetch's records go to
the handler in batches, in order, and are counted once per topic (``messages_in``) with the last
offset of each partition reported for consumer lag, as one record at a time counted them."""

from __future__ import annotations

import asyncio
from collections import namedtuple

from streamxai.agents._forward import Outbox, forward_fetched
from streamxai.handlers import IntakeHandler, Source
from streamxai.metrics import Metrics
from streamxai.schemas import unpack_arrivals
from streamxai.settings import Settings

Record = namedtuple("Record", "topic partition offset key value timestamp headers")


class _Producer:
    def __init__(self):
        self.sent = []

    async def send(self, topic, key, value, partition, timestamp, headers):
        self.sent.append((topic, key, value, headers))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def test_a_fetch_is_counted_once_per_topic_and_its_last_offsets_reported():
    fetched = [(None, Record("x.features", p, o, b"s", b"v%d" % o, 1_700_000_000_000 + o, []))
               for p, o in [(0, 5), (1, 9), (0, 6), (1, 10), (0, 7)]]
    fetched.append((None, Record("x.labels", 2, 3, b"s", b"l3", None, [("h", b"1")])))

    async def run():
        settings = Settings(topic_prefix="x.")
        metrics = Metrics()
        producer = _Producer()
        await forward_fetched(fetched, handler=IntakeHandler(settings, metrics), outbox=Outbox(producer, settings, metrics),
                              stage="intake", batch=4)
        return metrics, producer.sent

    metrics, sent = asyncio.run(run())
    counters = metrics.snapshot()["counters"]
    assert counters["messages_in{topic=x.features}"] == 5 and counters["messages_in{topic=x.labels}"] == 1
    assert metrics._offsets == {("x.features", 0): 7, ("x.features", 1): 10, ("x.labels", 2): 3}
    # two batches (4 and 2 records), each one arrivals record of stream s, the records in their order
    taken = []
    for topic, key, value, headers in sent:
        assert topic == "x.arrivals" and key == b"s"
        taken += [(str(o), raw) for raw, o in unpack_arrivals(value, Source("x.arrivals", 0, 0, headers=tuple(headers)))]
    assert taken == [("x.features[0]@5", b"v5"), ("x.features[1]@9", b"v9"), ("x.features[0]@6", b"v6"),
                     ("x.features[1]@10", b"v10"), ("x.features[0]@7", b"v7"), ("x.labels[2]@3", b"l3")]
