"""Feature events from files, for ``streamxai produce FILE``: JSONL (feature events or plain
``{feature: value, ..., target: y}`` objects) and CSV (a header of feature names and the target);
and label events, for ``streamxai produce FILE --labels`` (:func:`file_labels`).

A bad line is recorded with its line number in a :class:`FileReport` and skipped; a missing
file, feature column or target column is a :class:`~schemas.ConfigError` (one line, before any
Kafka connection).
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from schemas import ConfigError, FeatureEvent, LabelEvent

__all__ = ["file_events", "file_labels", "FileReport"]


class FileReport:
    """What :func:`file_events` read: valid events and bad lines (with their line numbers).

    >>> r = FileReport(); r.valid = 9; r.bad.append((4, "not valid JSON"))
    >>> r.summary("d.jsonl")
    'd.jsonl: 9 valid event(s); 1 bad line(s) skipped (reported above)'
    """

    def __init__(self) -> None:
        self.valid = 0
        self.bad: list[tuple[int, str]] = []

    def summary(self, path: str | Path) -> str:
        tail = f"; {len(self.bad)} bad line(s) skipped (reported above)" if self.bad else ""
        return f"{path}: {self.valid} valid event(s){tail}"


class _BadLine(ValueError):
    pass


def _reject_constant(name: str) -> float:
    raise _BadLine(f"{name} is not a number streamxai accepts")


def file_events(
    path: str | Path,
    stream_id: str,
    features: list[str],
    target: str | None = None,
    *,
    target_kind: str = "label",
    categorical: tuple[str, ...] | list[str] = (),
    ts_column: str | None = None,
    start_seq: int = 0,
    clock: Callable[[], float] = time.time,
    report: FileReport | None = None,
    labels: bool = True,
) -> Iterator[FeatureEvent]:
    """Events from a JSONL file (feature events, or plain ``{feature: value, target: y}``
    objects) or a CSV file with a header of feature names and the target column.

    ``target`` names the target column; by default the first of ``target_kind`` (the
    settings' ``target``: ``label`` or ``number``), ``y`` and ``target`` the file has. JSON
    values are sent as they are (``1`` stays an integer: the worker knows which features are
    categorical); only CSV cells, which have no types, are converted: features to floats
    (text for ``categorical`` ones), targets to integers (or strings) for ``label`` and to
    floats for ``number``.
    ``ts`` comes from ``ts_column`` or, without one, the wall clock when the event is read.
    Plain rows are numbered ``start_seq, start_seq + 1, ...``. A bad line (not JSON, NaN,
    missing features, wrong types) is recorded in ``report`` with its line number and
    skipped; a missing file, feature column or target column raises :class:`ConfigError`.
    ``labels=False`` sends the features alone, also of feature events (the target column may be missing; its labels
    come later, see :func:`file_labels`).

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
            raise _BadLine(f"missing feature(s) {missing}")
        xx = {}
        for f in features:
            xx[f] = value(f, x[f], f in cat)
        yy = _target(y, target_kind, cell=value is _cell) if labels else None
        if ts_column is None:
            ts = clock()
        else:
            ts = _number(ts_column, ts_raw)
        return FeatureEvent(stream_id, seq, ts, xx, yy)

    if p.suffix.lower() == ".csv":
        with p.open(newline="") as fh:
            reader = csv.DictReader(fh)
            columns = reader.fieldnames or []
            col = _target_column(p, columns, target, target_kind) if labels or target else None
            missing = [f for f in features if f not in columns]
            if missing:
                raise ConfigError(f"{p} has no column(s) {missing} for the configured features; its columns are "
                                  f"{columns} (set `features` to the file's feature columns)")
            if ts_column is not None and ts_column not in columns:
                raise ConfigError(f"{p} has no ts column {ts_column!r}; its columns are {columns}")
            for row in reader:
                line = reader.line_num
                try:
                    _check_width(row, columns)
                    ev = make({f: row[f] for f in features}, row[col] if col else None,
                              row.get(ts_column) if ts_column else None, _cell)
                except _BadLine as e:
                    report.bad.append((line, str(e)))
                    continue
                report.valid += 1
                seq += 1
                yield ev
        return
    with p.open() as fh:
        for line_no, line in enumerate(fh, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = _json_object(line)
                if obj.get("schema") == FeatureEvent.SCHEMA:
                    obj.pop("schema")
                    try:
                        ev = FeatureEvent(**obj)
                    except TypeError as e:
                        raise _BadLine(f"not a feature_event/v1: {e}") from None
                    ev = FeatureEvent(ev.stream_id, ev.seq, _number("ts", ev.ts),
                                      {f: _json_value(f, v, f in cat) for f, v in ev.x.items()},
                                      _target(ev.y, target_kind) if labels else None)
                else:
                    col = target if target is not None else next(
                        (c for c in (target_kind, "y", "target") if c in obj), None)
                    y = obj.pop(col, None) if col is not None else None
                    ts_raw = obj.pop(ts_column, None) if ts_column else None
                    if ts_column and ts_raw is None:
                        raise _BadLine(f"no ts field {ts_column!r}")
                    extra = sorted(set(obj) - set(features) - ({col} if not labels and col is None else set()))
                    if extra:
                        raise _BadLine(f"unexpected field(s) {extra} (features are {features}; "
                                       f"the target is {col!r}, set it with --target)")
                    ev = make(obj, y, ts_raw, _json_value)
            except _BadLine as e:
                report.bad.append((line_no, str(e)))
                continue
            report.valid += 1
            seq += 1
            yield ev


def file_labels(
    path: str | Path,
    stream_id: str,
    target: str | None = None,
    *,
    target_kind: str = "label",
    ts_column: str | None = None,
    start_seq: int = 0,
    clock: Callable[[], float] = time.time,
    report: FileReport | None = None,
) -> Iterator[LabelEvent]:
    """Label events from a file: the target of each row for the event with its seq.

    A CSV needs the target column (found as :func:`file_events` finds it); its ``seq`` column
    says which event each label belongs to, and without one the rows are numbered
    ``start_seq, start_seq + 1, ...`` as ``produce FILE`` numbered the events of a file without
    bad lines (so the file of events itself can send its labels). JSONL lines are
    ``label_event/v1`` objects or plain ``{"seq": n, target: y}`` objects (``seq`` optional as
    in a CSV); feature columns are ignored. A row with an empty target sends nothing (that
    event stays unlabelled). ``ts`` comes from ``ts_column`` or the wall clock.

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
        seq = row_seq if seq_raw is None or seq_raw == "" else _seq(seq_raw)
        y = _target(y_raw, target_kind, cell=cell)
        if y is None:
            return None
        ts = clock() if ts_column is None else _number(ts_column, ts_raw)
        return LabelEvent(stream_id, seq, y, ts)

    rows: Iterator[tuple[int, Any]]
    if p.suffix.lower() == ".csv":
        fh = p.open(newline="")
        try:
            reader = csv.DictReader(fh)
            columns = reader.fieldnames or []
            col = _target_column(p, columns, target, target_kind)
            if ts_column is not None and ts_column not in columns:
                raise ConfigError(f"{p} has no ts column {ts_column!r}; its columns are {columns}")
        except BaseException:
            fh.close()  # a refused header leaves no file open
            raise

        def csv_rows() -> Iterator[tuple[int, Any]]:
            with fh:
                for row in reader:
                    yield reader.line_num, (row, (row.get("seq"), row[col], row.get(ts_column) if ts_column else None, True))

        rows = csv_rows()
    else:
        def jsonl_rows() -> Iterator[tuple[int, Any]]:
            with p.open() as fh:
                for line_no, line in enumerate(fh, start=1):
                    line = line.strip()
                    if line:
                        yield line_no, line

        rows = jsonl_rows()
    n = 0
    for line_no, row in rows:
        try:
            if isinstance(row, str):
                obj = _json_object(row)
                if obj.get("schema") == LabelEvent.SCHEMA:  # a label event as it would be sent
                    if not isinstance(obj.get("stream_id"), str) or "y" not in obj:
                        raise _BadLine("a label_event/v1 needs a string stream_id and y")
                    y = _target(obj["y"], target_kind)
                    if y is not None:
                        report.valid += 1
                        yield LabelEvent(obj["stream_id"], _seq(obj.get("seq")), y, _number("ts", obj.get("ts")))
                    n += 1
                    continue
                col = target if target is not None else next(
                    (c for c in ("y", target_kind, "target") if c in obj), None)
                if col is None:
                    raise _BadLine(f"no target field ({target_kind!r}, 'y' or 'target'; name it with --target)")
                row = (obj.get("seq"), obj[col], obj.get(ts_column or "ts") if ts_column else None, False)
            else:
                cells, row = row
                _check_width(cells, columns)
            label = make(start_seq + n, *row)
        except _BadLine as e:
            report.bad.append((line_no, str(e)))
            n += 1
            continue
        n += 1
        if label is not None:
            report.valid += 1
            yield label


def _json_object(line: str) -> dict[str, Any]:
    """One JSONL line as an object, or a bad line saying why it is not one."""
    try:
        obj = json.loads(line, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise _BadLine(f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise _BadLine(f"a JSON {type(obj).__name__}, expected an object")
    return obj


def _check_width(row: dict[Any, Any], columns: list[str]) -> None:
    """A CSV row of another width than its header (``csv.DictReader`` fills a short row with
    None and keeps a long row's extra cells under the key None) is a bad line, not an event
    whose missing cells are guessed."""
    if None in row or None in row.values():
        width = len(columns) + len(row.get(None) or ()) - sum(v is None for k, v in row.items() if k is not None)
        raise _BadLine(f"{width} cells where the header has {len(columns)} ({', '.join(columns)}); "
                       "an empty cell is written as nothing between two commas")


def _seq(v: Any) -> int:
    try:
        seq = int(v) if not isinstance(v, float) or v.is_integer() else None
    except (TypeError, ValueError):
        seq = None
    if seq is None or isinstance(v, bool) or seq < 0:
        raise _BadLine(f"seq={v!r} is not an integer >= 0")
    return seq


def _target_column(p: Path, columns: list[str], target: str | None, kind: str) -> str:
    if target is not None:
        if target not in columns:
            raise ConfigError(f"{p} has no target column {target!r}; its columns are {columns}")
        return target
    for c in (kind, "y", "target"):
        if c in columns:
            return c
    raise ConfigError(f"{p} has no target column ({kind!r}, 'y' or 'target'); its columns are {columns}; "
                      "name it with --target COLUMN")


def _number(name: str, v: Any) -> float:
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise _BadLine(f"{name}={v!r} is not a number") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _BadLine(f"{name}={v!r} is not a number")
    if not math.isfinite(v):
        raise _BadLine(f"{name}={v!r} is not finite")
    return float(v)


def _cell(name: str, v: str, categorical: bool) -> Any:
    """A CSV cell (text: a CSV has no types): a number, or the text of a categorical value."""
    if categorical:
        if v != "":
            return v
        raise _BadLine(f"categorical feature {name} has no value")
    if v == "":
        raise _BadLine(f"feature {name} has no value")
    return _number(name, v)


def _json_value(name: str, v: Any, categorical: bool) -> Any:
    """A JSON value, sent as it is (the worker knows which features are categorical); only what no
    worker takes is a bad line: null, booleans, arrays, objects, empty strings, and for a
    ``categorical`` feature a number that is not an integer."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)) or v == "":
        raise _BadLine(f"feature {name}={v!r} is not a number or a non-empty string")
    if isinstance(v, float) and not math.isfinite(v):  # 1e999
        raise _BadLine(f"feature {name}={v!r} is not finite")
    if categorical and isinstance(v, float) and not v.is_integer():
        raise _BadLine(f"categorical feature {name}={v!r} must be a non-empty string or an integer")
    return v


def _target(y: Any, kind: str, cell: bool = False) -> Any:
    """The target of a CSV ``cell`` (text) or of a JSON line (sent as it is, unless no worker takes it)."""
    if y is None or y == "":
        return None  # unlabelled: predicted, not learned
    if kind == "number":
        return _number("target", y) if cell else _json_number("target", y)
    if isinstance(y, str):
        if not cell:
            return y  # a class name
        try:
            f = float(y)
        except ValueError:
            return y  # a class name
        if not f.is_integer():
            raise _BadLine(f"label {y!r} is not an integer; for regression set target = number")
        return int(f)
    if isinstance(y, float) and (not math.isfinite(y) or not y.is_integer()):
        raise _BadLine(f"label {y!r} is not an integer; for regression set target = number")
    return y


def _json_number(name: str, v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _BadLine(f"{name}={v!r} is not a number")
    if not math.isfinite(v):
        raise _BadLine(f"{name}={v!r} is not finite")
    return v
