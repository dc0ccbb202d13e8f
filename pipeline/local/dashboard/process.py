"""Start the dashboard as a child process (for ``streamxai demo`` and tests)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

from ...settings import Settings
from ...worker import settings_env

__all__ = ["spawn_dashboard", "wait_for_dashboard"]


def spawn_dashboard(s: Settings, port: int, host: str = "127.0.0.1", log_file: str | None = None) -> subprocess.Popen:
    """Run ``streamxai dashboard`` for the topics of ``s`` on ``host:port``; stop it with
    :func:`streamxai.worker.stop_worker`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    cmd = [sys.executable, "-m", "streamxai.cli", "dashboard", "--host", host, "--port", str(port)]
    if not log_file:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    with open(log_file, "ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_dashboard(url: str, proc: subprocess.Popen | None = None, timeout: float = 30.0) -> None:
    """Block until ``url`` answers; ValueError if the process exits or ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url + "api/streams", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if proc is not None and proc.poll() is not None:
            raise ValueError(f"the dashboard exited with code {proc.returncode} before answering at {url}")
        if time.monotonic() > deadline:
            raise ValueError(f"the dashboard did not answer at {url} within {timeout:.0f} s")
        time.sleep(0.2)
