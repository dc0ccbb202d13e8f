"""The drift feed, the internal topic the change agent reads: for each report of an explainer
group, one record keyed by stream in the form :data:`ROWS_V1` (the fields the report's
explanations share, :data:`HEAD`, and a :data:`ROW` for each). :func:`unpack_feed` gives back
the explanation documents byte for byte as they went to ``explanations``; a report too large
for one record is cut into several, and the older form
:data:`~streamxai.schemas.batch_forms.LINES_V1` is read too. A stream's data faults travel as
:data:`FAULTS_V1` records (:func:`pack_faults`, :func:`faults_of`).

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

__all__ = ["pack_report", "pack_feed", "pack_faults", "unpack_feed", "report_documents", "report_of", "faults_of",
           "feed_form", "FEED_FORM", "ROWS_V1", "FAULTS_V1", "FAULTS_SCHEMA", "HEAD", "ROW", "MAX_FEED_BYTES"]

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
#: the form of what one test of a stream's inputs found: one document of :data:`FAULTS_SCHEMA`
FAULTS_V1 = b"faults/1"
#: the document of that form: ``stream_id``, ``seq``, ``position`` (of the step it was found at)
#: and ``faults``, each with :data:`FAULT` 's fields
FAULTS_SCHEMA = "input_faults/v1"
#: the fields of one fault, with their types (``before`` and ``after``: ``[median, iqr]``, null where unknown)
FAULT = {"feature": (str,), "what": (str,), "seq": (int,), "start": (int,), "before": (list,), "after": (list,),
         "detail": (str,), "like": (str, type(None))}
#: the name the faults of a stream's labels go by (streamxai.core.change.label_watch)
LABELS = "label"
_FORMS = (ROWS_V1, LINES_V1, FAULTS_V1)
_ROW_FIELDS = len(ROW)


def fault_subject(fault: dict[str, Any]) -> str:
    """What a data fault tells an on-call engineer to check: ``the labels`` for a fault of the
    labels (a finding of :data:`LABELS` carries no reliance), else ``the inputs of`` its feature."""
    if fault.get("feature") == LABELS and fault.get("reliance") is None:
        return "the labels"
    return f"the inputs of {fault.get('feature')}"


def pack_report(head: dict[str, Any], rows: list[list[Any]], docs: list[bytes],
                max_bytes: int = MAX_FEED_BYTES) -> list[tuple[bytes, Headers]]:
    """One report's explanations as drift-feed records (value, headers) of the form
    :data:`ROWS_V1`: ``head`` their shared fields, ``rows`` the others of each and ``docs`` the
    documents :func:`report_documents` made of them. One record, unless the documents exceed
    ``max_bytes``."""
    return [(orjson.dumps({**head, "rows": rows[start:end]}), ((FEED_FORM, ROWS_V1),))
            for start, end in chunk_bounds(list(map(len, docs)), max_bytes)]


def pack_feed(values: list[bytes], max_bytes: int = MAX_FEED_BYTES) -> list[tuple[bytes, Headers | None]]:
    """The explanation documents ``values``, in order, as drift-feed records of the form
    :data:`~streamxai.schemas.batch_forms.LINES_V1` (one per line), as older workers wrote them."""
    return pack_lines(values, FEED_FORM, max_bytes, always=True)


def pack_faults(stream_id: str, seq: int, position: int, faults: list[dict[str, Any]]) -> tuple[bytes, Headers]:
    """What one test of a stream's inputs found, as a drift-feed record (value, headers) of the
    form :data:`FAULTS_V1`; each fault with :data:`FAULT` 's fields, non-finite numbers as null.

    >>> value, headers = pack_faults("s", 9, 9, [{"feature": "a", "what": "constant", "seq": 9, "start": 5,
    ...     "before": [1.0, 0.5], "after": [float("nan"), 0.0], "detail": "missing since 5", "like": None}])
    >>> faults_of(value, "drift-feed[0]@4", ["a"])["faults"][0]["after"], headers
    ([None, 0.0], (('streamxai-feed-form', b'faults/1'),))
    """
    doc = {"schema": FAULTS_SCHEMA, "stream_id": stream_id, "seq": seq, "position": position, "faults": faults}
    return orjson.dumps(doc), ((FEED_FORM, FAULTS_V1),)


def faults_of(raw: bytes | None, where: str, features: list[str], max_bytes: int = MAX_FEED_BYTES) -> dict[str, Any]:
    """The document of a drift-feed record of the form :data:`FAULTS_V1`, with its shape, every
    fault's fields (:data:`FAULT`), features and position checked; anything else raises
    :class:`~schemas.SchemaMismatch`, saying what."""
    obj = decode(raw, where=where, max_bytes=max_bytes)
    bad = None
    if obj.get("schema") != FAULTS_SCHEMA:
        bad = f"schema {obj.get('schema')!r} is not {FAULTS_SCHEMA!r}"
    elif type(obj.get("stream_id")) is not str or not all(type(obj.get(k)) is int and obj[k] >= 0
                                                           for k in ("seq", "position")):
        bad = "stream_id must be a string, seq and position integers >= 0"
    elif type(obj.get("faults")) is not list or not obj["faults"]:
        bad = "faults must be a non-empty list"
    else:
        for f in obj["faults"]:
            if type(f) is not dict or set(f) != set(FAULT) or not all(type(f[k]) in t for k, t in FAULT.items()):
                bad = f"a fault must have exactly the fields {', '.join(FAULT)} with their types"
            elif f["feature"] not in features and f["feature"] != LABELS:
                bad = f"feature {f['feature']!r} is not one of the stream's features {features}"
            elif not 0 <= f["start"] <= f["seq"] == obj["position"]:
                bad = "a fault's start must be >= 0 and at most its seq, which is the record's position"
            elif not all(len(v) == 2 and all(x is None or type(x) in (int, float) for x in v)
                         for v in (f["before"], f["after"])):
                bad = "a fault's before and after must be [median, iqr], numbers or null"
            if bad:
                break
    if bad:
        raise SchemaMismatch(f"drift-feed record of form {FAULTS_V1!r}: {bad}; only the explainer workers write the "
                             "drift feed: run every worker on the same streamxai version", where=where)
    return obj


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
    """The explanation documents of the drift-feed record at ``src``, as sent to the public
    topic; None for a record without the form's header (one explanation). An unknown form or a
    record not of its form's shape raises :class:`~schemas.SchemaMismatch`."""
    form = feed_form(src)
    if form is None:
        return None
    if form == LINES_V1:
        return (raw or b"").split(b"\n")
    if form == FAULTS_V1:
        return [raw or b""]
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
