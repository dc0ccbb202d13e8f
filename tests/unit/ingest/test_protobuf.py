"""``format = "protobuf"`` against confluent_kafka's ``mock://`` registry: the same predictions and tasks as
the JSON form; bad framing and unknown schema ids are dead letters saying so; a bad message class is
refused at load in one line; decoded records keep Protobuf's types and special fields."""

from __future__ import annotations

import base64

import orjson
import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from helpers.payments_proto import Detail, Payment
from helpers.source_runs import source_outputs
from streamxai.handlers import IntakeHandler, ModelHandler, Source
from streamxai.ingest.protobuf import to_record
from streamxai.schemas import ConfigError
from streamxai.settings import Settings

FEATURES = ["amount", "merchant.risk", "merchant.country"]
TOPIC = "team.payments"
CLASS = "helpers.payments_proto:Payment"
SOURCE = {"topic": TOPIC, "kind": "features", "format": "protobuf", "protobuf_message": CLASS, "features": FEATURES,
          "stream_id": "key", "event_id": "txn_id", "event_time": "event_time", "label": "fraud",
          "profile": "payments:*"}
PROFILE = {"features": FEATURES, "categorical": ["merchant.country"], "model_params": {"grace_period": 20},
           "explainers": ["ipfi", "ipdp"], "grid_size": 3, "storage_size": 20, "emit_every": 5}
CTX = SerializationContext(TOPIC, MessageField.VALUE)


def _settings(**source) -> Settings:
    return Settings(sources={"payments": {**SOURCE, **source}}, streams={"payments:*": PROFILE}, partitions=2,
                    explain_groups=1, schema_registry_url="mock://registry-protobuf-test")


def _records(n: int) -> list[tuple[bytes, dict]]:
    """Keyed records as JSON objects; every field a Protobuf message carries (zeros included)."""
    return [(acc.encode(), {"txn_id": f"t{i}-{acc}", "amount": 10.0 + i % 7,
                            "event_time": 1_700_000_000 + i, "fraud": int((i * 37 % 11) > 6),
                            "merchant": {"risk": (i * 37 % 11) / 10, "country": "DE" if i % 3 else "FR"}})
            for i in range(n) for acc in (["a1", "b2"] if i % 4 else ["a1"])]


def _framed(intake: IntakeHandler, rec: dict) -> bytes:
    ser = ProtobufSerializer(Payment, intake.sources.registry.client, {})
    return ser(Payment(**{k: v for k, v in rec.items() if k != "merchant"}, merchant=rec["merchant"]), CTX)


def _outputs(intake: IntakeHandler, model: ModelHandler, records) -> tuple[list[tuple], list[dict]]:
    return source_outputs(intake, model, records, TOPIC)


def test_protobuf_records_give_what_their_json_form_gives():
    records = _records(80)
    s = _settings()
    intake = IntakeHandler(s)
    framed = [(k, _framed(intake, rec)) for k, rec in records]
    assert all(v[0] == 0 for _, v in framed) and framed[0][1][1:5] == framed[-1][1][1:5]  # one schema id
    got, letters = _outputs(intake, ModelHandler(s), framed)
    plain = {**SOURCE, "format": "json"}
    del plain["protobuf_message"]
    js = Settings(sources={"payments": plain}, streams={"payments:*": PROFILE}, partitions=2, explain_groups=1)
    expected, _ = _outputs(IntakeHandler(js), ModelHandler(js), [(k, orjson.dumps(rec)) for k, rec in records])
    assert letters == []
    assert got == expected
    assert [m["event_id"] for t, _, m in got if t == "predictions"] == [rec["txn_id"] for _, rec in records]
    assert any(t == "explain-tasks" for t, _, _ in got)
    assert any(m["y_true"] == 0 for t, _, m in got if t == "predictions")  # a label 0 the message leaves unwritten


def test_the_decoded_record_keeps_numbers_nesting_enums_and_lists():
    intake = IntakeHandler(_settings())
    msg = Payment(txn_id="t1", amount=2.5, event_time=2**53 + 1, status=1, tags=["card", "eu"])
    msg.merchant.country = "DE"
    raw = ProtobufSerializer(Payment, intake.sources.registry.client, {})(msg, CTX)
    (out,) = intake.on_message(raw, b"a1", Source(TOPIC, 0, 0))
    assert orjson.loads(out.value) == {"txn_id": "t1", "amount": 2.5, "event_time": 2**53 + 1, "fraud": 0,
                                       "merchant": {"risk": 0.0, "country": "DE"}, "status": "STATUS_SETTLED",
                                       "tags": ["card", "eu"]}
    assert "merchant" not in to_record(Payment(txn_id="t2"))  # a nested message not sent is absent, not zeros


def test_bytes_without_the_magic_byte_are_a_dead_letter_saying_so():
    s = _settings()
    raw = Payment(txn_id="t0").SerializeToString()  # Protobuf, but not framed by a registry serializer
    _, (letter,) = _outputs(IntakeHandler(s), ModelHandler(s), [(b"a1", raw)])
    assert (letter["reason"], letter["stage"], letter["source"]) == ("schema", "intake",
                                                                     {"topic": TOPIC, "partition": 0, "offset": 0})
    assert ("source 'payments' (format = \"protobuf\"): the record is not registry-framed: its first byte is 0x0a, "
            "not the magic byte 0x00") in letter["error"]
    assert "confluent_kafka's ProtobufSerializer" in letter["error"]
    assert base64.b64decode(letter["original"]) == raw


def test_a_schema_id_the_registry_does_not_know_is_a_dead_letter_naming_it():
    intake = IntakeHandler(_settings())
    raw = _framed(intake, _records(1)[0][1])
    unknown = raw[:1] + (4242).to_bytes(4, "big") + raw[5:]
    (out,) = intake.on_message(unknown, b"a1", Source(TOPIC, 2, 9))
    letter = orjson.loads(out.value)
    assert (out.topic, letter["reason"], letter["stage"]) == ("dead-letters", "schema", "intake")
    assert "the schema registry does not know schema id 4242" in letter["error"]
    assert f"{TOPIC}[2]@9" in letter["error"]


def test_bytes_the_message_cannot_read_are_a_malformed_dead_letter():
    intake = IntakeHandler(_settings())
    raw = _framed(intake, _records(1)[0][1])
    (out,) = intake.on_message(raw[:9], b"a1", Source(TOPIC, 0, 3))
    letter = orjson.loads(out.value)
    schema_id = int.from_bytes(raw[1:5], "big")
    assert letter["reason"] == "malformed" and f"does not decode with schema id {schema_id}: " in letter["error"]


def test_a_message_class_that_does_not_import_is_refused_in_one_line():
    with pytest.raises(ConfigError) as e:
        _settings(protobuf_message="payments_pb2:Payment")
    assert str(e.value) == (
        "[sources.payments] protobuf_message = 'payments_pb2:Payment' cannot be imported: No module named "
        "'payments_pb2'; the module must be importable by every worker: set PYTHONPATH to the folder that holds "
        "payments_pb2 (PYTHONPATH=/path/to/folder streamxai worker ...) or install it into the worker's virtualenv")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("source", "says"), [
    ({"protobuf_message": None}, "protobuf_message is missing: format = \"protobuf\" needs the message class protoc "
                                 "generated for the topic, as module:Class"),
    ({"protobuf_message": "helpers.payments_proto.Payment"}, "as module:Class importable by the workers, e.g. "
                                                             "protobuf_message = \"payments_pb2:Payment\""),
    ({"protobuf_message": "helpers.payments_proto:Refund"}, "the module helpers.payments_proto has no Refund"),
    ({"protobuf_message": "helpers.payments_proto:Payment.DESCRIPTOR"},
     "is not a Protobuf message class (it is a Descriptor)"),
    ({"format": "avro"}, "only a source of format = \"protobuf\" names a message class (this one is format = 'avro')"),
])
def test_a_message_class_setting_that_cannot_work_is_refused_naming_the_source(source, says):
    table = {**SOURCE, **source}
    if table["protobuf_message"] is None:
        del table["protobuf_message"]
    with pytest.raises(ConfigError) as e:
        Settings(sources={"payments": table}, streams={"payments:*": PROFILE}, schema_registry_url="mock://r")
    assert str(e.value).startswith("[sources.payments] protobuf_message") and says in str(e.value)
    assert "\n" not in str(e.value)


def test_timestamps_wrappers_maps_bytes_and_optionals_map_as_times_values_objects_and_text():
    s = Settings(sources={"d": {"topic": "t", "kind": "features", "format": "protobuf",
                                "protobuf_message": "helpers.payments_proto:Detail", "features": ["limit", "counts.a"],
                                "stream_id": "key", "event_id": "score", "event_time": "at"}},
                 features=["limit", "counts.a"], schema_registry_url="mock://registry-protobuf-test")
    intake = IntakeHandler(s)
    msg = Detail(blob=b"\x01\x02", counts={"a": 2**40}, score=0)
    msg.at.FromSeconds(1714557600)
    msg.limit.value = 2.5
    raw = ProtobufSerializer(Detail, intake.sources.registry.client, {})(msg, SerializationContext(
        "t", MessageField.VALUE))
    (out,) = intake.on_message(raw, b"k", Source("t", 0, 0))
    assert orjson.loads(out.value) == {"at": "2024-05-01T10:00:00+00:00", "limit": 2.5, "counts": {"a": 2**40},
                                       "blob": "AQI=", "score": 0}
    (pred,) = [orjson.loads(o.value) for o in ModelHandler(s).on_message(out.value, out.key, Source(
        "arrivals", 0, 0, headers=out.headers)) if o.topic == "predictions"]
    assert (pred["stream_id"], pred["ts"], pred["event_id"]) == ("d:k", 1714557600.0, "0")
    assert "score" not in to_record(Detail())  # an optional field not set is absent, not its default
