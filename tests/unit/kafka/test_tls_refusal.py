"""A refused TLS handshake in one line that names the file to change, and hostname verification on
in both Kafka clients (the end-to-end check is tests/integration/test_tls_on_broker.py)."""

from __future__ import annotations

import pytest
from streamxai.kafka.config import confluent_config
from streamxai.kafka.tls_refusal import handshake_failure
from streamxai.settings import Secret, Settings

S = Settings(bootstrap_servers="kafka-1:9093", security_protocol="SSL", ssl_cafile="/tls/ca.pem",
             ssl_certfile="/tls/me.pem", ssl_keyfile="/tls/me.key", ssl_key_password=Secret("k3y-pw"))
PREFIX = "ssl://kafka-1:9093/bootstrap: SSL handshake failed: "


@pytest.mark.parametrize("reason, expected", [
    ("error:0A000086:SSL routines::certificate verify failed: broker certificate could not be verified, verify "
     "that ssl.ca.location is correctly configured or root CA certificates are installed (after 3ms in state "
     "SSL_HANDSHAKE)",
     "the certificate of the broker at kafka-1:9093 does not verify against ssl_cafile='/tls/ca.pem' (certificate "
     "verify failed: signed by another CA, expired, or not issued for the host in bootstrap_servers); set "
     "ssl_cafile to the CA bundle that signed the brokers' certificates"),
    ("error:0A000415:SSL routines::sslv3 alert certificate expired: SSL alert number 45 (after 4ms in state "
     "SSL_HANDSHAKE)",
     "the broker at kafka-1:9093 refused the client certificate ssl_certfile='/tls/me.pem': certificate expired "
     "(TLS alert 45); give a current certificate signed by a CA the broker trusts (the broker's log says which check failed)"),
    ("error:0A000418:SSL routines::tlsv1 alert unknown ca: SSL alert number 48",
     "the broker at kafka-1:9093 refused the client certificate ssl_certfile='/tls/me.pem': unknown ca (TLS alert "
     "48); give a current certificate signed by a CA the broker trusts (the broker's log says which check failed)"),
    ("Receive failed: error:0A000416:SSL routines::ssl/tls alert certificate unknown: SSL alert number 46 (after 6ms "
     "in state APIVERSION_QUERY)",
     "the broker at kafka-1:9093 refused the client certificate ssl_certfile='/tls/me.pem': certificate unknown "
     "(TLS alert 46); give a current certificate signed by a CA the broker trusts (the broker's log says which check "
     "failed)"),
    ("error:0A00010B:SSL routines::wrong version number",
     "the TLS handshake with the broker at kafka-1:9093 failed (wrong version number); check security_protocol, "
     "ssl_cafile, ssl_certfile and ssl_keyfile"),
])
def test_each_refusal_names_the_side_that_refused_and_the_setting_to_change(reason, expected):
    assert handshake_failure(S, PREFIX + reason) == expected


def test_without_a_client_certificate_the_refusal_says_to_give_one():
    s = S.replace(ssl_certfile="", ssl_keyfile="")
    line = handshake_failure(s, PREFIX + "error:0A00045C:SSL routines::tlsv13 alert certificate required: SSL alert "
                             "number 116")
    assert line == ("the broker at kafka-1:9093 refused the TLS handshake: certificate required (TLS alert 116); "
                    "it asks for a client certificate: set ssl_certfile and ssl_keyfile (and ssl_key_password if "
                    "the key has one)")


def test_without_ssl_cafile_the_system_bundle_is_named():
    line = handshake_failure(S.replace(ssl_cafile=""), PREFIX + "error:0A000086:SSL routines::certificate verify failed")
    assert "does not verify against the system's CA bundle (ssl_cafile is not set)" in line


def test_both_clients_verify_the_brokers_host_name():
    from streamxai.kafka.config import _ssl_context

    assert confluent_config(S)["ssl.endpoint.identification.algorithm"] == "https"
    assert "ssl.endpoint.identification.algorithm" not in confluent_config(Settings())
    ctx = _ssl_context(Settings(security_protocol="SSL"))
    assert ctx.check_hostname and ctx.verify_mode.name == "CERT_REQUIRED"


def test_an_expired_or_future_client_certificate_is_one_line_naming_the_file(tmp_path):
    import time

    from helpers.tls_certs import make_certs
    from streamxai.schemas import ConfigError
    from streamxai.tls_files import check_tls_files, check_validity

    c = make_certs(tmp_path / "certs")
    with pytest.raises(ConfigError) as e:
        check_tls_files(str(c.ca), str(c.expired_cert), str(c.expired_key), c.key_password)
    assert str(e.value) == (f"setting ssl_certfile='{c.expired_cert}' holds a certificate that expired on Jan  2 "
                            "00:00:00 2020 GMT; brokers refuse it: give a current one, signed by a CA the brokers trust")
    assert c.key_password not in str(e.value)
    check_tls_files(str(c.ca), str(c.client_cert), str(c.client_key), c.key_password)  # current: no error
    with pytest.raises(ConfigError, match=r"valid only from .*; check this host's clock"):
        check_validity(str(c.client_cert), now=time.time() - 86400)
