"""Options every command shares: --loglevel everywhere, --bootstrap-server, `broker --help`,
and `config` printing TOML that loads back to the same settings."""

import argparse
import logging
import tomllib

import pytest
import streamxai.cli as cli
from streamxai.cli import _parser, main
from streamxai.settings import load_settings

# the positional arguments each command needs, to reach its options
_COMMANDS = {"broker": ["status"], "worker": [], "produce": ["demo"], "tail": ["features"], "demo": [],
             "dashboard": [], "plot": ["s"], "config": []}


def test_the_table_above_covers_every_command():
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(_COMMANDS)


@pytest.fixture
def root_level():
    root = logging.getLogger()
    before = root.level
    yield root
    root.setLevel(before)


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_loglevel_applies_to_every_command(command, monkeypatch, root_level):
    seen = {}

    def run(args):  # stands in for the command: what logging level does it run under?
        seen["level"] = logging.getLogger("streamxai").getEffectiveLevel()
        seen["arg"] = args.loglevel
        return 0

    monkeypatch.setattr(cli, "_run", run)
    assert main([command, *_COMMANDS[command], "--loglevel", "WARNING"]) == 0
    assert seen == {"level": logging.WARNING, "arg": "warning"}
    assert main([command, *_COMMANDS[command], "--loglevel", "debug"]) == 0
    assert seen["level"] == logging.DEBUG


def test_a_bad_loglevel_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["config", "--loglevel", "loud"])
    assert info.value.code == 2
    assert "invalid choice: 'loud'" in capsys.readouterr().err


def test_bootstrap_server_is_an_alias_of_bootstrap(capsys):
    assert main(["config", "--bootstrap-server", "k2:9092"]) == 0
    assert tomllib.loads(capsys.readouterr().out)["bootstrap_servers"] == "k2:9092"
    assert _parser().parse_args(["tail", "features", "--bootstrap-server", "h:1"]).bootstrap == "h:1"


def test_broker_help_shows_the_broker_options(capsys):
    with pytest.raises(SystemExit) as info:
        main(["broker", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: streamxai broker")
    # each option with its own help text, not a list of names
    for text in ("--port PORT", "client listener (default 9092)", "--controller-port", "KRaft controller listener",
                 "--data-dir", "--log-file", "--heap", "JVM -Xmx", "--timeout", "seconds to wait",
                 "--sasl-users FILE", "require SASL", "{start,stop,status}", "--loglevel"):
        assert text in out, text


def test_config_prints_toml_that_loads_back_to_the_same_settings(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text('alpha = 0.0125\nfeatures = ["a b", "c\\"d", "é"]\ncategorical = ["c\\"d"]\n'
                 'model_params = {grace_period = 5, split_criterion = "gini", nested = {x = [1, 2.5]}}\n'
                 'target_class = "yes"\ntopic_prefix = "shop\\t."\nsession_timeout_s = 1e-3\n')
    assert main(["config", "--settings", str(f), "--set", "change_window=30000", "--bootstrap-server", "k:1"]) == 0
    out = capsys.readouterr().out
    tomllib.loads(out)  # valid TOML
    back = tmp_path / "back.toml"
    back.write_text(out)
    original = load_settings(f, change_window="30000", bootstrap_servers="k:1")
    assert load_settings(back) == original
    assert load_settings(back).model_params == {"grace_period": 5, "split_criterion": "gini", "nested": {"x": [1, 2.5]}}


def test_config_never_prints_a_secret_and_says_where_to_give_it(capsys, monkeypatch):
    monkeypatch.setenv("STREAMXAI_SASL_PASSWORD", "pa55word")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "pa55word" not in out
    assert "sasl_password" not in tomllib.loads(out)  # a masked value pasted back would become the password
    assert "# sasl_password: secret" in out and "STREAMXAI_SASL_PASSWORD" in out
