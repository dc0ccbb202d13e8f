"""matplotlib is the optional extra ``streamxai[plot]``: ``streamxai plot`` without it says how to
install it, before it reads anything."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from streamxai.cli import main

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def test_plot_without_matplotlib_says_how_to_install_it(monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    # no broker at this address: the check comes before the topics are read
    assert main(["plot", "s-1", "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("streamxai: error: streamxai plot draws with matplotlib, which cannot be imported")
    assert err.rstrip().endswith("install it with pip install 'streamxai[plot]'") and err.count("\n") == 1, err


def test_matplotlib_is_the_plot_extra_and_the_tests_install_it():
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("matplotlib")]
    extras = project["optional-dependencies"]
    assert [d for d in extras["plot"] if d.startswith("matplotlib")]
    assert any(d.startswith("streamxai[") and "plot" in d for d in extras["test"])
