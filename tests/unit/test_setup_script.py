"""deploy/setup.sh says why the Python it was given cannot be used (a pyenv shim exiting 127 is not "another version")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SETUP = Path(__file__).resolve().parents[2] / "deploy" / "setup.sh"


def _setup(tmp_path: Path, python: str, pyenv_root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": python, "VENV": str(tmp_path / "venv"), "PYENV_ROOT": str(pyenv_root)}
    return subprocess.run(["bash", str(SETUP), "--no-jars"], env=env, capture_output=True, text=True, timeout=60)


def test_a_python_that_does_not_run_is_named_with_its_own_error_and_pyenvs_copy(tmp_path):
    shim = tmp_path / "python3.13"
    shim.write_text("#!/bin/sh\necho \"pyenv: python3.13: command not found\" >&2\nexit 127\n")
    shim.chmod(0o755)
    installed = tmp_path / "pyenv" / "versions" / "3.13.0" / "bin" / "python3.13"
    installed.parent.mkdir(parents=True)
    installed.write_text("#!/bin/sh\nexit 0\n")
    installed.chmod(0o755)
    run = _setup(tmp_path, str(shim), tmp_path / "pyenv")
    assert run.returncode == 1
    err = run.stderr.strip()
    assert err.count("\n") == 0, err
    assert f"{shim} does not run (pyenv: python3.13: command not found)" in err, err
    assert f"PYTHON={installed}" in err, err  # the copy pyenv installed, to pass instead
    assert not (tmp_path / "venv").exists()


def test_a_python_of_another_version_says_which_it_is(tmp_path):
    old = tmp_path / "python3.10"
    old.write_text("#!/bin/sh\nfor a; do case $a in *version_info*) exit 1;; esac; done\necho 3.10.13\n")
    old.chmod(0o755)
    run = _setup(tmp_path, str(old), tmp_path / "nopyenv")
    assert run.returncode == 1
    assert f"{old} is Python 3.10.13" in run.stderr, run.stderr
