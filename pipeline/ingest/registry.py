"""Records framed by a schema registry: the ``avro``, ``json_schema`` and ``protobuf`` formats of a source.

A record of such a source is in the Confluent wire format (magic byte 0, 4-byte schema id, the
encoded value). :class:`RegistryDecoder` decodes it through ``confluent_kafka.schema_registry``
(the extra ``streamxai[registry]``) into a dict, mapped like a JSON record; a bad record is an
:class:`~streamxai.schemas.InvalidMessage`. A registry that does not answer raises
:class:`RegistryUnreachable` instead: the agent waits :attr:`RegistryUnreachable.delay` seconds
and tries the record again, so nothing is dropped or dead-lettered.
>>> from streamxai.settings import Settings
>>> s = Settings(schema_registry_url="mock://doc", sources={"pay": {"topic": "t", "kind": "labels",
...     "format": "avro", "event_id": "txn_id", "label": "fraud"}})
>>> dec = RegistryDecoder(s.schema_registry_url)
>>> from confluent_kafka.schema_registry.avro import AvroSerializer
>>> from confluent_kafka.serialization import MessageField, SerializationContext
>>> schema = '{"type": "record", "name": "L", "fields": [{"name": "txn_id", "type": "string"}, {"name": "fraud", "type": "int"}]}'
>>> raw = AvroSerializer(dec.client, schema)({"txn_id": "a81f", "fraud": 1}, SerializationContext("t", MessageField.VALUE))
>>> dec.decode(s.source_specs["pay"], raw, where="t[0]@3")
{'txn_id': 'a81f', 'fraud': 1}
>>> dec.decode(s.source_specs["pay"], b'{"txn_id": "a81f"}', where="t[0]@4")
Traceback (most recent call last):
...
streamxai.schemas.errors.SchemaMismatch: t[0]@4: source 'pay' (format = "avro"): the record is not registry-framed: its first byte is 0x7b, not the magic byte 0x00 of the Confluent wire format; produce it with a schema registry serializer (e.g. confluent_kafka's AvroSerializer)
"""

from __future__ import annotations

import importlib.util
import logging
from typing import TYPE_CHECKING, Any

from streamxai.schemas import ConfigError, MalformedMessage, SchemaMismatch, StreamxaiError

if TYPE_CHECKING:  # pragma: no cover - for annotations only
    from collections.abc import Iterable

    from ..metrics import Metrics
    from ..sources import SourceSpec

__all__ = ["RegistryDecoder", "RegistryUnreachable", "REGISTRY_FORMATS", "INSTALL", "check_registry",
           "registry_installed"]

#: the source formats framed by a schema registry
REGISTRY_FORMATS = ("avro", "json_schema", "protobuf")
#: what installs what these formats need
INSTALL = "pip install 'streamxai[registry]'"
#: how long one request to the registry may take, in seconds (one attempt; the agent tries again)
REQUEST_TIMEOUT_S = 5.0
#: the first and the longest wait between two attempts at a record while the registry does not answer
FIRST_DELAY_S, MAX_DELAY_S = 0.5, 30.0

log = logging.getLogger("streamxai")
#: the serializer of confluent_kafka that writes each format, named where a record is not framed
_SERIALIZERS = {"avro": "AvroSerializer", "json_schema": "JSONSerializer", "protobuf": "ProtobufSerializer"}
_MODULES = {"avro": ("confluent_kafka.schema_registry", "fastavro", "authlib", "cachetools", "attrs"),
            "json_schema": ("confluent_kafka.schema_registry", "jsonschema", "referencing", "authlib", "cachetools",
                            "attrs"),
            "protobuf": ("confluent_kafka.schema_registry", "google.protobuf", "google.type", "authlib", "cachetools",
                         "attrs")}


class RegistryUnreachable(StreamxaiError):
    """The schema registry did not answer for one record; try the record again after ``delay`` seconds."""

    def __init__(self, message: str, *, delay: float):
        self.delay = delay
        super().__init__(message)


def registry_installed(fmt: str) -> bool:
    """Whether the packages that decode ``fmt`` are installed (the extra ``streamxai[registry]``)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in _MODULES[fmt])
    except ModuleNotFoundError:  # a parent package missing
        return False


def check_registry(specs: Iterable[SourceSpec], url: str) -> None:
    """The registry-framed ones of the sources ``specs`` can work: the extra is installed and a
    registry ``url`` (the setting ``schema_registry_url``) is given, and a ``protobuf`` source's
    message class imports; a :class:`ConfigError` in one line saying what to do."""
    for spec in specs:
        if spec.format not in REGISTRY_FORMATS:
            continue
        where = f"[sources.{spec.name}] format = {spec.format!r}"
        if not registry_installed(spec.format):
            raise ConfigError(f"{where} needs the schema registry client, which is not installed: {INSTALL}")
        if not url:
            raise ConfigError(f"{where} needs the setting schema_registry_url, e.g. schema_registry_url = "
                              "\"http://registry:8081\"")
        if spec.format == "protobuf":
            from .protobuf import message_class

            message_class(spec.name, spec.protobuf_message or "")
    if url and not url.startswith(("http://", "https://", "mock://")):
        raise ConfigError(f"setting schema_registry_url={url!r}: write the registry's http:// or https:// URL "
                          "(several: comma-separated)")


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP client's errors that mean no answer came (refused, reset, timeout, DNS, TLS)."""
    found = []
    for name in ("httpx2", "httpx"):  # confluent_kafka's HTTP client, by version
        if importlib.util.find_spec(name) is not None:
            found.append(importlib.import_module(name).TransportError)
    return tuple(found)


class RegistryDecoder:
    """Decodes registry-framed records with the registry at ``url`` (the settings
    ``schema_registry_*``); ``client`` is the registry client (``mock://...`` URLs give
    confluent_kafka's in-memory registry, for tests)."""

    def __init__(self, url: str, *, username: str = "", password: str = "", cafile: str = "",
                 metrics: Metrics | None = None):
        from confluent_kafka.schema_registry import SchemaRegistryClient

        conf: dict[str, Any] = {"url": url, "timeout": REQUEST_TIMEOUT_S,
                                "max.retries": 0}  # one bounded attempt; the agent waits and tries again
        if username:
            conf["basic.auth.user.info"] = f"{username}:{password}"
        if cafile:
            conf["ssl.ca.location"] = cafile
        self.client = SchemaRegistryClient.new_client(conf)
        self.metrics = metrics
        self._deserializers: dict[str, Any] = {}
        self._unreachable = _transport_errors()
        self._failures = 0  # failed attempts since the registry last answered

    def decode(self, spec: SourceSpec, raw: bytes | None, *, where: str) -> Any:
        """The record ``raw`` of source ``spec`` decoded with the schema its id names."""
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        from confluent_kafka.serialization import MessageField, SerializationContext

        what = f"source {spec.name!r} (format = \"{spec.format}\")"
        if not raw or len(raw) < 5 or raw[0] != 0:
            first = "it is empty" if not raw else (f"its first byte is 0x{raw[0]:02x}, not the magic byte 0x00 of the "
                                                   "Confluent wire format" if raw[0] != 0 else
                                                   f"it has {len(raw)} bytes, fewer than the 5 of the wire format's "
                                                   "header")
            raise SchemaMismatch(f"{what}: the record is not registry-framed: {first}; produce it with a schema "
                                 f"registry serializer (e.g. confluent_kafka's {_SERIALIZERS[spec.format]})",
                                 where=where)
        schema_id = int.from_bytes(raw[1:5], "big")
        deserialize = self._deserializer(spec)
        try:
            rec = deserialize(raw, SerializationContext(spec.topic, MessageField.VALUE))
        except SchemaRegistryError as e:
            if e.http_status_code == 404:
                self._answered()
                raise SchemaMismatch(f"{what}: the schema registry does not know schema id {schema_id} (the "
                                     f"record's header names it); register the producer's schema in the registry "
                                     f"at schema_registry_url, or read the topic with the registry it was written "
                                     f"with", where=where) from None
            raise self._failed(f"the registry answered HTTP {e.http_status_code} ({e.error_message})") from None
        except self._unreachable as e:
            raise self._failed(f"{type(e).__name__}: {e}") from None
        except Exception as e:  # the bytes do not read with the schema: truncated, or another schema's
            self._answered()
            raise MalformedMessage(f"{what}: the record does not decode with schema id {schema_id}: "
                                   f"{type(e).__name__}: {str(e)[:200]}", where=where) from None
        self._answered()
        if spec.format == "protobuf":
            from .protobuf import to_record

            return to_record(rec)
        return rec

    def _deserializer(self, spec: SourceSpec) -> Any:
        fmt = spec.format
        cache_key = f"protobuf:{spec.protobuf_message}" if fmt == "protobuf" else fmt
        found = self._deserializers.get(cache_key)
        if found is None:
            if fmt == "protobuf":  # the writer's schema by the id in the header; the fields by the team's class
                from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

                from .protobuf import message_class

                found = ProtobufDeserializer(message_class(spec.name, spec.protobuf_message or ""), {},
                                             schema_registry_client=self.client)
            elif fmt == "avro":
                from confluent_kafka.schema_registry.avro import AvroDeserializer

                found = AvroDeserializer(self.client)
            else:  # no schema of its own: the writer's, by the id in the record's header
                from confluent_kafka.schema_registry.json_schema import JSONDeserializer

                found = JSONDeserializer(None, schema_registry_client=self.client)
            self._deserializers[cache_key] = found
        return found

    def _failed(self, why: str) -> RegistryUnreachable:
        """One failed attempt: counted, logged once per outage, and the wait before the next."""
        if self.metrics is not None:
            self.metrics.inc("registry_unreachable")
        if self._failures == 0:
            log.warning("the schema registry does not answer (%s); the records of registry-framed sources wait "
                        "and are tried again until it does (count: streamxai_registry_unreachable_total)", why[:300])
        delay = min(FIRST_DELAY_S * 2 ** min(self._failures, 16), MAX_DELAY_S)
        self._failures += 1
        return RegistryUnreachable(f"the schema registry does not answer ({why[:300]}); trying again in {delay:g} s",
                                   delay=delay)

    def _answered(self) -> None:
        if self._failures:
            log.info("the schema registry answers again after %d failed attempts", self._failures)
            self._failures = 0
