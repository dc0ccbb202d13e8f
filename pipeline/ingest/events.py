"""Feature events from JSONL and CSV files (``streamxai produce FILE``), and which streams a
file's events belong to."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from streamxai.schemas import ConfigError, FeatureEvent

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
from .values import BadLine, csv_feature, json_feature, parse_number, parse_target

__all__ = ["file_events", "file_streams"]


def file_events(
    path: str | Path,
    stream_id: str,
    features: list[str],
    target: str | None = None,
    *,
    task: str = "classification",
    categorical: tuple[str, ...] | list[str] = (),
    ts_column: str | None = None,
    start_seq: int = 0,
    clock: Callable[[], float] = time.time,
    report: FileReport | None = None,
    labels: bool = True,
    of_stream: Callable[[str], tuple[str, Collection[str]]] | None = None,
) -> Iterator[FeatureEvent]:
    """Events from a JSONL file (feature events, or plain ``{feature: value, target: y}``
    objects) or a CSV file with a header of feature names and the target column.

    ``target`` names the target column; by default the first of :func:`~.lines.label_field` of
    ``task``, ``y`` and ``target`` the file has. JSON values are sent as they are; CSV cells are
    converted (features to floats, text for ``categorical`` ones; targets to the task's type).
    ``ts`` comes from ``ts_column``, else the wall clock. Plain rows are numbered from
    ``start_seq``. A bad line is recorded in ``report`` and skipped; a missing file or column
    raises :class:`ConfigError`. ``labels=False`` sends the features alone (see
    :func:`file_labels`). A feature event keeps its own stream, whose task and categorical
    features ``of_stream(stream_id)`` gives.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
    >>> _ = p.write_text("a,b,label,t\\n1.5,x,1,10\\n2,y,0,11\\n")
    >>> [(e.seq, e.x, e.y, e.ts) for e in file_events(p, "s", ["a", "b"], categorical=["b"], ts_column="t")]
    [(0, {'a': 1.5, 'b': 'x'}, 1, 10.0), (1, {'a': 2.0, 'b': 'y'}, 0, 11.0)]
    """
    p = Path(path)
    report = report if report is not None else FileReport()
    cat = set(categorical)
    if not p.is_file():
        raise ConfigError(f"{p} does not exist or is not a file")
    seq = start_seq

    def make(x: dict[str, Any], y: Any, ts_raw: Any, value: Callable[[str, Any, bool], Any]) -> FeatureEvent:
        missing = [f for f in features if f not in x]
        if missing:
            raise BadLine(f"missing feature(s) {missing}")
        xx = {}
        for f in features:
            xx[f] = value(f, x[f], f in cat)
        yy = parse_target(y, task, cell=value is csv_feature) if labels else None
        if ts_column is None:
            ts = clock()
        else:
            ts = parse_number(ts_column, ts_raw)
        return FeatureEvent(stream_id, seq, ts, xx, yy)

    def csv_event(row: dict[str, str] | BadLine, columns: list[str], col: str | None) -> FeatureEvent:
        if isinstance(row, BadLine):
            raise row
        check_utf8(row.values())
        check_width(row, columns)
        return make({f: row[f] for f in features}, row[col] if col else None,
                    row.get(ts_column) if ts_column else None, csv_feature)

    def jsonl_event(line: str) -> FeatureEvent:
        check_utf8((line,))
        obj = json_object(line)
        if obj.get("schema") == FeatureEvent.SCHEMA:
            obj.pop("schema")
            try:
                ev = FeatureEvent(**obj)
            except TypeError as e:
                raise BadLine(f"not a feature_event/v1: {e}") from None
            kind, its_cat = (task, cat) if of_stream is None else stream_settings(of_stream, ev.stream_id)
            return FeatureEvent(ev.stream_id, ev.seq, parse_number("ts", ev.ts),
                                {f: json_feature(f, v, f in its_cat) for f, v in ev.x.items()},
                                parse_target(ev.y, kind) if labels else None)
        col = target if target is not None else next((c for c in (label_field(task), "y", "target") if c in obj), None)
        y = obj.pop(col, None) if col is not None else None
        ts_raw = obj.pop(ts_column, None) if ts_column else None
        if ts_column and ts_raw is None:
            raise BadLine(f"no ts field {ts_column!r}")
        extra = sorted(set(obj) - set(features) - ({col} if not labels and col is None else set()))
        if extra:
            target_is = (f"the target is {col!r}" if col is not None else
                         f"no target field ({label_field(task)!r}, 'y' or 'target')")
            raise BadLine(f"unexpected field(s) {extra} (features are {features}; {target_is}, name it with --target)")
        return make(obj, y, ts_raw, json_feature)

    is_csv = p.suffix.lower() == ".csv"
    with open_text(p, newline="" if is_csv else None) as fh:
        lines: Iterator[tuple[int, Any]]
        event: Callable[[Any], FeatureEvent]
        if is_csv:
            reader = csv.DictReader(fh)
            columns = reader.fieldnames or []
            check_header(p, columns)
            col = target_column(p, columns, target, task) if labels or target else None
            missing = [f for f in features if f not in columns]
            if missing:
                raise ConfigError(f"{p} has no column(s) {missing} for the configured features; its columns are "
                                  f"{columns} (set `features` to the file's feature columns)")
            if ts_column is not None and ts_column not in columns:
                raise ConfigError(f"{p} has no ts column {ts_column!r}; its columns are {columns}")
            lines, event = numbered_csv_rows(reader), lambda row: csv_event(row, columns, col)
        else:
            lines, event = nonblank_lines(fh), jsonl_event
        for line_no, item in lines:
            try:
                ev = event(item)
            except BadLine as e:
                report.add_bad(line_no, str(e))
                continue
            report.valid += 1
            seq += 1
            yield ev


def file_streams(path: str | Path) -> tuple[bool, dict[str, int]]:
    """Which streams the events of a file belong to: whether it has plain rows (numbered by
    ``produce`` as the ``--stream-id``'s) and the first seq of each stream its feature events
    name. Lines :func:`file_events` would refuse are passed over.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "e.jsonl"
    >>> ev = '{"schema": "feature_event/v1", "stream_id": "%s", "seq": %d}\\n'
    >>> _ = p.write_text(ev % ("a", 7) + ev % ("b", 2) + ev % ("a", 3) + "not json\\n")
    >>> file_streams(p)
    (False, {'a': 3, 'b': 2})
    >>> _ = p.write_text('{"x": 1, "label": 0}\\n')
    >>> file_streams(p), file_streams(p.with_suffix(".csv"))
    ((True, {}), (True, {}))
    """
    p = Path(path)
    if p.suffix.lower() == ".csv":
        return True, {}
    plain, first = False, {}
    try:
        with open_text(p) as fh:
            for line in fh:
                try:
                    obj = json.loads(line) if line.strip() else None
                except ValueError:
                    continue
                if not isinstance(obj, dict):
                    continue
                if obj.get("schema") != FeatureEvent.SCHEMA:
                    plain = True
                    continue
                sid, seq = obj.get("stream_id"), obj.get("seq")
                if isinstance(sid, str) and isinstance(seq, int) and not isinstance(seq, bool):
                    first[sid] = min(seq, first.get(sid, seq))
    except OSError:
        pass
    return plain, first
