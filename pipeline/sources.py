"""Sources: a team's own topics, read in the team's own record format (``[sources.<name>]`` tables).

A source names its topic, whether it carries features or labels, and where in each record the
features, stream id, event id, event time and label are (field names or dotted paths). A
source's stream id is ``<source name>:<id found in the record>``, so a profile's glob reads
``"<source name>:*"``. :func:`check_sources` validates the tables when the settings load.

>>> s = {"payments": {"topic": "team.payments", "kind": "features", "format": "json",
...                   "features": ["amount", "merchant.mcc"], "stream_id": "key", "event_id": "txn_id",
...                   "event_time": "event_time", "profile": "payments:*"}}
>>> spec = parse_sources(s, {"payments:*": {"features": ["amount", "merchant.mcc"], "categorical": ["merchant.mcc"]}})["payments"]
>>> spec.stream_of(b"acct-1", {}), spec.paths["merchant.mcc"]
('payments:acct-1', ('merchant', 'mcc'))
>>> parse_sources({"p": {**s["payments"], "kind": "feature"}}, {})
Traceback (most recent call last):
...
streamxai.schemas.errors.ConfigError: [sources.p] kind = 'feature': write kind = "features" (events with their features) or kind = "labels" (labels joined by event_id)
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamxai.schemas import ConfigError

__all__ = ["SourceSpec", "parse_sources", "KINDS", "FORMATS", "RECORD_KEY", "RECORD_TIMESTAMP"]

KINDS = ("features", "labels")
#: the record formats a source may name: JSON, or framed by a schema registry (streamxai.ingest.registry)
FORMATS = ("json", "avro", "json_schema", "protobuf")
#: ``stream_id = "key"``: the stream id is the record's key
RECORD_KEY = "key"
#: ``event_time = "timestamp"``: the event time is the record's timestamp
RECORD_TIMESTAMP = "timestamp"

_NAME = re.compile(r"[A-Za-z0-9_.@+=~-]{1,64}")
_PATH = re.compile(r"[^.\s]+(\.[^.\s]+)*")
_FIELDS = {"topic", "kind", "format", "features", "stream_id", "event_id", "event_time", "label", "profile",
           "protobuf_message"}


@dataclass(frozen=True)
class SourceSpec:
    """One validated ``[sources.<name>]`` table; ``paths`` splits each feature's dotted path;
    ``protobuf_message`` is the ``"module:Class"`` of a ``protobuf`` source's messages."""

    name: str
    topic: str
    kind: str
    format: str
    features: tuple[str, ...]
    stream_id: str
    event_id: str
    event_time: str
    label: str | None
    profile: str | None
    protobuf_message: str | None = None

    @property
    def paths(self) -> dict[str, tuple[str, ...]]:
        return {f: tuple(f.split(".")) for f in self.features}

    def stream_of(self, key: bytes | None, record: Mapping[str, Any]) -> str:
        """The stream id of a record of this source, before it is checked: ``<name>:<id>``
        (``KeyError`` or ``TypeError`` when the record has no such id; :mod:`streamxai.ingest.mapping`
        turns those into dead letters)."""
        if self.stream_id == RECORD_KEY:
            if key is None:
                raise KeyError("key")
            return f"{self.name}:{key.decode('utf-8')}"
        v = record
        for part in self.stream_id.split("."):
            v = v[part]  # type: ignore[index,assignment]
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise TypeError(self.stream_id)
        return f"{self.name}:{v}"


def parse_sources(tables: Any, profiles: Mapping[str, Any]) -> dict[str, SourceSpec]:
    """The validated sources of the setting ``sources`` (``{name: table}``), against the stream
    profiles ``profiles`` (``{glob: table}``); a :class:`ConfigError` naming the source, the field
    and what to write instead."""
    if not isinstance(tables, dict):
        raise ConfigError(f"setting sources must be a table of [sources.<name>] tables, not {type(tables).__name__}")
    out: dict[str, SourceSpec] = {}
    topics: dict[str, str] = {}
    for name, table in tables.items():
        spec = _one(str(name), table, profiles)
        if spec.topic in topics:
            raise ConfigError(f"[sources.{name}] topic = {spec.topic!r} is the topic of [sources.{topics[spec.topic]}] "
                              "too; give each source its own topic")
        topics[spec.topic] = spec.name
        out[spec.name] = spec
    return out


def _one(name: str, table: Any, profiles: Mapping[str, Any]) -> SourceSpec:
    where = f"[sources.{name}]"

    def bad(field: str, msg: str) -> ConfigError:
        shown = repr(table.get(field)) if isinstance(table, dict) and field in table else "missing"
        return ConfigError(f"{where} {field} = {shown}: {msg}" if shown != "missing" else f"{where} {field} is missing: {msg}")

    if not _NAME.fullmatch(name):
        raise ConfigError(f"{where}: a source's name may use only A-Z a-z 0-9 _ - . @ + = ~ (up to 64 characters), "
                          "e.g. [sources.payments]; it begins the stream ids of its streams")
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table (topic, kind, format, features, ...), not {type(table).__name__}")
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {unknown}; a source has {', '.join(sorted(_FIELDS))}")
    topic = table.get("topic")
    if not isinstance(topic, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", topic):
        raise bad("topic", "write the Kafka topic the records are on, e.g. topic = \"payments.v1\"")
    kind = table.get("kind")
    if kind not in KINDS:
        raise bad("kind", "write kind = \"features\" (events with their features) or kind = \"labels\" "
                          "(labels joined by event_id)")
    fmt = table.get("format", "json")
    if fmt not in FORMATS:
        raise bad("format", "write format = \"json\", or \"avro\", \"json_schema\" or \"protobuf\" for records "
                            "framed by a schema registry (schema_registry_url)")
    message = table.get("protobuf_message")
    if fmt == "protobuf" and (not isinstance(message, str) or ":" not in message):
        raise bad("protobuf_message", "format = \"protobuf\" needs the message class protoc generated for the "
                                      "topic, as module:Class importable by the workers, e.g. "
                                      "protobuf_message = \"payments_pb2:Payment\"")
    if fmt != "protobuf" and message is not None:
        raise bad("protobuf_message", f"only a source of format = \"protobuf\" names a message class (this one is "
                                      f"format = {fmt!r}): leave it out")
    if kind == "labels":
        return _labels(name, table, bad)
    features = table.get("features")
    if not isinstance(features, list) or not features or not all(isinstance(f, str) and _PATH.fullmatch(f)
                                                                  for f in features):
        raise bad("features", "write the field names or dotted paths of the features, e.g. "
                              "features = [\"amount\", \"merchant.mcc\"]")
    if len(set(features)) != len(features):
        raise bad("features", "name each feature once")
    stream_id = table.get("stream_id")
    if not isinstance(stream_id, str) or not _PATH.fullmatch(stream_id):
        raise bad("stream_id", "write stream_id = \"key\" (the record key) or the path of the field that holds "
                               "it, e.g. stream_id = \"account\"")
    paths = {}
    for field in ("event_id", "event_time", "label"):
        v = table.get(field)
        if v is None and field == "label":
            paths[field] = None
            continue
        if not isinstance(v, str) or not _PATH.fullmatch(v):
            example = {"event_id": "txn_id", "event_time": "event_time\" (or \"timestamp\" for the record's timestamp)",
                       "label": "fraud"}[field]
            raise bad(field, f"write the path of the field, e.g. {field} = \"{example}\"")
        paths[field] = v
    profile = table.get("profile")
    if profile is not None:
        _check_profile(where, name, profile, features, profiles)
    return SourceSpec(name, topic, kind, fmt, tuple(features), stream_id, paths["event_id"],  # type: ignore[arg-type]
                      paths["event_time"], paths["label"], profile, message)  # type: ignore[arg-type]


def _labels(name: str, table: dict[str, Any], bad: Any) -> SourceSpec:
    """A labels source: its labels are joined to their events by ``event_id`` alone."""
    for field in ("features", "stream_id", "event_time", "profile"):
        if field in table:
            raise bad(field, "a labels source has no " + field + "; its labels find their events (and their streams) "
                             "by event_id: leave it out")
    for field, example in (("event_id", "txn_id"), ("label", "fraud")):
        v = table.get(field)
        if not isinstance(v, str) or not _PATH.fullmatch(v):
            raise bad(field, f"write the path of the field, e.g. {field} = \"{example}\"")
    return SourceSpec(name, table["topic"], "labels", table.get("format", "json"), (), "", table["event_id"], "",
                      table["label"], None, table.get("protobuf_message"))


def _check_profile(where: str, name: str, profile: Any, features: list[str], profiles: Mapping[str, Any]) -> None:
    """The profile a source names exists, is the one its streams fall under, and lists its features."""
    if not isinstance(profile, str) or profile not in profiles:
        raise ConfigError(f"{where} profile = {profile!r}: no [streams.{profile!r}] table; write the glob of a stream "
                          f"profile, e.g. profile = \"{name}:*\" with a [streams.\"{name}:*\"] table")
    # the streams of the source are "<name>:<id>": the first profile whose glob takes them all must be this one
    first = next((g for g in profiles if fnmatch.fnmatchcase(f"{name}:*", g)), None)
    if first != profile:
        raise ConfigError(f"{where} profile = {profile!r}: the streams of this source are named \"{name}:<id>\", "
                          f"which the profile {first!r} takes first; write profile = \"{name}:*\" and put the table "
                          f"[streams.\"{name}:*\"] before the others" if first else
                          f"{where} profile = {profile!r} does not match every stream of this source (\"{name}:<id>\"); "
                          f"write profile = \"{name}:*\" with a [streams.\"{name}:*\"] table")
    table = profiles[profile]
    listed = table.get("features") if isinstance(table, dict) else None
    if listed is not None and set(listed) != set(features):
        raise ConfigError(f"{where} features = {features!r}: the profile {profile!r} lists features {listed!r}; "
                          "make them the same names (the paths, e.g. \"merchant.mcc\")")
