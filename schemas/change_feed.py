"""The drift feed: the internal topic the change agent reads. For each report of an
explainer group, the explain handler sends its explanations to the public ``explanations``
topic, one message each, as users read them, and then the same report as one ``drift-feed``
record keyed by stream, in the form :data:`ROWS_V1`: one JSON object with the fields every
explanation of the report shares (:data:`HEAD`) and a row of the others for each
(:data:`ROW`). :func:`unpack_feed` gives back the explanation documents, byte for byte as
they went to the public topic; the change agent reads a usual record without making them. A
report too large for one record is cut into several. A record of the older form
:data:`~streamxai.schemas.batch_forms.LINES_V1` (the documents one per line) is read too.

>>> head = {"stream_id": "s", "seq": 7, "position": 7, "model_version": 7, "event_id": None}
>>> rows = [["ipfi", "a", 0.25, 8, 8, None, None, None, None, None]]
>>> ((value, headers),) = pack_report(head, rows, report_documents(*head.values(), rows))
>>> value, headers
(b'{"stream_id":"s","seq":7,"position":7,"model_version":7,"event_id":null,"rows":[["ipfi","a",0.25,8,8,null,null,null,null,null]]}', (('streamxai-feed-form', b'rows/1'),))
>>> unpack_feed(value, Source("drift-feed", 0, 3, headers=headers))[0][:80]
b'{"schema":"explanation/v4","stream_id":"s","explainer":"ipfi","feature":"a","val'
>>> unpack_feed(b'{"feature": "a"}', Source("explanations", 0, 9)) is None  # one explanation, unmarked
True
"""

from __future__ import annotations

from typing import Any

import orjson

from .batch_forms import LINES_V1, chunk_bounds, pack_lines, read_form
from .errors import SchemaMismatch
from .messages import Explanation
from .source import Headers, Source
from .wire import decode, decoded_or_none, dumps_fields

__all__ = ["pack_report", "pack_feed", "unpack_feed", "report_documents", "report_of", "feed_form", "FEED_FORM",
           "ROWS_V1", "HEAD", "ROW", "MAX_FEED_BYTES"]

#: the header that marks a drift-feed record (its value: the form)
FEED_FORM = "streamxai-feed-form"
#: the form of one report as a JSON object: :data:`HEAD`'s fields, and ``rows``, one list of
#: :data:`ROW`'s fields for each explanation
ROWS_V1 = b"rows/1"
#: the fields of an explanation/v4 that every explanation of a report shares
HEAD = ("stream_id", "seq", "position", "model_version", "event_id")
#: the fields of each explanation's row, in order (``block`` and ``model_loss`` as the document has them)
ROW = ("explainer", "feature", "value", "n_explained", "n_seen", "curve", "stderr", "block", "model_loss", "var_factor")
#: the most bytes of explanations in one drift-feed record (well under Kafka's default 1 MiB)
MAX_FEED_BYTES = 512 * 1024
_FORMS = (ROWS_V1, LINES_V1)
_ROW_FIELDS = len(ROW)


def pack_report(head: dict[str, Any], rows: list[list[Any]], docs: list[bytes],
                max_bytes: int = MAX_FEED_BYTES) -> list[tuple[bytes, Headers]]:
    """One report's explanations as drift-feed records (value, headers) of the form
    :data:`ROWS_V1`: ``head`` their shared fields (:data:`HEAD`, in order), ``rows`` the others
    of each (:data:`ROW`) and ``docs`` the documents :func:`report_documents` made of them (which
    checked that every number in them is finite; each row is shorter than its document). One
    record, unless the documents exceed ``max_bytes``."""
    return [(orjson.dumps({**head, "rows": rows[start:end]}), ((FEED_FORM, ROWS_V1),))
            for start, end in chunk_bounds(list(map(len, docs)), max_bytes)]


def pack_feed(values: list[bytes], max_bytes: int = MAX_FEED_BYTES) -> list[tuple[bytes, Headers | None]]:
    """The explanation documents ``values``, in order, as drift-feed records of the form
    :data:`~streamxai.schemas.batch_forms.LINES_V1` (one per line), as older workers wrote them."""
    return pack_lines(values, FEED_FORM, max_bytes, always=True)


def feed_form(src: Source) -> bytes | None:
    """The form of the drift-feed record at ``src`` (None: no form header, one explanation
    message). A form this version does not know raises :class:`~schemas.SchemaMismatch`."""
    return read_form(src, FEED_FORM, _FORMS, "drift-feed", "the explainer workers")


def report_of(raw: bytes | None, max_bytes: int) -> dict[str, Any] | None:
    """The decoded record ``raw`` of the form :data:`ROWS_V1` if it has its shape (an object with
    a list of rows of :data:`ROW`'s length, at most ``max_bytes``); None for anything else."""
    obj = decoded_or_none(raw, max_bytes)
    return obj if obj is not None and _rows_shaped(obj) else None


def _rows_shaped(obj: dict[str, Any]) -> bool:
    rows = obj.get("rows")
    return type(rows) is list and all(type(r) is list and len(r) == _ROW_FIELDS for r in rows)


def unpack_feed(raw: bytes | None, src: Source) -> list[bytes] | None:
    """The explanation documents of the drift-feed record at ``src``, as the explain handler sent
    them to the public topic; None for a record without the form's header (one explanation
    message, as on the public topic). A form this version does not know, or a record that does
    not have its form's shape, raises :class:`~schemas.SchemaMismatch`."""
    form = feed_form(src)
    if form is None:
        return None
    if form == LINES_V1:
        return (raw or b"").split(b"\n")
    where = str(src)
    obj = decode(raw, where=where, max_bytes=len(raw or b""))  # any size: each document is checked as it is read
    if not _rows_shaped(obj) or not all(f in obj for f in HEAD):
        raise SchemaMismatch(f"drift-feed record of form {ROWS_V1!r} is not an object of {', '.join(HEAD)} and rows "
                             f"of {len(ROW)} fields ({', '.join(ROW)}); only the explainer workers write the drift feed",
                             where=where)
    return report_documents(*(obj[f] for f in HEAD), obj["rows"])


def report_documents(stream_id: Any, seq: Any, position: Any, model_version: Any, event_id: Any,
                     rows: list[list[Any]]) -> list[bytes]:
    """The explanation/v4 documents of a report: the fields its explanations share (those of
    :data:`HEAD`) and a row of the others for each (:data:`ROW`). The explain handler writes the
    public documents with it, and :func:`unpack_feed` gives them back with it."""
    return [dumps_fields(Explanation, (stream_id, explainer, feature, value, seq, n_explained, n_seen, model_version,
                                       curve, stderr, block, loss, var_factor, position, event_id))
            for explainer, feature, value, n_explained, n_seen, curve, stderr, block, loss, var_factor in rows]
