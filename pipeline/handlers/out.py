"""The one thing every handler returns: :class:`Out`, a message to send."""

from __future__ import annotations

from typing import NamedTuple

from streamxai.schemas import Headers

__all__ = ["Out"]


class Out(NamedTuple):
    """A message to send: topic *name* (unprefixed, e.g. ``"predictions"``), key, value, and
    an explicit partition where the key's hash would not spread the work (explain tasks).
    A dead letter also carries its ``reason``, which the sender counts once it is delivered;
    a message forwarded to the arrivals topic carries ``headers`` naming where it came from.

    A tuple: a worker makes several for every event, and a tuple is made several times quicker
    than a frozen dataclass. Its own module, so that the skeleton (``common.py``) and the
    Protocols that describe the handlers (``protocols.py``) both import it and neither imports
    the other.

    >>> Out("predictions", b"shop-17", b"{}")
    Out(topic='predictions', key=b'shop-17', value=b'{}', partition=None, reason=None, headers=None)
    """

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None = None
    reason: str | None = None
    headers: Headers | None = None
