"""Intake: the one record of the order in which a stream's features and labels arrived.

The intake agent reads ``features`` and ``labels`` and forwards each message, its bytes and key
unchanged, to ``arrivals`` with headers naming its origin topic, partition and offset
(:func:`schemas.origin_headers`). Keyed by stream id, a stream's arrivals are one partition in
one order: the model agent learns in that order, and its recovery (checkpoint and replay of
its input partition) reproduces it exactly. It validates nothing (the model handler does, and
its dead letters name the origin) and keeps no state: after a restart it forwards again what
it had not committed, and the model handler recognises those by their origin offset.

>>> from schemas import origin
>>> (out,) = IntakeHandler(Settings()).on_message(b"{}", b"s", Source("streamxai.labels", 2, 17))
>>> out.topic, out.key, out.value, str(origin(Source("streamxai.arrivals", 0, 5, headers=out.headers)))
('arrivals', b's', b'{}', 'streamxai.labels[2]@17')
"""

from __future__ import annotations

from schemas import Source, origin_headers

from ..metrics import Metrics
from ..settings import Settings
from .out import Out

__all__ = ["IntakeHandler"]


class IntakeHandler:
    """Features and labels in, arrivals out (module docstring)."""

    def __init__(self, settings: Settings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """The message as it came, for the arrivals topic (an empty value stays empty: the model
        handler dead-letters it, naming the origin)."""
        return [Out("arrivals", key, raw or b"", headers=origin_headers(src))]

    def needs_recovery(self, key: bytes | None, src: Source | None = None) -> bool:
        return False  # no state

    def partitions_revoked(self, tps: set[tuple[str, int]]) -> None:
        pass
