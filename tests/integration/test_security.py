"""SASL (SCRAM-SHA-512) and ACLs on the project's own secured broker: the right credentials run the
pipeline, wrong ones stop a worker with one line without the password, a principal without READ cannot
read explanations, and secrets never reach the logs."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError
from helpers.pipeline_runs import collect, make_settings
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.broker import LocalBroker, SaslUsers
from streamxai.local.demo_stream import agrawal_events
from streamxai.local.ports import free_port, free_ports
from streamxai.settings import Secret
from streamxai.worker import settings_env, spawn_worker, stop_worker

PASSWORDS = {name: secrets.token_urlsafe(18) for name in ("admin", "worker", "reader")}


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory):
    port, controller_port = free_ports(2)
    users = SaslUsers(Secret(PASSWORDS["admin"]), {u: Secret(PASSWORDS[u]) for u in ("worker", "reader")})
    broker = LocalBroker(port, controller_port, tmp_path_factory.mktemp("sasl-kafka"), heap="384m",
                         die_with_parent=True, sasl=users)
    try:
        broker.start(timeout=120)
        yield broker
    finally:
        broker.stop()
        log = broker.log_file.read_text(errors="replace")
        leaked = [u for u, pw in PASSWORDS.items() if pw in log]
        assert not leaked, f"the broker log shows the passwords of {leaked}"


def secure_settings(broker: LocalBroker, tmp_path: Path, user: str, password: str, **over):
    return make_settings(broker.bootstrap, str(tmp_path / "state"), security_protocol="SASL_PLAINTEXT",
                         sasl_mechanism="SCRAM-SHA-512", sasl_username=user, sasl_password=Secret(password),
                         explainers=["ipfi"], explain_groups=1, **over)


def test_the_secured_broker_refuses_anonymous_clients(secure_broker):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": secure_broker.bootstrap, "socket.timeout.ms": 3000,
                         "log_level": 0})
    with pytest.raises(Exception):  # noqa: B017 - any refusal will do: PLAINTEXT cannot talk to a SASL listener
        admin.list_topics(timeout=5)


def test_worker_with_credentials_and_acls_runs_the_pipeline(secure_broker, tmp_path):
    s = secure_settings(secure_broker, tmp_path, "worker", PASSWORDS["worker"])
    # everything the worker touches: the pipeline's topics, Faust's own topics (app_id prefix),
    # its consumer group and the short-lived groups of readers and replays
    secure_broker.grant("worker", topic_prefixes=[s.topic_prefix, s.app_id],
                        group_prefixes=[s.app_id, "streamxai-"])
    ensure_topics(s)
    log = tmp_path / "worker.log"
    # at debug, where the Kafka client logs every request, SASL's among them
    proc = spawn_worker(s, log_file=str(log), loglevel="debug")
    try:
        events = list(agrawal_events("secure", 60, seed=3))
        produce_events(s, events)
        preds = collect(s, "predictions", lambda ps: len(ps) >= 60, timeout=120)
        assert sorted(p["seq"] for p in preds) == list(range(60))
        expl = collect(s, "explanations", lambda ms: len(ms) >= 9 * (60 // s.emit_every), timeout=120)
        assert {m["feature"] for m in expl} == set(s.features)
    finally:
        stop_worker(proc)
    text = log.read_text(errors="replace")
    assert PASSWORDS["worker"] not in text
    # SCRAM's salt, nonces and client proof (enough to guess the password offline) were logged
    assert "SaslAuthenticateRequest" in text and "sasl_auth_bytes=b" not in text
    assert "Traceback" not in text, text[-3000:]


def test_wrong_credentials_stop_a_worker_at_startup_with_one_clear_line(secure_broker, tmp_path):
    s = secure_settings(secure_broker, tmp_path, "worker", "not-the-password")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s.replace(web_port=free_port())))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "streamxai.cli", "worker"], env=env, capture_output=True,
                          text=True, timeout=90)
    waited = time.monotonic() - t0
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower()]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "refused the credentials" in lines[0] and secure_broker.bootstrap in lines[0]
    assert "not-the-password" not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    print(f"wrong credentials: exit {proc.returncode} after {waited:.1f} s: {lines[0]}")


def test_a_principal_without_read_acl_cannot_read_explanations(secure_broker, tmp_path):
    s = secure_settings(secure_broker, tmp_path, "reader", PASSWORDS["reader"])
    ensure_topics(secure_settings(secure_broker, tmp_path, "admin", PASSWORDS["admin"],
                                  topic_prefix=s.topic_prefix, app_id=s.app_id))
    # the reader may read the features topic (and use its own groups), nothing else
    secure_broker.grant("reader", topic_prefixes=[s.topic("features")], group_prefixes=["reader-"],
                        operations=["READ", "DESCRIBE"])
    errors = {}
    for short in ("features", "explanations"):
        c = Consumer({**secure_broker.client_config("reader"), "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                      "auto.offset.reset": "earliest", "log_level": 0})
        c.subscribe([s.topic(short)])
        deadline = time.monotonic() + 20
        err = None
        try:
            while time.monotonic() < deadline and err is None:
                msg = c.poll(0.5)
                if msg is not None and msg.error() and msg.error().code() != KafkaError._PARTITION_EOF:
                    err = msg.error().code()
                elif c.assignment():
                    break  # joined and got partitions: reading is allowed
        finally:
            c.close()
        errors[short] = err
    assert errors["features"] is None
    assert errors["explanations"] == KafkaError.TOPIC_AUTHORIZATION_FAILED
