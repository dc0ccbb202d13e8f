"""``streamxai produce FILE`` sends JSONL integers as integers: as floats, a worker that knows a
feature is categorical would dead-letter every event ("is 1.0; send a string or integer")."""

from __future__ import annotations

import gc
import logging

import orjson
import pytest
from streamxai.handlers import ModelHandler, Source
from streamxai.ingest import FileReport, file_events, file_labels
from streamxai.schemas import BadValue, ConfigError, FeatureSpec, dumps, parse_feature_event
from streamxai.settings import Settings


def test_jsonl_values_are_sent_as_they_are(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text('{"w": 1, "size": 1, "color": "red", "label": 1}\n'
                 '{"schema": "feature_event/v1", "stream_id": "f", "seq": 1, "ts": 5, '
                 '"x": {"w": 2.5, "size": 2, "color": "blue"}, "y": "yes"}\n')
    a, b = file_events(f, "f", ["w", "size", "color"], clock=lambda: 3.0)
    assert a.x == {"w": 1, "size": 1, "color": "red"} and type(a.x["w"]) is int and type(a.x["size"]) is int
    assert b.x == {"w": 2.5, "size": 2, "color": "blue"} and type(b.x["size"]) is int
    assert (a.y, b.y) == (1, "yes")
    assert orjson.loads(dumps(a))["x"] == {"w": 1, "size": 1, "color": "red"}  # on the wire too


def test_jsonl_values_no_worker_takes_are_still_bad_lines(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text('{"w": null, "size": 1, "label": 1}\n{"w": true, "size": 1, "label": 1}\n'
                 '{"w": [1], "size": 1, "label": 1}\n{"w": "", "size": 1, "label": 1}\n'
                 '{"w": 1, "size": 1.5, "label": 1}\n{"w": 1, "size": 1, "label": 1}\n')
    report = FileReport()
    (ev,) = file_events(f, "f", ["w", "size"], categorical=["size"], report=report)
    assert [line for line, _ in report.bad] == [1, 2, 3, 4, 5] and ev.x == {"w": 1, "size": 1}


def test_csv_cells_are_still_converted(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("w,size,label\n1,2,1\n")
    (ev,) = file_events(f, "f", ["w", "size"], categorical=["size"])
    assert ev.x == {"w": 1.0, "size": "2"} and type(ev.x["w"]) is float and ev.y == 1


def test_a_csv_row_with_fewer_or_more_cells_than_the_header_is_a_bad_line(tmp_path):
    """A row short of its label cell is not sent as an event whose label comes later, and a
    row with an extra cell does not lose it silently: both are bad lines, reported."""
    f = tmp_path / "d.csv"
    f.write_text("w,size,label\n1,2,1\n3,4\n5,6,0,9\n7,8,\n")
    report = FileReport()
    events = list(file_events(f, "f", ["w", "size"], report=report))
    assert [(e.x["w"], e.y) for e in events] == [(1.0, 1), (7.0, None)]  # an empty label cell: it comes later
    assert [line for line, _ in report.bad] == [3, 4]
    assert all("the header has 3" in why for _, why in report.bad), report.bad
    report = FileReport()
    labels = list(file_labels(f, "f", report=report, clock=lambda: 0.0))
    assert [(e.seq, e.y) for e in labels] == [(0, 1)] and [line for line, _ in report.bad] == [3, 4]


def test_an_integral_float_for_a_categorical_feature_is_that_integer():
    spec = FeatureSpec(names=("w", "size"), categorical=frozenset({"size"}))

    def parse(v):
        raw = orjson.dumps({"schema": "feature_event/v1", "stream_id": "s", "seq": 0, "ts": 0,
                            "x": {"w": 1, "size": v}, "y": 1})
        return parse_feature_event(raw, spec, where="features[0]@0").x["size"]

    assert parse(1.0) == 1 and type(parse(1.0)) is int and type(parse(-3.0)) is int
    assert parse(1) == 1 and parse("1.0") == "1.0"
    with pytest.raises(BadValue, match="categorical feature 'size'.* is 1.5"):
        parse(1.5)


def _event(sid, seq, size):
    return orjson.dumps({"schema": "feature_event/v1", "stream_id": sid, "seq": seq, "ts": 0,
                         "x": {"w": 0.5, "size": size}, "y": seq % 2})


def test_a_file_of_integer_codes_reaches_a_worker_that_knows_the_feature_is_categorical(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text("".join(orjson.dumps({"w": i / 10, "size": i % 3, "label": i % 2}).decode() + "\n"
                         for i in range(30)))
    events = list(file_events(f, "f", ["w", "size"]))  # the producer was not told `categorical`
    h = ModelHandler(Settings(features=["w", "size"], categorical=["size"], explainers=["ipfi"]))
    outs = [o for i, e in enumerate(events) for o in h.on_message(dumps(e), b"f", Source("features", 0, i))]
    assert not [o for o in outs if o.topic == "dead-letters"]
    assert sum(o.topic == "predictions" for o in outs) == 30


def test_a_stream_whose_first_events_are_mostly_dead_letters_is_one_error_line(caplog):
    h = ModelHandler(Settings(features=["w", "size"], categorical=["size"], explainers=["ipfi"]))
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        for seq in range(300):  # every event of "bad" is refused, every second one of "half"
            h.on_message(_event("bad", seq, 1.5), b"bad", Source("features", 0, 2 * seq))
            h.on_message(_event("half", seq, 1.5 if seq % 2 else 2), b"half", Source("features", 1, seq))
            h.on_message(_event("good", seq, 2), b"good", Source("features", 2, seq))
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    msg = errors[0].getMessage()
    assert "'bad'" in msg and "bad_value" in msg and "categorical feature 'size'" in msg and "1.5" in msg
    assert "51 of its first 51 events" in msg


def test_a_labels_file_without_its_target_column_is_refused_and_left_closed(tmp_path):
    # a refused header leaves no file open (a ResourceWarning is an error under the suite's filterwarnings)
    p = tmp_path / "reg.csv"
    p.write_text("x0,number\n0.5,2.25\n")
    with pytest.raises(ConfigError, match="has no target column"):
        next(file_labels(p, "reg-7"))
    with pytest.raises(ConfigError, match="has no ts column"):
        next(file_labels(p, "reg-7", target="number", ts_column="t"))
    gc.collect()  # an unclosed file warns when it is collected


def test_without_labels_also_leaves_out_the_label_of_a_feature_event_line(tmp_path):
    # `produce FILE.jsonl --without-labels` leaves out the y of feature_event/v1 lines too, not
    # only of plain lines: else the worker learns them at once and the labels sent later with
    # --labels are all dead letters (label_already_labelled)
    f = tmp_path / "d.jsonl"
    f.write_text('{"schema": "feature_event/v1", "stream_id": "f", "seq": 0, "ts": 5, "x": {"w": 2.5}, "y": 1}\n'
                 '{"w": 1.5, "label": 0}\n')
    assert [e.y for e in file_events(f, "f", ["w"], labels=False)] == [None, None]
    assert [e.y for e in file_events(f, "f", ["w"])] == [1, 0]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_line_that_is_not_utf8_is_a_bad_line_and_the_others_are_sent(tmp_path, suffix):
    # one byte 0xff in a file (a cell saved as latin-1) is a bad line, not a UnicodeDecodeError
    # traceback that ends produce with nothing of the file sent after the line
    f = tmp_path / f"d{suffix}"
    if suffix == ".csv":
        f.write_bytes(b"a,size,label\n1.5,big,1\n2.5,gro\xdf,0\n3.5,small,1\n")
    else:
        f.write_bytes(b'{"a": 1.5, "size": "big", "label": 1}\n{"a": 2.5, "size": "gro\xdf", "label": 0}\n'
                      b'{"a": 3.5, "size": "small", "label": 1}\n')
    report = FileReport()
    evs = list(file_events(f, "s", ["a", "size"], categorical=["size"], report=report, clock=lambda: 0.0))
    assert [e.x["size"] for e in evs] == ["big", "small"] and [e.seq for e in evs] == [0, 1]
    line = 3 if suffix == ".csv" else 2  # the file's line (a CSV's header is its line 1)
    assert report.bad == [(line, "not UTF-8 text (byte 0xdf); save the file as UTF-8")]
    report = FileReport()
    assert [(e.seq, e.y) for e in file_labels(f, "s", report=report, clock=lambda: 0.0)] == [(0, 1), (2, 1)]
    assert report.bad == [(line, "not UTF-8 text (byte 0xdf); save the file as UTF-8")]


def test_a_header_that_is_not_utf8_is_one_error(tmp_path):
    f = tmp_path / "d.csv"
    f.write_bytes(b"a,gr\xf6\xdfe,label\n1.5,2,1\n")
    with pytest.raises(ConfigError, match=r"header is not UTF-8 text \(byte 0xf6\)"):
        list(file_events(f, "s", ["a"]))
    with pytest.raises(ConfigError, match=r"header is not UTF-8 text \(byte 0xf6\)"):
        list(file_labels(f, "s"))


def test_a_csv_cell_over_the_csv_modules_limit_is_a_bad_line(tmp_path):
    # a 200,000-character cell is a bad line, not a traceback ("_csv.Error: field larger than
    # field limit (131072)")
    f = tmp_path / "d.csv"
    f.write_text("a,size,label\n1.5,big,1\n2.5,\"" + "x" * 200_000 + "\",0\n3.5,small,1\n")
    report = FileReport()
    evs = list(file_events(f, "s", ["a", "size"], categorical=["size"], report=report, clock=lambda: 0.0))
    assert [e.x["size"] for e in evs] == ["big", "small"]
    assert [(line, why[:40]) for line, why in report.bad] == [(3, "not a CSV row (field larger than field l")]
    report = FileReport()
    # labels are numbered by row, bad rows too (as the other bad lines of a labels file)
    assert [(e.seq, e.y) for e in file_labels(f, "s", report=report, clock=lambda: 0.0)] == [(0, 1), (2, 1)]
    assert [line for line, _ in report.bad] == [3]
