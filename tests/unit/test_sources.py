"""Sources in the team's own format: tables checked at load, records mapped to feature events (or dead letters
naming the path and type), numbered so outputs equal the own envelope's, across restarts and re-forwards."""

from __future__ import annotations

import orjson
import pytest
from helpers.partition_log import PartitionLog
from streamxai.handlers import ModelHandler, Source
from streamxai.handlers.intake import IntakeHandler
from streamxai.ingest.mapping import map_record
from streamxai.schemas import ConfigError, FeatureEvent, FeatureSpec, InvalidMessage, dumps
from streamxai.settings import Settings, load_settings
from streamxai.sources import parse_sources

FEATURES = ["amount", "merchant.risk", "merchant.country"]
SOURCE = {"topic": "team.payments", "kind": "features", "format": "json", "features": FEATURES,
          "stream_id": "key", "event_id": "txn_id", "event_time": "event_time", "label": "fraud",
          "profile": "payments:*"}
PROFILE = {"features": FEATURES, "categorical": ["merchant.country"], "model_params": {"grace_period": 20},
           "explainers": ["ipfi", "ipdp"], "grid_size": 3, "storage_size": 20, "emit_every": 5}


def _settings(**over) -> Settings:
    base = dict(sources={"payments": SOURCE}, streams={"payments:*": PROFILE}, partitions=2, explain_groups=1)
    base.update(over)
    return Settings(**base)


def test_a_settings_file_with_a_source_and_its_profile_loads(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("""
[sources.payments]
topic = "team.payments"
kind = "features"
format = "json"
features = ["amount", "merchant.risk", "merchant.country"]
stream_id = "key"
event_id = "txn_id"
event_time = "event_time"
label = "fraud"
profile = "payments:*"

[streams."payments:*"]
features = ["amount", "merchant.risk", "merchant.country"]
categorical = ["merchant.country"]
""")
    s = load_settings(f)
    spec = s.source_specs["payments"]
    assert (spec.topic, spec.features, spec.label) == ("team.payments", tuple(FEATURES), "fraud")
    assert s.for_stream("payments:acct-1").categorical == ["merchant.country"]


@pytest.mark.parametrize(("change", "says"), [
    ({"kind": "feature"}, ['[sources.payments] kind = \'feature\'', 'write kind = "features"']),
    ({"topic": ""}, ["[sources.payments] topic = ''", 'e.g. topic = "payments.v1"']),
    ({"format": "xml"}, ["[sources.payments] format = 'xml'", 'write format = "json"']),
    ({"features": []}, ["[sources.payments] features = []", 'features = ["amount", "merchant.mcc"]']),
    ({"features": ["a..b"]}, ["features = ['a..b']", "dotted paths"]),
    ({"stream_id": None}, ["[sources.payments] stream_id is missing", 'stream_id = "key"']),
    ({"event_id": 3}, ["[sources.payments] event_id = 3", 'event_id = "txn_id"']),
    ({"event_time": ""}, ["event_time = ''", '"timestamp" for the record\'s timestamp']),
    ({"colour": "red"}, ["[sources.payments]: unknown field(s) ['colour']"]),
    ({"profile": "nope"}, ["profile = 'nope': no [streams.'nope'] table", 'profile = "payments:*"']),
    ({"features": ["amount"]}, ["the profile 'payments:*' lists features", "make them the same names"]),
])
def test_a_bad_source_table_names_the_source_the_field_and_what_to_write(change, says):
    table = {k: v for k, v in {**SOURCE, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as e:
        _settings(sources={"payments": table})
    for part in says:
        assert part in str(e.value)


def test_a_profile_that_another_glob_shadows_is_refused():
    with pytest.raises(ConfigError, match="which the profile 'pay\\*' takes first"):
        _settings(streams={"pay*": PROFILE, "payments:*": PROFILE})


def test_two_sources_on_one_topic_are_refused():
    with pytest.raises(ConfigError, match=r"\[sources.b\] topic = 'team.payments' is the topic of \[sources.payments\]"):
        _settings(sources={"payments": SOURCE, "b": {k: v for k, v in SOURCE.items() if k != "profile"}})


# mapping -------------------------------------------------------------------------------------

def _record(i: int, account: str = "a1", **over) -> dict:
    rec = {"txn_id": f"t{i}", "account": account, "amount": 10.0 + i % 7,
           "merchant": {"risk": (i * 37 % 11) / 10, "country": "DE" if i % 3 else "FR"},
           "event_time": 1_700_000_000 + i, "fraud": int((i * 37 % 11) > 6)}
    rec.update(over)
    return rec


def _map(rec: dict, key: bytes | None = b"a1"):
    s = _settings()
    return map_record(s.source_specs["payments"], orjson.dumps(rec), key, None, s.stream_feature_spec,
                      where="team.payments[0]@9")


def test_a_record_maps_to_the_feature_event_of_its_paths():
    m = _map(_record(4, event_time="2024-05-01T10:00:00+02:00"))
    assert m.event_id == "t4"
    assert m.event == FeatureEvent("payments:a1", 0, 1714550400.0,
                                   {"amount": 14.0, "merchant.risk": 0.5, "merchant.country": "DE"}, 0)


@pytest.mark.parametrize(("rec", "key", "reason", "says"), [
    (_record(1, merchant={"risk": 0.1}), b"a1", "features",
     "no field 'country' at path 'merchant.country' (feature 'merchant.country': a string or integer, categorical)"),
    (_record(1, merchant=5), b"a1", "features", "at path 'merchant.risk' (feature 'merchant.risk': a number); 'merchant' is 5"),
    (_record(1, amount="12"), b"a1", "bad_value", "feature 'amount' at path 'amount' is '12'; expected a number"),
    (_record(1, amount=None), b"a1", "features", "null for the field 'amount'"),
    (_record(1, event_time="yesterday"), b"a1", "bad_value", "event time at path 'event_time' is 'yesterday'; expected"),
    (_record(1, txn_id=[1]), b"a1", "bad_value", "event id at path 'txn_id' is [1]; expected a string or integer"),
    (_record(1), None, "schema", "the record has no key (stream_id = \"key\")"),
    (_record(1), b"a b", "schema", "stream_id"),
    (_record(1, fraud=1.5), b"a1", "label_type", "label y in stream 'payments:a1'"),
])
def test_a_record_that_does_not_fit_names_the_path_and_the_type(rec, key, reason, says):
    with pytest.raises(InvalidMessage) as e:
        _map(rec, key)
    assert e.value.reason == reason
    assert says in str(e.value) and "team.payments[0]@9" in str(e.value)
    assert getattr(e.value, "event_id", None) == (None if reason == "bad_value" and "event id" in says else "t1")


# numbering -------------------------------------------------------------------------------------

def _envelope(m_event: FeatureEvent, seq: int) -> bytes:
    return dumps(FeatureEvent(m_event.stream_id, seq, m_event.ts, m_event.x, m_event.y))


def _team_records(n: int) -> list[tuple[bytes, bytes]]:
    """``(key, value)`` records of two accounts, interleaved, on the team's topic."""
    return [(acc.encode(), orjson.dumps(_record(i, acc))) for i in range(n) for acc in (["a1", "b2"] if i % 4 else ["a1"])]


def _outputs(outs, *, tasks=True) -> list[tuple]:
    got = []
    for o in outs:
        if o.topic == "predictions" or (tasks and o.topic == "explain-tasks"):
            m = orjson.loads(o.value)
            m.pop("sent_at", None)  # the wall clock when a task was made
            got.append((o.topic, o.key, m))
    return got


def _via_intake(s: Settings, records, log: PartitionLog, first: int = 0) -> None:
    """Records of the team's topic (from its offset ``first`` on) through the intake onto ``log``'s arrivals partition 0."""
    intake = IntakeHandler(s)
    for off, (k, v) in enumerate(records, start=first):
        for out in intake.on_batch([(v, k, Source("team.payments", 0, off, timestamp=100.0 + off))]):
            if out.topic != "arrivals":
                continue  # a dead letter of the intake
            at = len(log.parts.get(("arrivals", 0), []))
            log.append("arrivals", 0, out.key, out.value, headers=out.headers, timestamp=200.0 + at)


def _run(handler: ModelHandler, log: PartitionLog, offsets) -> list[list[tuple]]:
    """The outputs of each arrivals record at ``offsets``."""
    got = []
    for off in offsets:
        k, v, _, _ = log.parts[("arrivals", 0)][off]
        got.append(_outputs(handler.on_message(v, k, log.source("arrivals", 0, off))))
    return got


def test_a_sources_events_are_numbered_as_the_own_envelope_numbers_them():
    s = _settings()
    records = _team_records(120)
    log = PartitionLog()
    _via_intake(s, records, log)
    mapped = sum(_run(ModelHandler(s), log, range(len(records))), [])
    # the same events in the own envelope, seq 0, 1, 2, ... per stream, in the same order
    own, seqs = ModelHandler(s), {}
    expected = []
    for off, (k, v) in enumerate(records):
        ev = _map(orjson.loads(v), k).event
        seq = seqs[ev.stream_id] = seqs.get(ev.stream_id, -1) + 1
        expected += _outputs(own.on_message(_envelope(ev, seq), ev.stream_id.encode(), Source("features", 0, off)))
    ids = [m.pop("event_id") for _, _, m in mapped]
    assert [m.pop("event_id", None) for _, _, m in expected] == [None] * len(expected)  # absent in the own envelope
    assert mapped == expected
    assert {m["seq"] for t, k, m in mapped if t == "predictions" and k == b"payments:a1"} == set(range(120))
    # every prediction and explain task carries the team's id of its event
    by_seq = {(m["stream_id"], m["seq"]): i for (t, _, m), i in zip(mapped, ids, strict=True) if t == "predictions"}
    assert [by_seq[m["stream_id"], m["seq"]] for t, _, m in mapped if t == "explain-tasks"] == \
        [i for (t, _, _), i in zip(mapped, ids, strict=True) if t == "explain-tasks"]
    assert [i for (t, _, _), i in zip(mapped, ids, strict=True) if t == "predictions"] == \
        [orjson.loads(v)["txn_id"] for _, v in records]
    assert any(t == "explain-tasks" for t, _, _ in mapped)


def test_numbering_survives_a_restart_and_records_forwarded_twice(tmp_path):
    from streamxai.kafka.checkpoints import FileCheckpointStore

    s = _settings(checkpoint_every=25)
    records = _team_records(100)
    n = len(records)
    once = PartitionLog()
    _via_intake(s, records, once)
    full = _run(ModelHandler(s), once, range(n))
    # the worker stops after record 89; the restarted intake forwards 80..89 again, then the rest
    log = PartitionLog()
    _via_intake(s, records[:90], log)
    _via_intake(s, records[80:90], log, first=80)
    _via_intake(s, records[90:], log, first=90)
    store = FileCheckpointStore(tmp_path, every=s.checkpoint_every, secret=b"k" * 32)
    _run(ModelHandler(s, checkpoints=store), log, range(90))
    resumed = ModelHandler(s, history=log, checkpoints=store)
    got = _run(resumed, log, range(90, n + 10))
    assert got[:10] == [[]] * 10 and resumed.metrics.get("duplicates_dropped") == 10
    assert got[10:] == full[90:]
    assert resumed.metrics.get("checkpoints_restored") >= 1 and resumed.metrics.get("replayed_events") > 0


def test_a_record_that_does_not_fit_is_a_dead_letter_and_takes_no_seq():
    s = _settings()
    log = PartitionLog()
    bad = orjson.dumps(_record(1, merchant={"risk": 0.3}))
    _via_intake(s, [(b"a1", orjson.dumps(_record(0))), (b"a1", bad), (b"a1", orjson.dumps(_record(2))),
                    (None, orjson.dumps(_record(3)))], log)
    assert len(log.parts[("arrivals", 0)]) == 3  # the record without a key never reached arrivals
    mh = ModelHandler(s)
    outs = []
    for off in range(3):
        k, v, _, _ = log.parts[("arrivals", 0)][off]
        outs += mh.on_message(v, k, log.source("arrivals", 0, off))
    letters = [orjson.loads(o.value) for o in outs if o.topic == "dead-letters"]
    assert [(d["reason"], d["source"]) for d in letters] == [
        ("features", {"topic": "team.payments", "partition": 0, "offset": 1})]
    assert "path 'merchant.country'" in letters[0]["error"] and letters[0]["event_id"] == "t1"
    assert [orjson.loads(o.value)["seq"] for o in outs if o.topic == "predictions"] == [0, 1]


def test_the_intake_dead_letters_a_record_without_a_stream_id():
    s = _settings()
    (out,) = IntakeHandler(s).on_message(orjson.dumps(_record(0)), None, Source("team.payments", 3, 41))
    letter = orjson.loads(out.value)
    assert (out.topic, letter["stage"], letter["reason"]) == ("dead-letters", "intake", "schema")
    assert letter["source"] == {"topic": "team.payments", "partition": 3, "offset": 41}
    assert letter["event_id"] == "t0"  # the team's id of the record, where it has one
    (out,) = IntakeHandler(s).on_message(b"[1]", None, Source("team.payments", 3, 42))
    assert "event_id" not in orjson.loads(out.value)  # a record that names none


def test_the_record_timestamp_is_the_event_time_when_the_source_says_so():
    s = _settings(sources={"payments": {**SOURCE, "event_time": "timestamp"}})
    log = PartitionLog()
    _via_intake(s, [(b"a1", orjson.dumps(_record(0)))], log)
    (pred,) = [m for t, _, m in _run(ModelHandler(s), log, [0])[0] if t == "predictions"]
    assert pred["ts"] == 100.0  # the team's record's, not the arrivals record's (200.0)


def test_own_envelope_events_keep_their_seqs_next_to_a_source():
    s = _settings(features=["x"])
    mh = ModelHandler(s)
    ev = FeatureEvent("own", 5, 1.0, {"x": 1.0}, 1)
    (pred,) = [m for t, _, m in _outputs(mh.on_message(dumps(ev), b"own", Source("streamxai.features", 0, 0)))
               if t == "predictions"]
    assert pred["seq"] == 5


def test_a_feature_spec_of_the_profile_types_a_path():
    spec = _settings().stream_feature_spec("payments:x")
    assert spec == FeatureSpec(tuple(FEATURES), frozenset({"merchant.country"}), "classification")
    assert parse_sources({}, {}) == {}


def test_the_payments_demo_maps_back_to_the_demo_stream():
    from streamxai.local.demo_source import PAYMENTS_STREAM, payments_messages, payments_settings
    from streamxai.local.demo_stream import agrawal_events

    s = Settings(**payments_settings("d."))
    events = list(agrawal_events(PAYMENTS_STREAM, 50, seed=3))
    msgs = payments_messages(events, "d.", label_delay=7)
    pay, fraud = s.source_specs["payments"], s.source_specs["fraud"]
    records = [(k, v) for t, k, v in msgs if t == pay.topic]
    labels = [orjson.loads(v) for t, _, v in msgs if t == fraud.topic]
    mapped = [map_record(pay, v, k, None, s.stream_feature_spec, where="-") for k, v in records]
    assert [(m.event.stream_id, m.event.ts, m.event.x) for m in mapped] == [
        (PAYMENTS_STREAM, e.ts, {p: e.x[p.split(".")[-1].replace("value", "hvalue").replace("years", "hyears")]
                                 for p in pay.features}) for e in events]
    # each label 7 payments after its own, keyed by the txn_id of its payment
    assert [lb["txn_id"] for lb in labels] == [m.event_id for m in mapped]
    assert [lb["label"] for lb in labels] == [e.y for e in events]
    order = [(t == pay.topic) for t, _, _ in msgs]
    assert order[:8] == [True] * 8 and order[8] is False


def test_the_settings_reference_names_every_key_of_a_source_table():
    import dataclasses

    from streamxai.sources import _FIELDS

    help_text = next(f.metadata["help"] for f in dataclasses.fields(Settings) if f.name == "sources")
    assert [k for k in sorted(_FIELDS) if f"{k} (" not in help_text] == []
