"""``produce_raw``'s ``first_delivered`` is called once, when the broker acknowledged the first message."""

from __future__ import annotations

import confluent_kafka
from streamxai.kafka import io as kafka_io
from streamxai.settings import Settings


class _Producer:
    """Acknowledges what was produced on the next poll or flush, as librdkafka does."""

    def __init__(self, config):
        self.waiting = []

    def produce(self, topic, value, key, on_delivery):
        self.waiting.append(on_delivery)

    def poll(self, timeout):
        while self.waiting:
            self.waiting.pop(0)(None, None)

    def flush(self, timeout):
        self.poll(0)
        return 0


def test_first_delivered_is_called_once_at_the_first_acknowledgement(monkeypatch):
    monkeypatch.setattr(confluent_kafka, "Producer", _Producer)
    calls = []
    items = iter([(b"k", b"1"), (b"k", b"2"), (b"k", b"3")])

    def watched():
        for item in items:
            yield item
            calls.append("handed over")

    n = kafka_io.produce_raw(Settings(), "t", watched(), first_delivered=lambda: calls.append("delivered"))
    assert n == 3
    assert calls == ["delivered", "handed over", "handed over", "handed over"]
