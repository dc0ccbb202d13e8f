"""A worker at --loglevel debug never logs what SASL sends (the PLAIN password, SCRAM's salt, nonces and proof)."""

from __future__ import annotations

import io
import logging

import pytest
from aiokafka.protocol.admin import SaslAuthenticateRequest_v1, SaslAuthenticateResponse_v1
from streamxai.kafka.outage import install_outage_filter


@pytest.fixture
def debug_log():
    conn = logging.getLogger("aiokafka.conn")
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    level = conn.level
    loggers = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict)
               if n.startswith(("aiokafka", "faust"))] + [conn]
    filters = {lg: list(lg.filters) for lg in loggers}  # the worker's filters go on all of them
    conn.addHandler(handler)
    conn.setLevel(logging.DEBUG)
    yield conn, out
    conn.removeHandler(handler)
    conn.setLevel(level)
    for name in list(logging.root.manager.loggerDict):  # also the loggers its imports made
        lg = logging.getLogger(name)
        if name.startswith(("aiokafka", "faust")):
            lg.filters[:] = filters.get(lg, [])


def test_the_workers_log_filters_keep_sasl_bytes_out_of_the_debug_log(debug_log):
    conn, out = debug_log
    install_outage_filter()  # what a worker installs on the Kafka client's loggers at start
    plain = SaslAuthenticateRequest_v1(b"\x00worker\x00pl4in-pa55word")
    scram = SaslAuthenticateRequest_v1(b"c=biws,r=nonce1234,p=Q2xpZW50UHJvb2Y=")
    server = SaslAuthenticateResponse_v1(0, "", b"r=nonce1234abcd,s=c2FsdA==,i=4096", 0)
    # exactly as aiokafka.conn logs them
    conn.debug("Request to %s:%d %d: %s", "127.0.0.1", 9092, 3, plain)
    conn.debug("Request to %s:%d %d: %s", "127.0.0.1", 9092, 4, scram)
    conn.debug("Response from %s:%d %d: %s", "127.0.0.1", 9092, 4, server)
    conn.debug("Request to %s:%d %d: %s", "127.0.0.1", 9092, 5, "MetadataRequest_v0(topics=[])")
    text = out.getvalue()
    for secret in ("pl4in-pa55word", "Q2xpZW50UHJvb2Y", "nonce1234", "c2FsdA"):
        assert secret not in text, text
    lines = text.splitlines()
    assert len(lines) == 4  # still logged, without the bytes: the exchange can still be followed
    assert "SaslAuthenticateRequest_v1" in lines[0] and "not logged" in lines[0]
    assert lines[3].endswith("MetadataRequest_v0(topics=[])")
