"""Settings know where each value came from, so a command changes only defaults."""

import pytest
from streamxai.cli import _parser, _settings
from streamxai.local.demo import demo_overrides
from streamxai.settings import load_settings


def test_each_value_names_its_source_and_the_last_source_wins(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("alpha = 0.02\ngrid_size = 7\nstorage_size = 50\n")
    s = load_settings(f, env={"STREAMXAI_GRID_SIZE": "8", "STREAMXAI_LOSS": "log"}, storage_size="60")
    assert (s.alpha, s.grid_size, s.storage_size) == (0.02, 8, 60)
    assert [s.source(n) for n in ("alpha", "grid_size", "loss", "storage_size", "change_warmup")] == [
        "file", "environment", "environment", "command line", "default"]
    assert s.explicit() == {"alpha", "grid_size", "loss", "storage_size"}
    with pytest.raises(ValueError, match="unknown setting 'nope'"):
        s.source("nope")


def test_replace_marks_the_program_and_keeps_the_rest():
    s = load_settings(None, env={"STREAMXAI_ALPHA": "0.01"}).replace(change_warmup=10)
    assert (s.source("alpha"), s.source("change_warmup")) == ("environment", "program")
    assert s.explicit() == {"alpha"}


def test_the_demo_changes_only_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMXAI_CHANGE_WARMUP", "5")
    s = _settings(_parser().parse_args(["demo", "--set", "alpha=0.02", "--bootstrap", "h:1"]))
    names, scaled = demo_overrides("r", 3000, s.explicit())
    # alpha (--set) and change_warmup (environment) stay the user's; only the episode gap no
    # source gave is scaled to the short run
    assert scaled == {"change_episode_gap": 250} and "bootstrap_servers" in s.explicit()
    assert names["topic_prefix"] == "streamxai.demo-r."
