"""Settings: precedence file < env < overrides, clear errors, secrets never shown."""

import ast
import dataclasses
import logging
import pickle
import subprocess
import sys

import pytest
from streamxai.kafka.config import confluent_config
from streamxai.schemas import ConfigError
from streamxai.settings import Settings, load_settings
from streamxai.settings_text import settings_help
from streamxai.worker import settings_env


def test_precedence_file_env_overrides(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('alpha = 0.01\nexplain_groups = 3\nfeatures = ["a", "b"]\n')
    s = load_settings(f, env={"STREAMXAI_EXPLAIN_GROUPS": "5"}, emit_every=7)
    assert (s.alpha, s.explain_groups, s.features, s.emit_every) == (0.01, 5, ["a", "b"], 7)


def test_env_lists_accept_commas_and_json():
    assert load_settings(env={"STREAMXAI_EXPLAINERS": "ipfi, ipdp"}).explainers == ["ipfi", "ipdp"]
    assert load_settings(env={"STREAMXAI_MODEL_PARAMS": '{"grace_period": 50}'}).model_params == {"grace_period": 50}


@pytest.mark.parametrize("kw, fragment", [
    ({"explainers": ["shap"]}, "unknown names ['shap']"),
    ({"alpha": "2"}, "alpha=2.0"),
    ({"categorical": ["zz"]}, "not in names"),
    ({"explain_groups": "0"}, "explain_groups"),
    # web_port = 0 is refused here, not after the worker creates its topics, in a traceback of Faust's
    ({"web_port": "0"}, "web_port=0 must be a port in 1-65535"),
    ({"web_port": "70000"}, "web_port=70000 must be a port in 1-65535"),
])
def test_bad_settings_say_what_is_wrong(kw, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        load_settings(**kw)


def test_unknown_key_in_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("alpah = 0.1\n")
    with pytest.raises(ConfigError, match="unknown setting 'alpah'"):
        load_settings(f)


def test_secrets_never_show(caplog):
    s = load_settings(env={"STREAMXAI_SASL_PASSWORD": "s3cr3t-pw", "STREAMXAI_SSL_KEY_PASSWORD": "k3y-pw",
                           "STREAMXAI_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "STREAMXAI_SASL_USERNAME": "u"})
    shown = [repr(s), str(s), str(s.public_dict()), settings_help(), repr(s.sasl_password)]
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("streamxai").info("settings %s %r", s, s.public_dict())
    shown.append(caplog.text)
    for text in shown:
        assert "s3cr3t-pw" not in text and "k3y-pw" not in text
    # pickling (e.g. into a checkpoint) drops the value instead of writing it to disk
    assert b"s3cr3t-pw" not in pickle.dumps(s)
    # only the client configuration and the child-process environment carry it
    assert confluent_config(s)["sasl.password"] == "s3cr3t-pw"
    assert settings_env(s)["STREAMXAI_SASL_PASSWORD"] == "s3cr3t-pw"


def test_bad_secret_value_error_does_not_echo_it():
    # a secret can't fail conversion, but make sure a bad non-secret value is echoed and a secret is not
    with pytest.raises(ConfigError) as info:
        load_settings(env={"STREAMXAI_PARTITIONS": "many", "STREAMXAI_SASL_PASSWORD": "hunter2"})
    assert "'many'" in str(info.value) and "hunter2" not in str(info.value)


@pytest.mark.parametrize("kw, fragment", [
    ({"security_protocol": "BOGUS"}, "security_protocol='BOGUS' must be one of PLAINTEXT, SSL"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "MD5", "sasl_username": "u", "sasl_password": "p"},
     "sasl_mechanism='MD5' must be one of PLAIN"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512"}, "needs sasl_username and sasl_password"),
    ({"security_protocol": "SSL", "ssl_cafile": "/nonexistent/ca.pem"}, "ssl_cafile='/nonexistent/ca.pem': no such file"),
])
def test_connection_settings_are_validated_at_startup(kw, fragment):
    # a bad value (security_protocol=BOGUS) is refused here, not later inside the Kafka client
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(")):
        load_settings(**kw)


def test_sasl_password_is_not_in_the_validation_error():
    with pytest.raises(ConfigError) as info:
        load_settings(security_protocol="SASL_PLAINTEXT", sasl_mechanism="NOPE", sasl_username="u",
                      sasl_password="pw-4417")
    assert "pw-4417" not in str(info.value)


def test_a_boolean_setting_from_the_environment_and_from_toml(tmp_path):
    assert load_settings(None, env={}).checkpoint_on_stop is True
    for text, want in (("false", False), ("0", False), ("True", True), ("yes", True)):
        assert load_settings(None, env={"STREAMXAI_CHECKPOINT_ON_STOP": text}).checkpoint_on_stop is want
    f = tmp_path / "s.toml"
    f.write_text("checkpoint_on_stop = false\n")
    assert load_settings(str(f)).checkpoint_on_stop is False
    f.write_text('checkpoint_on_stop = "false"\n')  # TOML has booleans: a string is a mistake
    with pytest.raises(ConfigError, match="expected a boolean"):
        load_settings(str(f))
    with pytest.raises(ConfigError, match="expected true or false"):
        load_settings(None, env={"STREAMXAI_CHECKPOINT_ON_STOP": "maybe"})


def _self_signed(tmp_path, key_password: str | None = None):
    """A certificate and its key (PEM), made with the openssl command."""
    import subprocess

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-keyout", str(key), "-out", str(cert), "-days", "1",
           "-subj", "/CN=streamxai-test"]
    cmd += ["-passout", f"pass:{key_password}"] if key_password else ["-nodes"]
    subprocess.run(cmd, check=True, capture_output=True)
    return cert, key


def test_a_ca_file_without_a_certificate_is_a_settings_error(tmp_path):
    # ssl_cafile naming a file that holds no certificate (a key, a wrong copy) fails the settings
    # check, not every command in the Kafka client's constructor with a KafkaException traceback
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="ssl_cafile=.*holds no certificate"):
        load_settings(security_protocol="SSL", ssl_cafile=str(bad))
    cert, key = _self_signed(tmp_path)
    assert load_settings(security_protocol="SSL", ssl_cafile=str(cert)).ssl_cafile == str(cert)
    with pytest.raises(ConfigError, match="ssl_cafile=.*holds no certificate"):
        load_settings(security_protocol="SSL", ssl_cafile=str(key))


def test_a_client_certificate_and_key_that_do_not_load_are_a_settings_error_without_the_password(tmp_path):
    cert, key = _self_signed(tmp_path, key_password="k3y-pa55word")
    ok = load_settings(security_protocol="SSL", ssl_certfile=str(cert), ssl_keyfile=str(key),
                       ssl_key_password="k3y-pa55word")
    assert ok.ssl_keyfile == str(key)
    for wrong in ({"ssl_key_password": "wr0ng-pa55word"}, {"ssl_keyfile": str(cert)}):
        kw = {"ssl_certfile": str(cert), "ssl_keyfile": str(key), "ssl_key_password": "k3y-pa55word", **wrong}
        with pytest.raises(ConfigError, match="ssl_certfile=.*ssl_keyfile=.*ssl_key_password") as info:
            load_settings(security_protocol="SSL", **kw)
        assert "pa55word" not in str(info.value)


def test_a_settings_file_that_is_not_utf8_is_one_error_that_shows_none_of_it(tmp_path):
    # a settings file saved as latin-1 is one error naming the byte, not a UnicodeDecodeError
    # traceback; the error must not echo the file (it may hold a password)
    f = tmp_path / "s.toml"
    f.write_bytes(b'features = ["a"]\nsasl_password = "gr\xf6\xdfer-secret"\n')
    with pytest.raises(ConfigError) as e:
        load_settings(f, env={})
    assert str(e.value) == (f"settings file {f} is not UTF-8 text (byte 0xf6 at line 2); TOML files are UTF-8: "
                            "save it as UTF-8")


def test_settings_of_the_default_model_import_no_river():
    # commands that build no model (tail, config, dashboard) start without river's second of imports
    # (its base classes, which the core's components derive from, take milliseconds);
    # model_params left out are looked up in the model's constructor only for another model
    code = ("import sys; from streamxai.settings import Settings, load_settings; "
            "s = load_settings(None, features='a', streams='{\"x-*\": {\"alpha\": 0.1}}'); Settings().for_stream('x'); "
            "assert s.model_params == {'grace_period': 50}; print(sorted(m for m in sys.modules if m.startswith('river')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = ast.literal_eval(out.strip())
    assert "river.base" in loaded and [m for m in loaded if m.split(".")[:2] not in (["river"], ["river", "base"])
                                       and m != "river.__version__"] == [], out


@pytest.mark.parametrize("old, new, value", [("drift_delta", "change_delta", 0.05),
                                             ("isage_inner_samples", "isage_n_inner_samples", 4)])
def test_an_old_setting_name_in_a_file_is_refused_naming_the_new_one(tmp_path, old, new, value):
    f = tmp_path / "s.toml"
    f.write_text(f"{old} = {value}\n")
    with pytest.raises(ConfigError) as e:
        load_settings(f)
    assert str(e.value) == f"settings file {f}: setting '{old}' is now '{new}'"
    assert getattr(load_settings(None, **{new: value}), new) == value


def test_an_old_setting_name_in_a_stream_profile_is_refused_naming_the_new_one(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[streams."reg-*"]\ndrift_warmup = 10\n')
    with pytest.raises(ConfigError, match=r"^settings file .*\[streams\.\"reg-\*\"\]: setting 'drift_warmup' is now "
                                          r"'change_warmup'$"):
        load_settings(f)


def test_an_old_environment_variable_is_refused_naming_the_new_one():
    with pytest.raises(ConfigError) as e:
        load_settings(env={"STREAMXAI_DRIFT_EPISODE_GAP": "500"})
    assert str(e.value) == "setting 'STREAMXAI_DRIFT_EPISODE_GAP' is now 'STREAMXAI_CHANGE_EPISODE_GAP'"
    assert load_settings(env={"STREAMXAI_CHANGE_EPISODE_GAP": "500"}).change_episode_gap == 500


@pytest.mark.parametrize("old", ["drift_delta", "drift_explainers", "drift_min_effect", "drift_min_samples",
                                 "drift_window", "drift_warmup", "drift_episode_gap", "drift_episode_max",
                                 "drift_alert_kinds"])
def test_an_old_setting_name_on_the_command_line_is_one_line_naming_the_new_one(old, capsys):
    from streamxai.cli import main

    assert main(["config", "--set", f"{old}=1"]) == 2
    new = "change_" + old.removeprefix("drift_")
    assert capsys.readouterr().err == f"streamxai: error: --set: setting {old!r} is now {new!r}\n"
    assert new in {f.name for f in dataclasses.fields(load_settings())}


def test_an_explainer_parameter_has_one_name_in_the_explainers_the_spec_and_the_settings():
    # a field of ExplainerSpec is a constructor parameter of each explainer it applies to, and the
    # setting of its name, or of iSAGE's prefix and its name
    import inspect

    from streamxai.core.explainers import IPDP, IPFI, ISAGE
    from streamxai.core.stream import ExplainerSpec

    classes = {"ipfi": IPFI, "isage": ISAGE, "ipdp": IPDP}
    settings = {f.name for f in dataclasses.fields(Settings)}
    for f in dataclasses.fields(ExplainerSpec)[1:]:  # after the name (the setting `explainers` lists them)
        if f.name in ("output", "loss", "target_class"):  # which output with which loss: set per explainer
            assert f.name in settings, f.name
            continue
        for name in ExplainerSpec.APPLIES_TO.get(f.name, tuple(classes)):
            assert f.name in inspect.signature(classes[name]).parameters, (name, f.name)
        assert (f.name in settings) != (f"isage_{f.name}" in settings), f.name


