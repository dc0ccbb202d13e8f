"""Avro and JSON Schema sources against confluent_kafka's ``mock://`` registry: the same outputs as the JSON
form; bad framing and unknown ids are dead letters; an unanswering registry holds records back (one
WARNING, a counter); missing extra or URL refused in one line; the password never shows."""

from __future__ import annotations

import asyncio
import datetime
import decimal
import logging
import socket
import sys
from collections import namedtuple

import orjson
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from helpers.source_runs import source_outputs
from streamxai.agents._forward import Outbox, forward_fetched
from streamxai.handlers import IntakeHandler, ModelHandler, Source
from streamxai.ingest import registry
from streamxai.ingest.registry import RegistryUnreachable
from streamxai.metrics import Metrics
from streamxai.schemas import ConfigError
from streamxai.settings import Settings

FEATURES = ["amount", "merchant.risk", "merchant.country"]
TOPIC = "team.payments"
SOURCE = {"topic": TOPIC, "kind": "features", "format": "avro", "features": FEATURES, "stream_id": "key",
          "event_id": "txn_id", "event_time": "event_time", "label": "fraud", "profile": "payments:*"}
PROFILE = {"features": FEATURES, "categorical": ["merchant.country"], "model_params": {"grace_period": 20},
           "explainers": ["ipfi", "ipdp"], "grid_size": 3, "storage_size": 20, "emit_every": 5}
AVRO = orjson.dumps({"type": "record", "name": "Payment", "fields": [
    {"name": "txn_id", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "merchant", "type": {"type": "record", "name": "Merchant", "fields": [
        {"name": "risk", "type": "double"}, {"name": "country", "type": "string"}]}},
    {"name": "event_time", "type": "long"}, {"name": "fraud", "type": "int"}]}).decode()
JSON_SCHEMA = orjson.dumps({"title": "Payment", "type": "object", "properties": {
    "txn_id": {"type": "string"}, "amount": {"type": "number"},
    "merchant": {"type": "object", "properties": {"risk": {"type": "number"}, "country": {"type": "string"}}},
    "event_time": {"type": "integer"}, "fraud": {"type": "integer"}}}).decode()
CTX = SerializationContext(TOPIC, MessageField.VALUE)
Record = namedtuple("Record", "topic partition offset key value timestamp headers")


def _settings(fmt: str = "avro", **over) -> Settings:
    base = dict(sources={"payments": {**SOURCE, "format": fmt}}, streams={"payments:*": PROFILE}, partitions=2,
                explain_groups=1, schema_registry_url="mock://registry-test")
    base.update(over)
    return Settings(**base)


def _records(n: int) -> list[tuple[bytes, dict]]:
    return [(acc.encode(), {"txn_id": f"t{i}-{acc}", "amount": 10.0 + i % 7,
                            "merchant": {"risk": (i * 37 % 11) / 10, "country": "DE" if i % 3 else "FR"},
                            "event_time": 1_700_000_000 + i, "fraud": int((i * 37 % 11) > 6)})
            for i in range(n) for acc in (["a1", "b2"] if i % 4 else ["a1"])]


def _serializer(intake: IntakeHandler, fmt: str):
    client = intake.sources.registry.client  # the registry the source reads (in memory for mock:// URLs)
    return AvroSerializer(client, AVRO) if fmt == "avro" else JSONSerializer(JSON_SCHEMA, client)


def _through(s: Settings, records: list[tuple[bytes, bytes]]) -> tuple[list[tuple], list[dict]]:
    """The predictions and explain tasks of ``records`` (key, value) of the team's topic, through the
    intake and the model handler; and the intake's dead letters."""
    intake, model = IntakeHandler(s), ModelHandler(s)
    return _model_outputs(intake, model, records)


def _model_outputs(intake: IntakeHandler, model: ModelHandler, records) -> tuple[list[tuple], list[dict]]:
    return source_outputs(intake, model, records, TOPIC)


@pytest.mark.parametrize("fmt", ["avro", "json_schema"])
def test_registry_framed_records_give_what_their_json_form_gives(fmt):
    records = _records(80)
    s = _settings(fmt)
    intake, model = IntakeHandler(s), ModelHandler(s)
    ser = _serializer(intake, fmt)
    framed = [(k, ser(rec, CTX)) for k, rec in records]
    assert all(v[0] == 0 for _, v in framed) and framed[0][1][1:5] == framed[-1][1][1:5]  # one schema id
    got, letters = _model_outputs(intake, model, framed)
    expected, _ = _through(_settings(schema_registry_url="", sources={"payments": {**SOURCE, "format": "json"}}),
                           [(k, orjson.dumps(rec)) for k, rec in records])
    assert letters == []
    assert got == expected
    assert [m["event_id"] for t, _, m in got if t == "predictions"] == [rec["txn_id"] for _, rec in records]
    assert any(t == "explain-tasks" for t, _, _ in got)


def test_an_avro_labels_source_joins_by_the_decoded_event_id():
    s = _settings(sources={"payments": {**SOURCE, "label": None},
                           "outcomes": {"topic": "team.outcomes", "kind": "labels", "format": "avro",
                                        "event_id": "txn_id", "label": "fraud"}})
    intake = IntakeHandler(s)
    schema = '{"type": "record", "name": "Outcome", "fields": [{"name": "txn_id", "type": "string"}, ' \
             '{"name": "fraud", "type": "int"}]}'
    raw = AvroSerializer(intake.sources.registry.client, schema)({"txn_id": "t7", "fraud": 1},
                                                                 SerializationContext("team.outcomes", MessageField.VALUE))
    (out,) = intake.on_message(raw, None, Source("team.outcomes", 1, 4))
    assert (out.topic, out.key, orjson.loads(out.value)) == ("event-index", b"t7", {"txn_id": "t7", "fraud": 1})


def test_bytes_without_the_magic_byte_are_a_dead_letter_saying_so():
    s = _settings()
    raw = orjson.dumps(_records(1)[0][1])
    _, (letter,) = _through(s, [(b"a1", raw)])
    assert (letter["reason"], letter["stage"], letter["source"]) == ("schema", "intake",
                                                                     {"topic": TOPIC, "partition": 0, "offset": 0})
    assert "the record is not registry-framed: its first byte is 0x7b, not the magic byte 0x00" in letter["error"]
    assert orjson.loads(__import__("base64").b64decode(letter["original"])) == _records(1)[0][1]


def test_a_schema_id_the_registry_does_not_know_is_a_dead_letter_naming_it():
    s = _settings()
    intake = IntakeHandler(s)
    raw = _serializer(intake, "avro")(_records(1)[0][1], CTX)
    unknown = raw[:1] + (4242).to_bytes(4, "big") + raw[5:]
    (out,) = intake.on_message(unknown, b"a1", Source(TOPIC, 2, 9))
    letter = orjson.loads(out.value)
    assert (out.topic, letter["reason"], letter["stage"]) == ("dead-letters", "schema", "intake")
    assert "the schema registry does not know schema id 4242" in letter["error"]
    assert f"{TOPIC}[2]@9" in letter["error"]


def test_bytes_the_schema_cannot_read_are_a_malformed_dead_letter():
    intake = IntakeHandler(_settings())
    raw = _serializer(intake, "avro")(_records(1)[0][1], CTX)
    (out,) = intake.on_message(raw[:8], b"a1", Source(TOPIC, 0, 3))
    letter = orjson.loads(out.value)
    assert letter["reason"] == "malformed" and "does not decode with schema id" in letter["error"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_registry_holds_the_records_back_until_it_answers(caplog, monkeypatch):
    """Records wait while the registry refuses connections (never dropped, never dead-lettered),
    one WARNING line for the outage, each attempt counted; once it answers they go to arrivals."""
    monkeypatch.setattr(registry, "FIRST_DELAY_S", 0.01)  # the waits of the test: 10, 20, 40 ms
    mock = _settings()
    source_client = IntakeHandler(mock).sources.registry.client
    ser = AvroSerializer(source_client, AVRO)
    raws = [ser(rec, CTX) for _, rec in _records(3)]
    s = _settings(schema_registry_url=f"http://127.0.0.1:{_closed_port()}")
    metrics = Metrics()
    intake = IntakeHandler(s, metrics)
    fetched = [(None, Record(TOPIC, 0, off, b"a1", raw, None, [])) for off, raw in enumerate(raws)]

    class Producer:
        sent: list = []

        async def send(self, topic, key, value, partition, timestamp, headers):
            self.sent.append((topic, key, value, headers))
            fut = asyncio.get_running_loop().create_future()
            fut.set_result(None)
            return fut

    async def answers_after_three_attempts():
        while metrics.get("registry_unreachable") < 3:
            await asyncio.sleep(0.05)
        intake.sources.registry.client = source_client  # the registry is back
        intake.sources.registry._deserializers.clear()

    async def run():
        task = asyncio.create_task(answers_after_three_attempts())
        await asyncio.wait_for(forward_fetched(fetched, handler=intake, outbox=Outbox(Producer(), s, metrics),
                                               stage="intake", batch=10), timeout=20)
        await task

    with caplog.at_level(logging.INFO, logger="streamxai"):
        asyncio.run(run())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "the schema registry does not answer (ConnectError" in warnings[0]
    attempts = metrics.get("registry_unreachable")
    assert attempts >= 3 and f"the schema registry answers again after {attempts} failed attempts" in caplog.text
    # the records, in their order, each forwarded as the JSON object it decodes to
    assert [(topic, key) for topic, key, _, _ in Producer.sent] == [(s.topic("arrivals"), b"payments:a1")] * len(raws)
    assert [orjson.loads(value) for _, _, value, _ in Producer.sent] == [rec for _, rec in _records(3)]
    assert metrics.get("dead_letters") == 0


def test_one_attempt_at_an_unreachable_registry_is_bounded_and_names_the_wait():
    s = _settings(schema_registry_url=f"http://127.0.0.1:{_closed_port()}")
    intake = IntakeHandler(s)
    raw = b"\x00" + (1).to_bytes(4, "big") + b"\x02a"
    delays = []
    for _ in range(3):
        with pytest.raises(RegistryUnreachable) as e:
            intake.on_message(raw, b"a1", Source(TOPIC, 0, 0))
        delays.append(e.value.delay)
    assert delays == [0.5, 1.0, 2.0] and "trying again in 2 s" in str(e.value)


def test_a_registry_format_without_the_extra_is_refused_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "fastavro", None)  # as if it were not installed
    with pytest.raises(ConfigError) as e:
        _settings()
    assert str(e.value) == ("[sources.payments] format = 'avro' needs the schema registry client, which is not "
                            "installed: pip install 'streamxai[registry]'")
    _settings("json_schema")  # its modules are there


def test_a_registry_format_needs_the_registry_url():
    with pytest.raises(ConfigError, match=r"\[sources.payments\] format = 'avro' needs the setting schema_registry_url"):
        _settings(schema_registry_url="")
    with pytest.raises(ConfigError, match="write the registry's http:// or https:// URL"):
        _settings(schema_registry_url="registry:8081")


def test_the_registry_password_never_shows(tmp_path, caplog):
    s = _settings(schema_registry_username="team", schema_registry_password="hunter2-secret",
                  schema_registry_url=f"http://127.0.0.1:{_closed_port()}")
    assert "hunter2-secret" not in repr(s) and "hunter2-secret" not in str(s.public_dict())
    intake = IntakeHandler(s)
    with caplog.at_level(logging.INFO, logger="streamxai"), pytest.raises(RegistryUnreachable) as e:
        intake.on_message(b"\x00\x00\x00\x00\x01\x02a", b"a1", Source(TOPIC, 0, 0))
    assert "hunter2-secret" not in str(e.value) and "hunter2-secret" not in caplog.text
    assert isinstance(intake.sources.registry.client, SchemaRegistryClient)


def test_avro_decimals_and_timestamps_map_as_numbers_and_times():
    s = Settings(sources={"p": {"topic": "t", "kind": "features", "format": "avro", "features": ["price"],
                                "stream_id": "key", "event_id": "id", "event_time": "ts"}},
                 features=["price"], schema_registry_url="mock://registry-test")
    intake = IntakeHandler(s)
    schema = orjson.dumps({"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "string"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}).decode()
    rec = {"id": "a", "price": decimal.Decimal("3.25"), "ts": datetime.datetime(2024, 5, 1, 10, tzinfo=datetime.UTC)}
    raw = AvroSerializer(intake.sources.registry.client, schema)(rec, SerializationContext("t", MessageField.VALUE))
    (out,) = intake.on_message(raw, b"k", Source("t", 0, 0))
    assert orjson.loads(out.value) == {"id": "a", "price": 3.25, "ts": "2024-05-01T10:00:00+00:00"}
    (pred,) = [orjson.loads(o.value) for o in ModelHandler(s).on_message(out.value, out.key, Source(
        "arrivals", 0, 0, headers=out.headers)) if o.topic == "predictions"]
    assert (pred["stream_id"], pred["ts"], pred["event_id"]) == ("p:k", 1714557600.0, "a")
