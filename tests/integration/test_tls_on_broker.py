"""TLS with client certificates on the project's own brokers: a worker and ``produce`` run over TLS with the
broker's name verified; a wrong CA, an expired or untrusted certificate stop them with one line naming
the file; the key's password appears nowhere; SASL runs inside TLS."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.pipeline_runs import collect, make_settings
from helpers.tls_certs import TlsCerts, make_certs
from streamxai.kafka.config import BrokerError, check_broker, ensure_topics
from streamxai.local.broker import BrokerTls, LocalBroker, SaslUsers
from streamxai.local.ports import free_port, free_ports
from streamxai.settings import Secret, Settings
from streamxai.worker import settings_env, spawn_worker, stop_worker

N = 60


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsCerts:
    return make_certs(tmp_path_factory.mktemp("tls") / "certs")


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory, certs: TlsCerts):
    port, controller_port = free_ports(2)
    tls = BrokerTls(str(certs.ca), str(certs.broker_cert), str(certs.broker_key))
    broker = LocalBroker(port, controller_port, tmp_path_factory.mktemp("tls-kafka"), heap="384m",
                         die_with_parent=True, tls=tls)
    try:
        broker.start(timeout=120)
        yield broker
    finally:
        broker.stop()


def tls_settings(broker: LocalBroker, certs: TlsCerts, tmp_path: Path, **over) -> Settings:
    files = {"ssl_cafile": str(certs.ca), "ssl_certfile": str(certs.client_cert),
             "ssl_keyfile": str(certs.client_key), **over}
    return make_settings(broker.bootstrap, str(tmp_path / "state"), security_protocol="SSL",
                         ssl_key_password=Secret(certs.key_password), explainers=["ipfi"], explain_groups=1,
                         web_port=free_port(), **files)


def cli(s: Settings, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    return subprocess.run([sys.executable, "-m", "streamxai.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_tls_broker_refuses_a_client_without_a_certificate(tls_broker, certs, tmp_path):
    s = tls_settings(tls_broker, certs, tmp_path, ssl_certfile="", ssl_keyfile="")
    proc = cli(s, "tail", "features", "--max", "1")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"the broker at {tls_broker.bootstrap} refused the TLS handshake" in proc.stderr
    assert "set ssl_certfile and ssl_keyfile" in proc.stderr


def test_a_worker_and_the_cli_run_the_demo_stream_over_tls(tls_broker, certs, tmp_path):
    s = tls_settings(tls_broker, certs, tmp_path)
    ensure_topics(s)
    log = tmp_path / "worker.log"
    proc = spawn_worker(s, log_file=str(log))
    try:
        produced = cli(s, "produce", "demo", "--n", str(N), "--stream-id", "tls")
        assert produced.returncode == 0, produced.stderr[-3000:]
        preds = collect(s, "predictions", lambda ps: len(ps) >= N, timeout=90)
        assert sorted(p["seq"] for p in preds) == list(range(N))
        expl = collect(s, "explanations", lambda ms: len(ms) >= 9 * (N // s.emit_every), timeout=90)
        assert {m["feature"] for m in expl} == set(s.features)
    finally:
        stop_worker(proc)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    assert certs.key_password not in text + produced.stdout + produced.stderr


@pytest.mark.parametrize("case", ["wrong_ca", "expired", "untrusted"])
@pytest.mark.parametrize("command", [("worker",), ("produce", "demo", "--n", "10")])
def test_a_refused_certificate_is_one_line_naming_the_file(tls_broker, certs, tmp_path, case, command):
    over = {"wrong_ca": {"ssl_cafile": str(certs.other_ca)},
            "expired": {"ssl_certfile": str(certs.expired_cert), "ssl_keyfile": str(certs.expired_key)},
            "untrusted": {"ssl_certfile": str(certs.stranger_cert), "ssl_keyfile": str(certs.stranger_key)}}[case]
    s = tls_settings(tls_broker, certs, tmp_path, **over)
    proc = cli(s, *command)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower()]
    assert len(lines) == 1, proc.stderr[-3000:]
    if case == "wrong_ca":  # the client refuses the broker's certificate
        assert f"does not verify against ssl_cafile='{certs.other_ca}'" in lines[0]
        assert "certificate verify failed" in lines[0] and "set ssl_cafile to the CA bundle" in lines[0]
    elif case == "expired":  # found before connecting: the broker's refusal would not say why
        assert f"ssl_certfile='{certs.expired_cert}' holds a certificate that expired on Jan  2" in lines[0]
        assert "give a current one" in lines[0]
    else:  # the broker refuses the client's certificate
        assert f"the broker at {tls_broker.bootstrap} refused the client certificate " \
               f"ssl_certfile='{certs.stranger_cert}'" in lines[0]
        assert "signed by a CA the broker trusts" in lines[0]
    assert "Traceback" not in proc.stderr
    assert certs.key_password not in proc.stderr + proc.stdout


def test_a_broker_certificate_that_does_not_name_the_bootstrap_host_is_refused(tls_broker, certs, tmp_path):
    # the broker's certificate names 127.0.0.1 alone; localhost reaches the same listener
    s = tls_settings(tls_broker, certs, tmp_path).replace(bootstrap_servers=f"localhost:{tls_broker.port}")
    proc = cli(s, "produce", "demo", "--n", "10")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"the certificate of the broker at localhost:{tls_broker.port} does not verify" in proc.stderr
    assert "certificate verify failed" in proc.stderr


def test_sasl_over_tls_authenticates_users_inside_the_tls_session(tmp_path_factory, certs, tmp_path):
    port, controller_port = free_ports(2)
    admin_pw = secrets.token_urlsafe(12)
    broker = LocalBroker(port, controller_port, tmp_path_factory.mktemp("sasl-ssl-kafka"), heap="384m",
                         die_with_parent=True, sasl=SaslUsers(Secret(admin_pw)),
                         tls=BrokerTls(str(certs.ca), str(certs.broker_cert), str(certs.broker_key)))
    try:
        broker.start(timeout=120)
        s = tls_settings(broker, certs, tmp_path).replace(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                                                          sasl_username="admin", sasl_password=Secret(admin_pw))
        assert s.topic("features") in ensure_topics(s)
        with pytest.raises(BrokerError, match="refused the credentials of user 'admin'") as e:
            check_broker(s.replace(sasl_password=Secret("not-the-password")))
        assert "not-the-password" not in str(e.value)
    finally:
        broker.stop()
