"""Label events from JSONL and CSV files (``streamxai produce FILE --labels``)."""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from streamxai.schemas import ConfigError, LabelEvent

from .lines import (
    FileReport,
    check_header,
    check_utf8,
    check_width,
    json_object,
    label_field,
    nonblank_lines,
    numbered_csv_rows,
    open_text,
    stream_settings,
    target_column,
)
from .values import BadLine, parse_number, parse_seq, parse_target

__all__ = ["file_labels"]


def file_labels(
    path: str | Path,
    stream_id: str,
    target: str | None = None,
    *,
    task: str = "classification",
    ts_column: str | None = None,
    start_seq: int = 0,
    clock: Callable[[], float] = time.time,
    report: FileReport | None = None,
    of_stream: Callable[[str], tuple[str, Collection[str]]] | None = None,
) -> Iterator[LabelEvent]:
    """Label events from a file: the target of each row for the event with its seq.

    A CSV needs the target column (found as :func:`file_events` finds it) and says which event
    each label belongs to in its ``seq`` column, else rows are numbered from ``start_seq`` as
    ``produce FILE`` numbered the events. JSONL lines are ``label_event/v1`` objects or plain
    ``{"seq": n, target: y}`` objects. A row with an empty target sends nothing. ``ts`` comes
    from ``ts_column`` or the wall clock; ``of_stream(stream_id)[0]`` gives a stream's task.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
    >>> _ = p.write_text("a,label\\n1.5,1\\n2,\\n3,0\\n")
    >>> [(e.seq, e.y) for e in file_labels(p, "s", clock=lambda: 0.0)]
    [(0, 1), (2, 0)]
    """
    p = Path(path)
    report = report if report is not None else FileReport()
    if not p.is_file():
        raise ConfigError(f"{p} does not exist or is not a file")

    def make(row_seq: int, seq_raw: Any, y_raw: Any, ts_raw: Any, cell: bool) -> LabelEvent | None:
        seq = row_seq if seq_raw is None or seq_raw == "" else parse_seq(seq_raw)
        y = parse_target(y_raw, task, cell=cell)
        if y is None:
            return None
        ts = clock() if ts_column is None else parse_number(ts_column, ts_raw)
        return LabelEvent(stream_id, seq, y, ts)

    rows: Iterator[tuple[int, Any]]
    if p.suffix.lower() == ".csv":
        fh = open_text(p, newline="")
        try:
            reader = csv.DictReader(fh)
            columns = reader.fieldnames or []
            check_header(p, columns)
            col = target_column(p, columns, target, task)
            if ts_column is not None and ts_column not in columns:
                raise ConfigError(f"{p} has no ts column {ts_column!r}; its columns are {columns}")
        except BaseException:
            fh.close()  # a refused header leaves no file open
            raise

        def csv_rows() -> Iterator[tuple[int, Any]]:
            with fh:
                for line, row in numbered_csv_rows(reader):
                    yield line, (row if isinstance(row, BadLine) else
                                 (row, (row.get("seq"), row[col], row.get(ts_column) if ts_column else None, True)))

        rows = csv_rows()
    else:
        def jsonl_rows() -> Iterator[tuple[int, Any]]:
            with open_text(p) as fh:
                yield from nonblank_lines(fh)

        rows = jsonl_rows()
    n = 0
    for line_no, row in rows:
        try:
            if isinstance(row, str):
                check_utf8((row,))
                obj = json_object(row)
                if obj.get("schema") == LabelEvent.SCHEMA:  # a label event as it would be sent
                    if not isinstance(obj.get("stream_id"), str) or "y" not in obj:
                        raise BadLine("a label_event/v1 needs a string stream_id and y")
                    kind = task if of_stream is None else stream_settings(of_stream, obj["stream_id"])[0]
                    y = parse_target(obj["y"], kind)
                    if y is not None:
                        report.valid += 1
                        yield LabelEvent(obj["stream_id"], parse_seq(obj.get("seq")), y, parse_number("ts", obj.get("ts")))
                    n += 1
                    continue
                col = target if target is not None else next(
                    (c for c in ("y", label_field(task), "target") if c in obj), None)
                if col is None:
                    raise BadLine(f"no target field ({task!r}, 'y' or 'target'; name it with --target)")
                row = (obj.get("seq"), obj[col], obj.get(ts_column or "ts") if ts_column else None, False)
            else:
                if isinstance(row, BadLine):
                    raise row
                cells, row = row
                check_utf8(cells.values())
                check_width(cells, columns)
            label = make(start_seq + n, *row)
        except BadLine as e:
            report.add_bad(line_no, str(e))
            n += 1
            continue
        n += 1
        if label is not None:
            report.valid += 1
            yield label
