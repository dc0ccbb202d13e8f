"""Run a Faust worker for some roles, and spawn worker processes for the demo and tests."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from . import exit_codes
from .settings import Secret, Settings, env_name

__all__ = ["dashboard_hint", "kernels_note", "run_worker", "settings_env", "spawn_worker", "stop_worker"]


def dashboard_hint(settings: Settings) -> str:
    """The command that shows this worker's streams live: ``streamxai dashboard`` with the
    broker and topic prefix where they are not the defaults (quoted for a shell).

    >>> dashboard_hint(Settings(topic_prefix="streamxai.demo-abc."))
    'streamxai dashboard --set topic_prefix=streamxai.demo-abc.'
    """
    import shlex

    default = Settings()
    args = ["streamxai", "dashboard"]
    if settings.bootstrap_servers != default.bootstrap_servers:
        args += ["--bootstrap", settings.bootstrap_servers]
    if settings.topic_prefix != default.topic_prefix:
        args += ["--set", f"topic_prefix={settings.topic_prefix}"]
    return shlex.join(args)


def kernels_note(environ: dict | None = None) -> tuple[int, str] | None:
    """The log level and line that say why the explainers' bookkeeping runs its pure-Python code
    (:mod:`streamxai.core.kernels`), or None when the compiled kernels run."""
    import importlib

    from .core import kernels

    env = os.environ if environ is None else environ
    if kernels.load(env) is not None:
        return None
    line = "the explainers' bookkeeping runs its pure-Python code"
    if env.get("STREAMXAI_PURE_PYTHON", "") not in ("", "0"):
        return logging.INFO, f"{line}: STREAMXAI_PURE_PYTHON is set"
    try:
        built = importlib.import_module("streamxai.core._kernels")
    except ImportError:
        why = "the compiled kernels (pipeline/core/_kernels*.c) are not built for this Python"
    else:
        lacks = [f for f in kernels.FUNCTIONS if not hasattr(built, f)]
        why = f"the compiled kernels were built from older source (it lacks {', '.join(lacks)})"
    return logging.WARNING, (f"{line} (the same values, slower): {why}; build them with `bash deploy/setup.sh` "
                             "(or `pip install -e .`), which needs a C compiler and the Python headers")


def freeze_startup_heap(metrics: Any) -> int:
    """Move every object the worker made as it started out of the cyclic garbage collector's
    reach (``gc.freeze``), once it is up and before its first event; the number moved, also the
    gauge ``gc_frozen_objects``. A full collection would otherwise walk the hundred thousand
    objects of its start again and again; reference counting still frees them, and a stream's
    state, made later, stays collectable."""
    import gc

    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    metrics.gauge("gc_frozen_objects", frozen)
    logging.getLogger("streamxai").info("moved %d objects made at start-up out of the garbage collector's passes",
                                        frozen)
    return frozen


def run_worker(settings: Settings, roles: tuple[str, ...], loglevel: str = "info") -> int:
    """Create the topics, build the app and run it until SIGTERM/SIGINT (blocks); the exit code.

    A stop never takes longer than ``shutdown_timeout_s``, and a worker whose topics are deleted
    stops with one line (exit code 2)."""
    import faust

    from .app import create_app
    from .kafka.config import ensure_topics
    from .kafka.outage import install_outage_filter
    from .kafka.topic_watch import topic_watch
    from .malloc_arenas import limit_arenas

    limit_arenas(1)  # before any thread allocates (see streamxai.malloc_arenas)
    check_web_port(settings)  # before anything is created or joined
    created = ensure_topics(settings)
    log = logging.getLogger("streamxai")
    log.info("created topics %s", created)
    note = kernels_note() if "explain" in roles else None
    if note is not None:
        log.log(*note)
    base = f"http://{settings.web_host}:{settings.web_port}"
    log.info("metrics at %s/metrics (Prometheus) and %s/streamxai/metrics (JSON); see the explanations "
             "live with `%s` (http://127.0.0.1:8050/)", base, base, dashboard_hint(settings))
    Path(settings.state_dir).mkdir(parents=True, exist_ok=True)
    app = create_app(settings, roles)
    install_outage_filter()  # a broker outage: one line when it starts, one when it ends
    outcome = {"code": exit_codes.OK}
    watch = topic_watch(settings)

    @app.timer(interval=TOPIC_CHECK_S)
    async def topics_present() -> None:
        missing = await asyncio.to_thread(watch.check)
        if missing and outcome["code"] == exit_codes.OK:
            outcome["code"] = exit_codes.ERROR
            log.error("topics %s were deleted from %s while the worker ran: stopping (start the worker again to "
                      "create them, or check topic_prefix)", ", ".join(missing), settings.bootstrap_servers)
            os.kill(os.getpid(), signal.SIGTERM)

    class BoundedWorker(faust.Worker):  # type: ignore[misc]
        async def on_startup_finished(self) -> None:
            await super().on_startup_finished()
            freeze_startup_heap(app.streamxai_metrics)

        async def on_stop(self) -> None:
            _exit_after(settings.shutdown_timeout_s, outcome)
            app.streamxai_stop_began = time.monotonic()  # type: ignore[attr-defined]
            await super().on_stop()

    worker = BoundedWorker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    # Faust's terminal spinner sets the root logger to DEBUG, which costs CPU on every library's
    # debug call and writes escape codes into log files
    worker.spinner = None
    try:
        worker.execute_from_commandline()
    except SystemExit as e:  # mode exits 1 when a service crashed (logged above, with its traceback)
        if e.code not in (None, 0) and outcome["code"] == exit_codes.OK:
            outcome["code"] = exit_codes.ERROR
            log.error("the worker stopped on the error above (exit code %d)", exit_codes.ERROR)
    _exit_now(outcome["code"])
    return outcome["code"]  # (not reached)


def check_web_port(settings: Settings) -> None:
    """:class:`~schemas.ConfigError` if the worker's metrics endpoint cannot listen on
    ``web_host:web_port``, before Faust's web server would fail with a traceback.

    >>> import socket
    >>> with socket.socket() as s:
    ...     _ = s.bind(("127.0.0.1", 0)); s.listen()
    ...     check_web_port(Settings(web_port=s.getsockname()[1]))
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: web_port ... on 127.0.0.1 is in use (another worker on this host?): ...
    >>> check_web_port(Settings(web_host="192.0.2.1"))  # an address of another host
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: the metrics endpoint cannot listen on web_host '192.0.2.1', web_port 6066: ...
    """
    from streamxai.schemas import ConfigError

    try:
        infos = socket.getaddrinfo(settings.web_host, settings.web_port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise ConfigError(f"web_host {settings.web_host!r} cannot be resolved ({e}); set web_host to an address "
                          "of this host (127.0.0.1, or 0.0.0.0 for every interface)") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the web server binds
        try:
            probe.bind(address)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise ConfigError(f"the metrics endpoint cannot listen on web_host {settings.web_host!r}, web_port "
                                  f"{settings.web_port}: {e.strerror}; set web_host to an address of this host "
                                  "(127.0.0.1, or 0.0.0.0 for every interface) and web_port to a free port") from None
            raise ConfigError(
                f"web_port {settings.web_port} on {settings.web_host} is in use (another worker on this host?): "
                f"{e.strerror}; give each worker of a host its own web_port (--set web_port=N or "
                "STREAMXAI_WEB_PORT)") from None


#: how often a worker checks that its topics still exist
TOPIC_CHECK_S = 10.0


def _exit_now(code: int) -> None:
    """End the process with ``code`` once the worker has stopped, without Python's exit freeing
    every object one by one (seconds for a worker holding many streams); logs flushed first."""
    for handler in logging.getLogger().handlers + logging.getLogger("streamxai").handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _exit_after(seconds: float, outcome: dict[str, int]) -> None:
    """Exit the process ``seconds`` from now unless it has ended by then (a daemon thread)."""

    def expire() -> None:
        code = outcome["code"]
        if code == exit_codes.OK:  # (a stop for a reason already logged needs no second line)
            code = exit_codes.INCOMPLETE
            logging.getLogger("streamxai").error(
                "the worker did not stop within shutdown_timeout_s=%g s: exiting now; messages it had not "
                "committed are processed again after a restart", seconds)
        _exit_now(code)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def settings_env(s: Settings) -> dict[str, str]:
    """Environment variables that reproduce ``s`` in a child process (secrets included,
    passed only through the child's environment)."""
    env = {}
    for f in fields(s):
        if f.name == "model_params" and getattr(s, "_params_defaulted", False):
            continue  # left out, as it was: the child computes each model's own (profiles' too)
        v = getattr(s, f.name)
        if isinstance(v, Secret):
            v = v.reveal()
        env[env_name(f.name)] = v if isinstance(v, str) else json.dumps(v)
    return env


def spawn_worker(
    s: Settings, roles: tuple[str, ...] = ("model", "explain", "change"), log_file: str | None = None,
    loglevel: str = "info",
) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    cmd = [sys.executable, "-m", "streamxai.cli", "worker", "--roles", ",".join(roles), "--loglevel", loglevel]
    if not log_file:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    with open(log_file, "ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def stop_worker(proc: subprocess.Popen, timeout: float = 30.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode
