"""Installing from a wheel into a fresh virtualenv, as users do: ``import streamxai``, ``streamxai broker
start`` and the container image's command (``deploy/Dockerfile``), with no source checkout; the wheel
adds one package, ``streamxai``. The broker uses the Kafka jars already resolved (``STREAMXAI_KAFKA_LIBS``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

from helpers.pipeline_runs import collect
from streamxai.kafka.io import produce_events
from streamxai.local.broker import default_libs_dir
from streamxai.local.demo_stream import agrawal_events
from streamxai.local.ports import free_ports
from streamxai.settings import AGRAWAL_FEATURES, Settings

ROOT = Path(__file__).resolve().parents[2]


def dockerfile_command(path: Path = ROOT / "deploy" / "Dockerfile") -> tuple[dict[str, str], list[str]]:
    """The ENV and the ENTRYPOINT + CMD of the Dockerfile's last stage.

    >>> env, cmd = dockerfile_command()
    >>> cmd, env["STREAMXAI_WEB_HOST"]
    (['streamxai', 'worker'], '0.0.0.0')
    """
    text = path.read_text()
    last = text[text.rindex("\nFROM "):].replace("\\\n", " ")
    env: dict[str, str] = {}
    entry: list[str] = []
    cmd: list[str] = []
    for line in last.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "ENV":
            env.update(re.findall(r"(\w+)=(\S+)", rest))
        elif word == "ENTRYPOINT":
            entry = json.loads(rest)
        elif word == "CMD":
            cmd = json.loads(rest)
    return env, entry + cmd


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 600), **kw)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def test_a_wheel_runs_the_broker_and_the_image_command_without_a_checkout(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in ("pipeline", "agents", "schemas"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(tmp_path / "wheels"), str(src)])
    (wheel,) = (tmp_path / "wheels").glob("streamxai-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    assert {"streamxai/local/broker_files/pom.xml", "streamxai/local/broker_files/log4j2.properties",
            "streamxai/schemas/json/feature_event.v1.json", "streamxai/agents/model_agent.py"} <= shipped, sorted(shipped)
    tops = {name.split("/")[0] for name in shipped}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"streamxai"}, sorted(tops)
    # the compiled kernels' sources (one extension from several .c files and their header) ship with it
    kernel_sources = {"streamxai/core/" + p.name for p in (ROOT / "pipeline" / "core").glob("_kernels*.[ch]")}
    assert "streamxai/core/_kernels.h" in kernel_sources and kernel_sources <= shipped, sorted(kernel_sources - shipped)

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
          "--only-binary=:all:", str(wheel)])
    run_dir = tmp_path / "run"  # no checkout here: the installed package is all there is
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_") and k != "PYTHONPATH"}
    where = _run([str(venv / "bin" / "python"), "-c", "import streamxai; print(streamxai.__file__, streamxai.IPFI)"],
                 cwd=run_dir, env=env)
    assert str(venv) in where.stdout and str(ROOT) not in where.stdout and "streamxai.core.explainers" in where.stdout
    site = Path(_run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=run_dir, env=env).stdout.strip())
    installed = {p.name for p in site.iterdir() if not p.name.endswith(".dist-info") and p.name != "__pycache__"}
    assert "streamxai" in installed and not installed & {"pipeline", "agents", "schemas"}, sorted(installed)
    path = _run([str(venv / "bin" / "python"), "-c", "from streamxai.core import kernels; print(kernels.PATH)"],
                cwd=run_dir, env=env).stdout.strip()
    if os.environ.get("STREAMXAI_REQUIRE_KERNEL", "") not in ("", "0"):  # CI: the wheel carries the built kernels
        assert path == "compiled"

    port, controller_port = free_ports(2)
    broker = [str(venv / "bin" / "streamxai"), "broker"]
    data = ["--data-dir", str(tmp_path / "kafka")]
    libs = {**env, "STREAMXAI_KAFKA_LIBS": str(default_libs_dir())}  # this checkout's jars: no Maven run
    _run([*broker, "start", "--port", str(port), "--controller-port", str(controller_port), "--heap", "384m", *data],
         cwd=run_dir, env=libs, timeout=180)
    worker = None
    try:
        image_env, command = dockerfile_command()
        web_port = free_ports(1)[0]
        s = Settings(bootstrap_servers=f"127.0.0.1:{port}", topic_prefix="wheel.", app_id="wheel",
                     features=list(AGRAWAL_FEATURES), explainers=["ipfi"], web_port=web_port)
        worker_env = {**env, **image_env,  # the image's settings, then what differs here
                      "STREAMXAI_BOOTSTRAP_SERVERS": s.bootstrap_servers, "STREAMXAI_TOPIC_PREFIX": s.topic_prefix,
                      "STREAMXAI_APP_ID": s.app_id, "STREAMXAI_FEATURES": json.dumps(s.features),
                      "STREAMXAI_EXPLAINERS": '["ipfi"]', "STREAMXAI_WEB_PORT": str(web_port),
                      "STREAMXAI_STATE_DIR": str(tmp_path / "state")}
        log = tmp_path / "worker.log"
        with open(log, "wb") as out:
            worker = subprocess.Popen([str(venv / "bin" / command[0]), *command[1:]], cwd=run_dir, env=worker_env,
                                      stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        produce_events(s, agrawal_events("w", 30, seed=3))
        preds = collect(s, "predictions", lambda m: len(m) >= 30, timeout=120)
        assert sorted(p["seq"] for p in preds) == list(range(30)), log.read_text()[-3000:]
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/metrics", timeout=5) as r:
            assert "streamxai_predictions_total 30.0" in r.read().decode()
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(s.shutdown_timeout_s + 15) == 0  # a bound on the wait, not a measurement
        assert "Traceback" not in log.read_text(errors="replace")
        # 30 events, checkpoint_every 2000: only the stop wrote the stream model's checkpoint
        assert len(list((tmp_path / "state" / "checkpoints" / "model").glob("*.ckpt"))) == 1
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.wait(10)
        _run([*broker, "stop", *data], cwd=run_dir, env=env, timeout=60)
