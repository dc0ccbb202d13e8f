"""Reading a file's lines for :mod:`streamxai.ingest`: UTF-8 text (a line that is not is bad, not
the end of the file), CSV rows and their width, JSON objects, the target column, a line's stream
settings; and the :class:`FileReport` of what was read. A bad line raises ``BadLine``."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from streamxai.schemas import ConfigError, InvalidMessage
from streamxai.schemas.features import check_stream_id

from .values import BadLine

__all__ = ["FileReport", "label_field", "open_text", "check_utf8", "nonblank_lines", "numbered_csv_rows", "check_header", "stream_settings",
           "json_object", "check_width", "target_column"]


class FileReport:
    """What :func:`file_events` read: valid events and bad lines (the first :attr:`SHOWN` with
    their line numbers and reasons, the others counted).

    >>> r = FileReport(); r.valid = 9
    >>> for line in range(4, 30): r.add_bad(line, "not valid JSON")
    >>> len(r.bad), r.n_bad, r.summary("d.jsonl")
    (20, 26, 'd.jsonl: 9 valid event(s); 26 bad line(s) skipped (the first 20 reported above)')
    """

    SHOWN = 20  # bad lines kept with their reasons

    def __init__(self) -> None:
        self.valid = 0
        self.n_bad = 0
        self.bad: list[tuple[int, str]] = []

    def add_bad(self, line: int, why: str) -> None:
        self.n_bad += 1
        if len(self.bad) < self.SHOWN:
            self.bad.append((line, why))

    def summary(self, path: str | Path) -> str:
        shown = "reported above" if self.n_bad <= len(self.bad) else f"the first {len(self.bad)} reported above"
        tail = f"; {self.n_bad} bad line(s) skipped ({shown})" if self.n_bad else ""
        return f"{path}: {self.valid} valid event(s){tail}"

def open_text(p: Path, **kw: Any) -> Any:
    """``p`` as UTF-8 text; a byte that is not UTF-8 is kept (as a surrogate) for
    :func:`check_utf8` to refuse its line, so one such line does not end the file."""
    return p.open(encoding="utf-8", errors="surrogateescape", **kw)


def _not_utf8(texts: Any) -> str | None:
    """Why one of ``texts`` (read by :func:`open_text`) is not UTF-8 text, or None."""
    for text in texts:
        if isinstance(text, str) and not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:
                return f"not UTF-8 text (byte 0x{ord(text[e.start]) - 0xDC00:02x}); save the file as UTF-8"
    return None


def check_utf8(texts: Any) -> None:
    """A bad line if one of ``texts`` (read by :func:`open_text`) is not UTF-8 text."""
    why = _not_utf8(texts)
    if why is not None:
        raise BadLine(why)


def nonblank_lines(fh: Any) -> Iterator[tuple[int, str]]:
    """The lines of the text file ``fh`` that are not blank, stripped, with their line numbers."""
    for line_no, line in enumerate(fh, start=1):
        line = line.strip()
        if line:
            yield line_no, line


def numbered_csv_rows(reader: Any) -> Iterator[tuple[int, dict | BadLine]]:
    """The rows of ``reader`` with their line numbers; a row the csv module cannot read (a cell
    over its size limit) comes as the bad line it is, and the rows after it are read on."""
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            yield line, BadLine(f"not a CSV row ({e})")
            continue
        yield reader.line_num, row


def check_header(p: Path, columns: list[str]) -> None:
    """A :class:`~schemas.ConfigError` if the CSV header of ``p`` is not UTF-8 text (every line would be bad)."""
    why = _not_utf8(columns)
    if why is not None:
        raise ConfigError(f"{p}: its header is {why}")


def stream_settings(of_stream: Callable[[str], tuple[str, Collection[str]]], stream_id: Any) -> tuple[str, Collection[str]]:
    """``of_stream`` of a line's stream id; a stream id no worker takes, or a stream no worker
    has settings for (``of_stream`` raises :class:`~schemas.InvalidMessage`), is a bad line."""
    try:
        check_stream_id(stream_id)
        return of_stream(stream_id)
    except InvalidMessage as e:
        raise BadLine(str(e)) from None


def _reject_constant(name: str) -> float:
    raise BadLine(f"{name} is not a number streamxai accepts")


def json_object(line: str) -> dict[str, Any]:
    """One JSONL line as an object, or a bad line saying why it is not one."""
    try:
        obj = json.loads(line, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise BadLine(f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise BadLine(f"a JSON {type(obj).__name__}, expected an object")
    return obj


def check_width(row: dict[Any, Any], columns: list[str]) -> None:
    """A CSV row of another width than its header (``csv.DictReader`` fills a short row with
    None and keeps a long row's extra cells under the key None) is a bad line, not an event
    whose missing cells are guessed."""
    if None in row or None in row.values():
        width = len(columns) + len(row.get(None) or ()) - sum(v is None for k, v in row.items() if k is not None)
        raise BadLine(f"{width} cells where the header has {len(columns)} ({', '.join(columns)}); "
                       "an empty cell is written as nothing between two commas")



def label_field(task: str) -> str:
    """The label field a file of ``task`` is read from by default, before ``y`` and ``target``.

    >>> label_field("classification"), label_field("regression")
    ('label', 'number')
    """
    return "number" if task == "regression" else "label"


def target_column(p: Path, columns: list[str], target: str | None, task: str) -> str:
    """The target column of the CSV ``p``: ``target``, else the first of :func:`label_field`, ``y``
    and ``target`` it has; a :class:`~schemas.ConfigError` naming its columns if it has none."""
    if target is not None:
        if target not in columns:
            raise ConfigError(f"{p} has no target column {target!r}; its columns are {columns}")
        return target
    for c in (label_field(task), "y", "target"):
        if c in columns:
            return c
    raise ConfigError(f"{p} has no target column ({label_field(task)!r}, 'y' or 'target'); its columns are {columns}; "
                      "name it with --target COLUMN")
