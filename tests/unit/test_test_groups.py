"""A small module run through ``tests/conftest.py``'s xdist grouping keeps a module fixture's tests in one
process (losing the grouping fails nothing else: the fixtures just run once per process)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

_MODULE = '''
import pytest

@pytest.fixture(scope="module")
def shared():
    return object()

@pytest.mark.parametrize("i", range(4))
def test_uses_it(shared, i):
    pass

@pytest.mark.parametrize("i", range(4))
def test_does_not(i):
    pass
'''


@pytest.mark.slow
def test_the_tests_of_a_module_fixture_run_in_one_process(tmp_path):
    (tmp_path / "test_grouped.py").write_text(_MODULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "conftest",
                          "-p", "no:cacheprovider", "-p", "no:randomly", "test_grouped.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ran = re.findall(r"\[(gw\d)\].* PASSED (\S+)", run.stdout)
    users = {gw for gw, test in ran if "test_uses_it" in test}
    assert len(ran) == 8 and len(users) == 1, run.stdout[-3000:]
    # the precondition: the other tests were free to go to either process, and did go to both
    assert {gw for gw, _ in ran} == {"gw0", "gw1"}, run.stdout[-3000:]
