"""One exit code convention for every command (pipeline/exit_codes.py): an error is 2 whether
it comes from the streamxai command or from the broker's own command line."""

from streamxai import exit_codes
from streamxai.cli import main
from streamxai.local.broker import main as broker_main


def test_broker_errors_exit_with_the_error_code(tmp_path, capsys):
    missing = str(tmp_path / "no-such-users.toml")
    assert broker_main(["status", "--sasl-users", missing]) == exit_codes.ERROR
    assert main(["broker", "status", "--sasl-users", missing]) == exit_codes.ERROR
    err = capsys.readouterr().err
    assert err.count(missing) == 2 and "Traceback" not in err


def test_settings_errors_exit_with_the_error_code(capsys):
    assert main(["config", "--set", "alpha=2"]) == exit_codes.ERROR
    assert "alpha" in capsys.readouterr().err


def test_the_help_states_the_convention(capsys):
    try:
        main(["--help"])
    except SystemExit as e:
        assert e.code == exit_codes.OK
    out = " ".join(capsys.readouterr().out.split())
    assert exit_codes.HELP in out
