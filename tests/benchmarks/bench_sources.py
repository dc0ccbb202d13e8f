"""What reading a team's own format costs: CPU per event of a mapped JSON source (nested records
keyed by account, numbered by the model handler) and of the same records in Avro and in Protobuf
(the message class of ``tests/helpers/payments_proto.py``, without the account field it lacks),
framed by a schema registry (confluent_kafka's in-memory registry, ``mock://``; the schema cached
before the timing), next to the own envelope (feature_event/v1 with seq), the same events measured
in the same run. Run on demand:

    python tests/benchmarks/bench_sources.py [--events 3000] [--repeats 5]

Two levels, each timed over the same events four ways, the order of the four turning round by
round, the median of ``--repeats`` rounds:

- ``parse``: bytes to a validated feature event (:func:`streamxai.ingest.mapping.map_record`;
  for Avro and Protobuf the intake's decode first, to the JSON it forwards; against
  :func:`streamxai.schemas.parse_arrival`);
- ``intake + model``: the intake's forward (for Avro and Protobuf: its decode) and the model handler's whole
  step (parse, number, predict, learn, explain tasks) with a Hoeffding tree on 3 features.

It prints the CPU microseconds per event of each and their ratios to the own envelope. Avro and
Protobuf need the extra ``streamxai[registry]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # helpers.payments_proto

import orjson  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from helpers.payments_proto import Payment  # noqa: E402
from streamxai.handlers import ModelHandler, Source  # noqa: E402
from streamxai.handlers.intake import IntakeHandler  # noqa: E402
from streamxai.ingest.mapping import map_record  # noqa: E402
from streamxai.schemas import FeatureEvent, dumps, parse_arrival  # noqa: E402
from streamxai.settings import Settings  # noqa: E402

FEATURES = ["amount", "merchant.risk", "merchant.country"]
TOPIC = "team.payments"
AVRO = orjson.dumps({"type": "record", "name": "Payment", "fields": [
    {"name": "txn_id", "type": "string"}, {"name": "account", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "merchant", "type": {"type": "record", "name": "Merchant", "fields": [
        {"name": "risk", "type": "double"}, {"name": "country", "type": "string"}]}},
    {"name": "event_time", "type": "long"}, {"name": "fraud", "type": "int"}]}).decode()


def settings(fmt: str = "json") -> Settings:
    source = {"topic": TOPIC, "kind": "features", "format": fmt, "features": FEATURES, "stream_id": "key",
              "event_id": "txn_id", "event_time": "event_time", "label": "fraud", "profile": "payments:*"}
    if fmt == "protobuf":
        source["protobuf_message"] = "helpers.payments_proto:Payment"
    profile = {"features": FEATURES, "categorical": ["merchant.country"], "model_params": {"grace_period": 50},
               "explainers": ["ipfi"]}
    return Settings(features=FEATURES, categorical=["merchant.country"], sources={"payments": source},
                    streams={"payments:*": profile}, partitions=1, checkpoint_every=0,
                    schema_registry_url="mock://bench" if fmt != "json" else "")


def framed_records(intake: IntakeHandler, team, fmt: str) -> list[tuple[bytes, bytes]]:
    """The team's records in Avro or Protobuf, registered with ``intake``'s registry, whose schema
    ``intake`` then caches."""
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    if fmt == "avro":
        ser = AvroSerializer(intake.sources.registry.client, AVRO)
        out = [(k, ser(orjson.loads(v), ctx)) for k, v in team]
    else:
        ser = ProtobufSerializer(Payment, intake.sources.registry.client, {})
        out = [(k, ser(Payment(**{f: x for f, x in orjson.loads(v).items() if f != "account"}), ctx))
               for k, v in team]
    intake.on_message(out[0][1], out[0][0], Source(TOPIC, 0, 0))  # the schema fetched once, then cached
    return out


def inputs(n: int) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    """The same events as team records ``(account, record)`` and as own envelopes ``(stream id, event)``."""
    team, own, seqs = [], [], {}
    for i in range(n):
        acc = f"acct-{i % 4}"
        risk, amount = (i * 37 % 11) / 10, 5.0 + i * 13 % 17
        rec = {"txn_id": f"t{i:08d}", "account": acc, "amount": amount,
               "merchant": {"risk": risk, "country": ["DE", "FR", "NL"][i % 3]},
               "event_time": 1_700_000_000 + i, "fraud": int(risk > 0.6)}
        team.append((acc.encode(), orjson.dumps(rec)))
        sid = f"payments:{acc}"
        seqs[sid] = seqs.get(sid, -1) + 1
        ev = FeatureEvent(sid, seqs[sid], float(rec["event_time"]),
                          {"amount": amount, "merchant.risk": risk, "merchant.country": rec["merchant"]["country"]},
                          rec["fraud"])
        own.append((sid.encode(), dumps(ev)))
    return team, own


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def parse_team(s: Settings, team) -> None:
    spec = s.source_specs["payments"]
    for i, (k, v) in enumerate(team):
        map_record(spec, v, k, None, s.stream_feature_spec, where=f"{TOPIC}[0]@{i}")


def parse_framed(s: Settings, intake: IntakeHandler, team) -> None:
    spec = s.source_specs["payments"]
    for i, (k, v) in enumerate(team):
        src = Source(TOPIC, 0, i)
        _, forwarded = intake.sources._record(spec, v, src)
        map_record(spec, forwarded, k, None, s.stream_feature_spec, where=str(src))


def parse_own(s: Settings, own) -> None:
    for i, (_, v) in enumerate(own):
        parse_arrival(v, s.stream_feature_spec, where=f"features[0]@{i}")


def run_path(s: Settings, records, topic: str, intake: IntakeHandler | None = None) -> None:
    intake, model = intake or IntakeHandler(s), ModelHandler(s)
    for i, (k, v) in enumerate(records):
        for out in intake.on_message(v, k, Source(topic, 0, i, timestamp=1.0)):
            model.on_message(out.value, out.key, Source("streamxai.arrivals", 0, i, timestamp=1.0, headers=out.headers))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    s, sa, sp = settings(), settings("avro"), settings("protobuf")
    team, own = inputs(args.events)
    avro_intake, proto_intake = IntakeHandler(sa), IntakeHandler(sp)
    avro, proto = framed_records(avro_intake, team, "avro"), framed_records(proto_intake, team, "protobuf")
    levels = {
        "parse": (lambda: parse_team(s, team), lambda: parse_framed(sa, avro_intake, avro),
                  lambda: parse_framed(sp, proto_intake, proto), lambda: parse_own(s, own)),
        "intake + model": (lambda: run_path(s, team, TOPIC), lambda: run_path(sa, avro, TOPIC, avro_intake),
                           lambda: run_path(sp, proto, TOPIC, proto_intake),
                           lambda: run_path(s, own, s.topic("features"))),
    }
    print(f"{args.events} events of 4 accounts, median of {args.repeats} rounds (CPU us per event)")
    print(f"{'level':<16}{'json':>10}{'avro':>10}{'protobuf':>10}{'own':>10}{'json/own':>10}{'avro/own':>10}"
          f"{'proto/own':>10}")
    for name, fns in levels.items():
        times: list[list[float]] = [[], [], [], []]
        for r in range(args.repeats):
            for j in (r + k for k in range(4)):  # each of the four goes first in turn
                times[j % 4].append(cpu(fns[j % 4]) / args.events * 1e6)
        js, av, pb, ow = (statistics.median(x) for x in times)
        print(f"{name:<16}{js:>10.1f}{av:>10.1f}{pb:>10.1f}{ow:>10.1f}{js / ow:>10.2f}{av / ow:>10.2f}{pb / ow:>10.2f}")


if __name__ == "__main__":
    main()
