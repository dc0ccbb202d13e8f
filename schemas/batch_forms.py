"""What the two batch forms of internal records share (the intake's arrivals batches,
:mod:`schemas.arrivals`, and the model handler's explain-task batches,
:mod:`schemas.task_batches`): where a list of messages is cut into records, and reading the
header that names a record's form.

>>> chunk_bounds([10, 10, 10, 30], max_bytes=25)
[(0, 2), (2, 3), (3, 4)]
>>> chunk_bounds([1, 1, 1], max_bytes=100, max_items=2)
[(0, 2), (2, 3)]
"""

from __future__ import annotations

from .errors import SchemaMismatch
from .source import Source

__all__ = ["chunk_bounds", "read_form"]


def chunk_bounds(sizes: list[int], max_bytes: int, max_items: int | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive runs of messages of ``sizes`` bytes each (with whatever
    framing each adds), in order: at most ``max_bytes`` and ``max_items`` per run, except a
    message larger than ``max_bytes``, which goes alone."""
    bounds, start, size = [], 0, 0
    for i, n in enumerate(sizes):
        if i > start and (size + n > max_bytes or i - start == max_items):
            bounds.append((start, i))
            start, size = i, 0
        size += n
    if sizes:
        bounds.append((start, len(sizes)))
    return bounds


def read_form(src: Source, header: str, known: bytes, what: str, writer: str) -> bool:
    """Whether the record at ``src`` is in the batch form its ``header`` names (False: no such
    header, a record of one message). A form other than ``known`` raises
    :class:`~schemas.SchemaMismatch` naming ``what`` was read and the ``writer`` to match."""
    form = next((v for k, v in src.headers or () if k == header), None)
    if form is None:
        return False
    if form != known:
        raise SchemaMismatch(f"{what} form {form!r} is not known to this version (it reads {known!r}); "
                             f"upgrade this worker to the version of {writer}", where=str(src))
    return True
