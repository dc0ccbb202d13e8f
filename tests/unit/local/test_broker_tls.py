"""The local broker's TLS configuration, without starting Kafka (the end-to-end check is
tests/integration/test_tls_on_broker.py)."""

from __future__ import annotations

import stat

import pytest
from streamxai.local.broker import BrokerError, BrokerTls, LocalBroker, SaslUsers, main
from streamxai.settings import Secret


def tls_dir(d):
    d.mkdir(exist_ok=True)
    (d / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n")
    (d / "broker.pem").write_text("-----BEGIN CERTIFICATE-----\nbroker\n-----END CERTIFICATE-----\n")
    (d / "broker.key").write_text("-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n")
    return d


def props(b: LocalBroker) -> dict[str, str]:
    return dict(line.split("=", 1) for line in b.server_properties().splitlines() if "=" in line and line[0] != "#")


def test_a_tls_broker_serves_clients_over_ssl_and_requires_their_certificate(tmp_path):
    b = LocalBroker(19500, 19501, tmp_path / "kafka", tls=BrokerTls.from_dir(tls_dir(tmp_path / "tls")))
    p = props(b)
    assert p["listeners"] == "SSL://127.0.0.1:19500,CONTROLLER://127.0.0.1:19501"
    assert p["advertised.listeners"] == "SSL://127.0.0.1:19500"
    assert p["listener.security.protocol.map"] == "SSL:SSL,CONTROLLER:PLAINTEXT"
    assert p["inter.broker.listener.name"] == "SSL"
    assert p["ssl.client.auth"] == "required"
    assert (p["ssl.keystore.type"], p["ssl.truststore.type"]) == ("PEM", "PEM")
    assert p["ssl.keystore.location"] == str(b.keystore_file)
    assert p["ssl.truststore.location"] == str(tmp_path / "tls" / "ca.pem")
    cfg = b.client_config()
    assert cfg["security.protocol"] == "SSL" and cfg["ssl.endpoint.identification.algorithm"] == "https"
    assert cfg["ssl.certificate.location"] == str(tmp_path / "tls" / "broker.pem")
    assert b.security_protocol == "SSL" and LocalBroker(19500, 19501, tmp_path).security_protocol == "PLAINTEXT"


def test_tls_with_sasl_is_a_sasl_ssl_listener(tmp_path):
    users = SaslUsers(Secret("admin-secret-1"), {"worker": Secret("worker-secret-2")})
    b = LocalBroker(19500, 19501, tmp_path / "kafka", sasl=users, tls=BrokerTls.from_dir(tls_dir(tmp_path / "tls")))
    p = props(b)
    assert p["listeners"] == "SASL_SSL://127.0.0.1:19500,CONTROLLER://127.0.0.1:19501"
    assert p["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT"
    assert "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config" in p
    assert p["ssl.client.auth"] == "required"
    cfg = b.client_config("worker")
    assert (cfg["security.protocol"], cfg["sasl.username"]) == ("SASL_SSL", "worker")


def test_the_keystore_holds_key_then_certificate_and_is_private(tmp_path):
    b = LocalBroker(19500, 19501, tmp_path / "kafka", tls=BrokerTls.from_dir(tls_dir(tmp_path / "tls")))
    b.data_dir.mkdir()
    b._write_properties()
    text = b.keystore_file.read_text()
    assert text.index("BEGIN PRIVATE KEY") < text.index("BEGIN CERTIFICATE") and "broker" in text
    assert stat.S_IMODE(b.keystore_file.stat().st_mode) == 0o600


def test_a_tls_dir_without_its_files_or_with_a_traditional_key_is_one_clear_error(tmp_path):
    d = tls_dir(tmp_path / "tls")
    (d / "broker.pem").unlink()
    with pytest.raises(BrokerError, match=r"lacks broker\.pem: it needs ca\.pem"):
        BrokerTls.from_dir(d)
    tls_dir(d)
    (d / "broker.key").write_text("-----BEGIN EC PRIVATE KEY-----\nk\n-----END EC PRIVATE KEY-----\n")
    with pytest.raises(BrokerError, match=r"not an unencrypted PKCS#8 key.*openssl pkcs8 -topk8 -nocrypt"):
        BrokerTls.from_dir(d)


def test_the_command_line_names_a_missing_tls_file(tmp_path, capsys):
    assert main(["status", "--data-dir", str(tmp_path / "kafka"), "--tls-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lacks ca.pem, broker.pem, broker.key" in err
