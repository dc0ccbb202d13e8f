"""The batch form of explain tasks: the tasks of one explainer group made from one arrivals
batch, as one ``explain-tasks`` record, one JSON document per line under the header
:data:`TASKS_FORM`. A record without it is one task.

>>> records = pack_tasks([b'{"seq": 1}', b'{"seq": 2}', b'{"seq": 3}'], max_bytes=25)
>>> [value for value, _ in records]
[b'{"seq": 1}\\n{"seq": 2}', b'{"seq": 3}']
>>> [value for value, _ in pack_tasks([b'1', b'2', b'3'], max_bytes=100, max_tasks=2)]
[b'1\\n2', b'3']
>>> unpack_tasks(records[0][0], Source("explain-tasks", 0, 4, headers=records[0][1]))
[b'{"seq": 1}', b'{"seq": 2}']
>>> unpack_tasks(b'{"seq": 1}', Source("explain-tasks", 0, 5)) is None
True
"""

from __future__ import annotations

from .batch_forms import pack_lines, unpack_lines
from .source import Headers, Source

__all__ = ["pack_tasks", "unpack_tasks", "TASKS_FORM"]

#: the header that marks an explain-tasks record carrying several tasks (its value: the form)
TASKS_FORM = "streamxai-tasks-form"


def pack_tasks(values: list[bytes], max_bytes: int, max_tasks: int | None = None) -> list[tuple[bytes, Headers | None]]:
    """``values`` (JSON documents without a raw newline), in order, as records of at most
    ``max_bytes`` (a longer task goes alone) and ``max_tasks`` tasks each; a record of one task
    has no headers."""
    return pack_lines(values, TASKS_FORM, max_bytes, max_tasks)


def unpack_tasks(raw: bytes | None, src: Source) -> list[bytes] | None:
    """The tasks of the explain-tasks record at ``src`` in the batch form; None for a record of
    one task. A form this version does not know raises :class:`~schemas.SchemaMismatch`."""
    return unpack_lines(raw, src, TASKS_FORM, "explain-tasks", "the model workers")
