"""What the batch forms of internal records share (arrivals, explain tasks, the drift feed):
where a list of messages is cut into records, the header naming a record's form, and JSON
documents one per line (:func:`pack_lines`, :func:`unpack_lines`).

>>> chunk_bounds([10, 10, 10, 30], max_bytes=25)
[(0, 2), (2, 3), (3, 4)]
>>> chunk_bounds([1, 1, 1], max_bytes=100, max_items=2)
[(0, 2), (2, 3)]
"""

from __future__ import annotations

from .errors import SchemaMismatch
from .source import Headers, Source

__all__ = ["chunk_bounds", "read_form", "pack_lines", "unpack_lines", "LINES_V1"]

#: the form of JSON documents one per line (orjson writes no raw newline)
LINES_V1 = b"lines/1"


def chunk_bounds(sizes: list[int], max_bytes: int, max_items: int | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive runs of messages of ``sizes`` bytes each (with whatever
    framing each adds), in order: at most ``max_bytes`` and ``max_items`` per run, except a
    message larger than ``max_bytes``, which goes alone."""
    if sizes and sum(sizes) <= max_bytes and (max_items is None or len(sizes) <= max_items):
        return [(0, len(sizes))]  # the usual batch: one run
    bounds, start, size = [], 0, 0
    for i, n in enumerate(sizes):
        if i > start and (size + n > max_bytes or i - start == max_items):
            bounds.append((start, i))
            start, size = i, 0
        size += n
    if sizes:
        bounds.append((start, len(sizes)))
    return bounds


def read_form(src: Source, header: str, known: bytes | tuple[bytes, ...], what: str, writer: str) -> bytes | None:
    """The batch form the ``header`` of the record at ``src`` names (None: no such header, a
    record of one message). A form other than ``known`` (one form, or a tuple of the forms this
    version reads) raises :class:`~schemas.SchemaMismatch` naming ``what`` was read and the
    ``writer`` to match."""
    form = next((v for k, v in src.headers or () if k == header), None)
    if form is not None and form != known and (type(known) is bytes or form not in known):
        raise SchemaMismatch(f"{what} form {form!r} is not known to this version (it reads {known!r}); "
                             f"upgrade this worker to the version of {writer}", where=str(src))
    return form


def pack_lines(values: list[bytes], header: str, max_bytes: int, max_items: int | None = None, *,
               always: bool = False) -> list[tuple[bytes, Headers | None]]:
    """``values`` (JSON documents without a raw newline), in order, as records of at most
    ``max_bytes`` (a longer document goes alone) and ``max_items`` documents each, one per line,
    marked by ``header`` (:data:`LINES_V1`); a record of one document has no header unless
    ``always``."""
    records: list[tuple[bytes, Headers | None]] = []
    for start, end in chunk_bounds([len(v) + 1 for v in values], max_bytes, max_items):
        chunk = values[start:end]
        records.append((chunk[0], None) if len(chunk) == 1 and not always
                       else (b"\n".join(chunk), ((header, LINES_V1),)))
    return records


def unpack_lines(raw: bytes | None, src: Source, header: str, what: str, writer: str) -> list[bytes] | None:
    """The documents of the record at ``src`` in the form of :func:`pack_lines` under ``header``;
    None for a record without it (one document). A form this version does not know raises
    :class:`~schemas.SchemaMismatch` (see :func:`read_form`)."""
    if not read_form(src, header, LINES_V1, what, writer):
        return None
    return (raw or b"").split(b"\n")
