"""The secured local broker's configuration, without starting Kafka (the end-to-end check is
tests/integration/test_security.py)."""

from __future__ import annotations

import stat

import pytest
from streamxai.local.broker import BrokerError, LocalBroker, SaslUsers
from streamxai.settings import Secret


def users() -> SaslUsers:
    return SaslUsers(Secret("admin-secret-1"), {"worker": Secret("worker-secret-2")})


def test_sasl_broker_requires_authentication_and_authorises_every_request(tmp_path):
    b = LocalBroker(19500, 19501, tmp_path, sasl=users())
    props = dict(line.split("=", 1) for line in b.server_properties().splitlines() if "=" in line and line[0] != "#")
    assert props["listeners"] == "SASL_PLAINTEXT://127.0.0.1:19500,CONTROLLER://127.0.0.1:19501"
    assert props["listener.security.protocol.map"] == "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["super.users"] == "User:admin"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert "PLAINTEXT://" not in props["listeners"].replace("SASL_PLAINTEXT://", "")
    assert b.client_config("worker")["sasl.password"] == "worker-secret-2"
    assert "secret" not in repr(b) + repr(b.sasl)


def test_properties_holding_the_admin_password_are_private(tmp_path):
    b = LocalBroker(19500, 19501, tmp_path, sasl=users())
    b._write_properties()
    mode = stat.S_IMODE(b.properties_file.stat().st_mode)
    assert mode == 0o600, oct(mode)
    assert "admin-secret-1" in b.properties_file.read_text()


@pytest.mark.parametrize("text, fragment", [
    ('worker = "pw"\n', "one of them admin"),
    ("admin = 3\n", "name = \"password\" lines"),
    ("admin = \n", "not valid TOML"),
])
def test_users_file_errors_say_what_is_wrong_without_showing_passwords(tmp_path, text, fragment):
    f = tmp_path / "users.toml"
    f.write_text(text)
    with pytest.raises(BrokerError, match=fragment):
        SaslUsers.from_file(f)


def test_a_users_file_that_is_not_utf8_is_one_error_that_shows_none_of_it(tmp_path):
    # one line naming the byte, as for a settings file, not a UnicodeDecodeError traceback
    f = tmp_path / "users.toml"
    f.write_bytes(b'admin = "gr\xf6\xdfe-pw"\n')
    with pytest.raises(ValueError, match=r"SASL users file .* is not UTF-8 text \(byte 0xf6 at line 1\)") as e:
        SaslUsers.from_file(f)
    assert "pw" not in str(e.value).replace(str(tmp_path), "")


def test_users_file_round_trip(tmp_path):
    f = tmp_path / "users.toml"
    f.write_text('admin = "a-pw"\nworker = "w-pw"\n')
    u = SaslUsers.from_file(f)
    assert u.admin_password.reveal() == "a-pw" and u.users["worker"].reveal() == "w-pw"
    assert repr(u) == "SaslUsers(admin, worker)"


@pytest.mark.parametrize("name, pw", [("bad name", "x"), ("ok", 'quo"te'), ("ok", "")])
def test_bad_users_are_refused(name, pw):
    with pytest.raises(ValueError):
        SaslUsers(Secret("admin-pw"), {name: Secret(pw)})
