"""The drift feed: the internal topic the change agent reads. For each report of an
explainer group, the explain handler sends its explanations to the public ``explanations``
topic, one message each, as users read them, and then the same documents, byte for byte, as
one ``drift-feed`` record keyed by stream (one per line, the header :data:`FEED_FORM` marking
the form; a report too large for one record is cut into several). The change agent takes one
record per report instead of one per explanation, which saves message operations per event.

>>> records = pack_feed([b'{"feature": "a"}', b'{"feature": "b"}'])
>>> records
[(b'{"feature": "a"}\\n{"feature": "b"}', (('streamxai-feed-form', b'lines/1'),))]
>>> unpack_feed(records[0][0], Source("drift-feed", 0, 3, headers=records[0][1]))
[b'{"feature": "a"}', b'{"feature": "b"}']
>>> pack_feed([b'{"feature": "a"}'])[0][1]  # one explanation is marked too: a feed record always says its form
(('streamxai-feed-form', b'lines/1'),)
>>> unpack_feed(b'{"feature": "a"}', Source("explanations", 0, 9)) is None  # one explanation, unmarked
True
"""

from __future__ import annotations

from .batch_forms import pack_lines, unpack_lines
from .source import Headers, Source

__all__ = ["pack_feed", "unpack_feed", "FEED_FORM", "MAX_FEED_BYTES"]

#: the header that marks a drift-feed record (its value: the form)
FEED_FORM = "streamxai-feed-form"
#: the most bytes of explanations in one drift-feed record (well under Kafka's default 1 MiB)
MAX_FEED_BYTES = 512 * 1024


def pack_feed(values: list[bytes], max_bytes: int = MAX_FEED_BYTES) -> list[tuple[bytes, Headers | None]]:
    """The explanation documents of one report, in order, as drift-feed records (value, headers):
    one, unless they exceed ``max_bytes``."""
    return pack_lines(values, FEED_FORM, max_bytes, always=True)


def unpack_feed(raw: bytes | None, src: Source) -> list[bytes] | None:
    """The explanations of the drift-feed record at ``src``; None for a record without the
    form's header (one explanation message, as on the public topic). A form this version
    does not know raises :class:`~schemas.SchemaMismatch`."""
    return unpack_lines(raw, src, FEED_FORM, "drift-feed", "the explainer workers")
