"""The command line: settings reach the commands, help lists every variable, errors are clear."""

import pytest

from pipeline.cli import main
from pipeline.settings import Settings


def test_config_prints_effective_settings_without_secrets(capsys, monkeypatch):
    monkeypatch.setenv("STREAMXAI_SASL_PASSWORD", "pa55word")
    monkeypatch.setenv("STREAMXAI_EXPLAIN_GROUPS", "3")
    assert main(["config", "--set", "alpha=0.01", "--bootstrap", "k1:9092"]) == 0
    out = capsys.readouterr().out
    assert "alpha = 0.01" in out and "explain_groups = 3" in out and "bootstrap_servers = 'k1:9092'" in out
    assert "pa55word" not in out


def test_help_lists_every_setting_with_its_variable(capsys):
    with pytest.raises(SystemExit):
        main(["worker", "--help"])
    out = capsys.readouterr().out
    for name in Settings.__dataclass_fields__:
        assert f"STREAMXAI_{name.upper()}" in out


def test_bad_setting_is_an_error_not_a_traceback(capsys):
    assert main(["config", "--set", "explainers=shap"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("streamxai: error: setting explainers has unknown names ['shap']")


def test_broker_command_passes_every_option_of_the_broker_tool(capsys, tmp_path):
    from pipeline.ports import free_ports

    port, cport = free_ports(2)
    users = tmp_path / "users.toml"
    users.write_text('admin = "a-pw"\n')
    # status of a broker that is not running: exit 3, with the options it was given
    code = main(["broker", "status", "--port", str(port), "--controller-port", str(cport),
                 "--data-dir", str(tmp_path / "k"), "--heap", "256m", "--sasl-users", str(users)])
    assert code == 3
    assert str(tmp_path / "k") in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["broker", "start", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: streamxai broker")
    for option in ("--port", "--controller-port", "--data-dir", "--log-file", "--heap", "--timeout", "--sasl-users"):
        assert option in out
