"""A drift-feed record taken in one pass or message by message gives the same messages, states, checkpoints
and counters."""

from __future__ import annotations

import json
import random

import orjson
import pytest
from helpers.arrivals import Run, record_arrivals, run_handlers
from helpers.one_pass import crafted, take_records
from helpers.partition_log import PartitionLog
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler
from streamxai.schemas import FeatureEvent, Source, pack_feed, unpack_feed
from streamxai.settings import Settings


def _settings() -> Settings:
    return Settings(features=["a", "b"], task="regression", output="value", loss="squared",
                    model="river.linear_model.LinearRegression", model_params={}, explainers=["ipfi", "isage", "ipdp"],
                    change_explainers=["ipfi"], change_warmup=0, change_min_samples=10, emit_every=5,
                    storage_size=20, partitions=1)


def _feed(s: Settings) -> list:
    """The drift-feed records of two streams whose target swaps its features halfway."""
    r, events = random.Random(5), []
    for q in range(300):
        a, b = r.gauss(0, 1), r.gauss(0, 1)
        for sid in ("s", "t"):
            y = 3 * a - 0.5 * b if q < 150 or sid == "t" else 0.5 * a - 3 * b
            events.append(FeatureEvent(sid, q, float(q), {"a": a, "b": b}, y))
    log, run = PartitionLog(), Run()
    record_arrivals(log, events)
    model, explain = ModelHandler(s, history=log), ExplainHandler(s, history=run.tasks)
    run_handlers(s, log, model=lambda off: model, explain=lambda p, off: explain, run=run)
    return run.explanations.parts[("drift-feed", 0)]


def _records(feed: list) -> list:
    """``feed`` as a consumer may meet it (:func:`helpers.one_pass.crafted`)."""

    def other(doc: bytes) -> bytes:
        d = orjson.loads(doc)
        return orjson.dumps(dict(d, stream_id="t" if d["stream_id"] == "s" else "s"))

    return crafted(feed, "drift-feed", unpack_feed, pack_feed, other, at=(20, 31, 40, 50, 60))


def _take(s: Settings, records: list, one_pass: bool, monkeypatch, fail=None) -> tuple:
    return take_records(lambda store: ChangeHandler(s, checkpoints=store), records, "drift-feed", one_pass, monkeypatch,
                        every=40, fail=fail)


@pytest.mark.parametrize("broken", [False, True])
def test_a_record_taken_in_one_pass_gives_what_it_gives_message_by_message(monkeypatch, broken):
    s = _settings()
    feed = _feed(s)
    records = _records(feed) if broken else feed
    one = _take(s, records, True, monkeypatch)
    each = _take(s, records, False, monkeypatch)
    outs, states, saved, counters = one
    assert outs == each[0] and states == each[1] and saved == each[2] and counters == each[3]
    # what the comparison covers: changes found, checkpoints written, and, with the crafted
    # records, duplicates and dead letters of explanations inside a record
    assert sum(t == "drift-events" for t, _, _ in outs) >= 2 and len(saved) >= 5
    reasons = sorted(o["reason"] for t, _, o in outs if t == "dead-letters")
    assert reasons == (["malformed", "schema"] if broken else [])
    assert (counters.get("duplicate_explanations_dropped", 0) > 5) == broken


def test_an_explanation_that_raises_hands_the_rest_of_its_record_to_the_skeleton(monkeypatch):
    s = _settings()
    feed = _feed(s)
    fail = lambda p, src: src.offset == 45 and p.feature == "b"  # noqa: E731
    one = _take(s, feed, True, monkeypatch, fail)
    assert one == _take(s, feed, False, monkeypatch, fail)
    assert [o["reason"] for t, _, o in one[0] if t == "dead-letters"] == ["change_error"]


def test_the_usual_explanations_quick_check_gives_what_the_full_checks_give():
    """ChangeHandler._usual gives what the full checks give, and leaves them what it does not take, on a run's
    explanations with one field, block value or byte changed, or none."""
    s = _settings()
    docs = [doc for i, (_, value, _, headers) in enumerate(_feed(s))
            for doc in unpack_feed(value, Source("drift-feed", 0, i, headers=headers)) or [value]]
    h = ChangeHandler(s)
    rng = random.Random(11)
    odd = [None, True, 1, -1, 0, 6, 10**6, 2**70, 1.0, -0.5, 1e200, -1e200, float("nan"), float("inf"), "x", "",
           [], {}, {"n": 1, "mean": 0.0}, {"n": 1, "mean": 0.0, "m2": -1.0}, {"n": 2, "mean": 1, "m2": 0.0}]

    def full(raw, key):
        quick, h._usual = h._usual, lambda raw, key: None
        try:
            return h._checked(raw, key, "-")
        except Exception as e:  # noqa: BLE001 - the same outcome, whatever it is
            return (type(e), str(e))
        finally:
            h._usual = quick

    quick = passed = 0
    for _ in range(4000):
        doc = orjson.loads(rng.choice(docs))
        key = doc["stream_id"].encode()
        where = rng.choice(["field", "block", "drop", "key", "bytes", None, None])
        if where == "field":
            doc[rng.choice([*doc, "extra"])] = rng.choice(odd + [9, "ipfi", "a", "zz", "s"])
        elif where == "block":
            part = rng.choice(["block", "model_loss"])
            if isinstance(doc.get(part), dict):
                doc[part][rng.choice(["n", "mean", "m2"])] = rng.choice(odd)
        elif where == "drop":
            del doc[rng.choice(list(doc))]
        elif where == "key":
            key = rng.choice([None, b"t", b"", b"s/ipfi"])
        # json, not orjson, which does not write NaN, Infinity or integers past 64 bits
        raw = json.dumps(doc).encode()
        if where == "bytes":
            raw = rng.choice([raw[:-1], raw + b"x", b"[" + raw + b"]", b"", b"null", raw.replace(b"{", b"{\xff", 1)])
        want = full(raw, key)
        got = h._usual(raw, key)
        if got is not None:
            assert repr(got) == repr(want), (raw, key, got, want)
            quick += 1
        passed += hasattr(want, "stream_id")
    assert 1000 < passed < 3500 and quick > 0.9 * passed  # both outcomes were tried; the quick check took most


def test_a_rows_record_read_in_one_pass_gives_what_its_documents_give_one_by_one(monkeypatch):
    """ChangeHandler._usual_report gives what the record's documents give one by one, on a run's records with
    a head or row field, block value, row length or key changed."""
    s = _settings()
    rng = random.Random(13)
    odd = [None, True, 1, -1, 0, 6, 10**6, 1.0, -0.5, 1e200, -1e200, float("nan"), "x", "", "ipfi", "a", "zz", [], {},
           {"n": 1, "mean": 0.0}, {"n": 1, "mean": 0.0, "m2": -1.0}, {"n": 2, "mean": 1, "m2": 0.0}]
    records, kinds = [], set()
    for key, value, ts, headers in _feed(s):
        if rng.random() < 2 / 3:
            records.append((key, value, ts, headers))
            continue
        obj = orjson.loads(value)
        row = rng.choice(obj["rows"])
        where = rng.choice(["head", "row", "block", "length", "key", "bytes"])
        kinds.add(where)
        if where == "head":
            obj[rng.choice([*obj, "extra"])] = rng.choice(odd)
        elif where == "row":
            row[rng.randrange(len(row))] = rng.choice(odd)
        elif where == "block" and isinstance(row[7], dict):
            row[7][rng.choice(["n", "mean", "m2"])] = rng.choice(odd)
        elif where == "length":
            row.append(None)
        elif where == "key":
            key = rng.choice([None, b"t" if key == b"s" else b"s", b""])
        # json, not orjson, which does not write NaN
        raw = json.dumps(obj).encode()
        if where == "bytes":
            raw = rng.choice([raw[:-1], raw + b"x", b"[" + raw + b"]", b"", raw.replace(b"{", b"{\xff", 1)])
        records.append((key, raw, ts, headers))
    one = _take(s, records, True, monkeypatch)
    each = _take(s, records, False, monkeypatch)
    assert one == each
    reasons = {o["reason"] for t, _, o in one[0] if t == "dead-letters"}
    # what the comparison covers: every kind of change, refused ones among them, and changes found
    assert kinds == {"head", "row", "block", "length", "key", "bytes"} and {"malformed", "schema"} <= reasons
    assert sum(t == "drift-events" for t, _, _ in one[0]) >= 1
