"""The local broker's TLS configuration without Kafka, and the security page's openssl files passing an
in-memory TLS handshake."""

from __future__ import annotations

import ssl
import stat
import subprocess
from pathlib import Path

import pytest
from streamxai.kafka.config import _ssl_context
from streamxai.local.broker import BrokerError, BrokerTls, LocalBroker, SaslUsers, main
from streamxai.settings import Secret, Settings
from streamxai.tls_files import check_tls_files


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


def test_relative_directories_are_made_absolute_for_the_jvm_that_runs_in_the_data_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tls_dir(tmp_path / "tls")
    b = LocalBroker(19500, 19501, "kafka", log_file="logs/broker.log", libs_dir="libs", tls=BrokerTls.from_dir("tls"))
    assert (b.data_dir, b.log_file, b.libs_dir) == (tmp_path / "kafka", tmp_path / "logs/broker.log", tmp_path / "libs")
    assert b.tls.cafile == str(tmp_path / "tls" / "ca.pem")
    assert f"log.dirs={tmp_path / 'kafka' / 'data'}" in b.server_properties()


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, hostname: str) -> None:
    """A TLS handshake in memory; raises ssl.SSLError if either side refuses."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    s = server.wrap_bio(to_server, to_client_out := ssl.MemoryBIO(), server_side=True)
    c = client.wrap_bio(to_client, to_server_out := ssl.MemoryBIO(), server_hostname=hostname)
    done = {s: False, c: False}
    for _ in range(20):
        for side in (c, s):
            if not done[side]:
                try:
                    side.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        to_server.write(to_server_out.read())
        to_client.write(to_client_out.read())
        if all(done.values()):
            return
    raise AssertionError("the handshake did not finish")


def test_the_documented_openssl_commands_make_files_the_broker_and_a_worker_accept(tmp_path):
    page = (Path(__file__).resolve().parents[3] / "docs/pages/how-to/security.md").read_text()
    section = page[page.index("## A local broker with TLS"):]
    script = section[section.index("```bash\n") + 8:section.index("\n```", section.index("```bash\n"))]
    script += '\nprintf %s "$KEY_PASSWORD" > key-password\n'
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    tls = BrokerTls.from_dir(tmp_path / "tls")
    password = (tmp_path / "key-password").read_text()
    d = tmp_path / "tls"
    check_tls_files(str(d / "ca.pem"), str(d / "client.pem"), str(d / "client.key"), password)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tls.certfile, tls.keyfile)
    server.load_verify_locations(tls.cafile)
    server.verify_mode = ssl.CERT_REQUIRED  # ssl.client.auth=required
    # the context the worker's aiokafka client gets
    worker = _ssl_context(Settings(security_protocol="SSL", ssl_cafile=str(d / "ca.pem"),
                                   ssl_certfile=str(d / "client.pem"), ssl_keyfile=str(d / "client.key"),
                                   ssl_key_password=Secret(password)))
    _handshake(server, worker, "127.0.0.1")
    _handshake(server, worker, "localhost")
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        _handshake(server, worker, "kafka.example.com")  # the name is checked
    broker_as_client = ssl.create_default_context(cafile=tls.cafile)  # the broker connects to itself
    broker_as_client.load_cert_chain(tls.certfile, tls.keyfile)
    _handshake(server, broker_as_client, "127.0.0.1")
