"""The worker's changes to Faust's driver keep what Faust hands the agents."""

from __future__ import annotations

import asyncio

import faust
import pytest
from faust.types import Message

from pipeline.kafka.faust_transport import RawSchema


@pytest.mark.parametrize(("key", "value"), [(b"s1", b'{"x": 1}'), (None, b"\xff\x00"), (b"s1", None), (b"", b"")])
def test_raw_schema_decodes_as_faust_raw_codec(key, value):
    """The agents' topics once used Faust's "raw" codec; the raw schema must give the same key and
    value for every record (bytes, empty, absent), or handlers would see other input."""
    app = faust.App("raw-schema-test", broker="kafka://127.0.0.1:9")
    codec = faust.Schema(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
    msg = Message("t", 0, 7, 0.0, 0, [("origin", b"f")], key, value, None)
    ours, faust_s = (asyncio.run(schema.decode(app, msg, propagate=True)) for schema in (RawSchema(), codec))
    assert (ours.key, ours.value, ours.headers) == (faust_s.key, faust_s.value, faust_s.headers)
    assert (ours.key, ours.value) == (key, value)
