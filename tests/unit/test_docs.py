"""The docs build with ``mkdocs --strict``, name every setting, command and schema, and every ``python``
block runs unless marked ``<!-- no-run -->`` right before its fence."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted((DOCS / "pages").rglob("*.md"))
NO_RUN = "<!-- no-run -->"
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks(path: Path) -> list[tuple[int, str, bool]]:
    """Each ``python`` block of ``path``: its line number, its code, and whether it runs."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append((text.count("\n", 0, m.start()) + 1, m.group(1), before.strip() != NO_RUN))
    return blocks


def load_hook():
    spec = importlib.util.spec_from_file_location("docs_generated", DOCS / "hooks" / "generated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bench_results(monkeypatch, *argv: str):
    """The benchmarks' results writer (``result_row``, ``write_results``) as a benchmark run with
    ``argv`` imports it (the command line goes into the results file)."""
    sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
    monkeypatch.setattr(sys, "argv", list(argv))
    try:
        from _results import result_row, write_results
    finally:
        sys.path.remove(str(ROOT / "tests" / "benchmarks"))
    return result_row, write_results


DOCUMENTS = [ROOT / "README.md", *PAGES]


def test_blocks_are_found_and_few_are_left_out():
    blocks = {p.relative_to(ROOT).as_posix(): python_blocks(p) for p in DOCUMENTS}
    runs = sum(run for bs in blocks.values() for _, _, run in bs)
    left_out = [(name, line) for name, bs in blocks.items() for line, _, run in bs if not run]
    assert any(run for _, _, run in blocks["README.md"]), "README.md has no runnable python block"
    assert runs >= 4, f"only {runs} runnable python blocks in the docs: {blocks.keys()}"
    assert len(left_out) <= runs, f"more blocks marked {NO_RUN} than run: {left_out}"


@pytest.mark.slow
@pytest.mark.parametrize("doc", [d for d in DOCUMENTS if any(run for _, _, run in python_blocks(d))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_python_blocks_run(doc, tmp_path):
    # one page's blocks run in order in one fresh interpreter, as a reader would run them in a notebook
    code = "\n\n".join(f"# {doc.name}, line {line}\n{body}" for line, body, run in python_blocks(doc) if run)
    script = tmp_path / "blocks.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"a python block of {doc.relative_to(ROOT)} failed:\n{done.stderr[-3000:]}"


def test_the_no_run_marker_is_read(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("a\n\n<!-- no-run -->\n```python\nraise SystemExit(1)\n```\n\n```python title=\"t\"\nx = 1\n```\n"
                    "\n```bash\nexit 1\n```\n", encoding="utf-8")
    assert [(line, code, run) for line, code, run in python_blocks(page)] == [
        (4, "raise SystemExit(1)\n", False), (8, "x = 1\n", True)]


@pytest.mark.slow
def test_mkdocs_builds_strict_with_the_generated_reference(tmp_path):
    if any(importlib.util.find_spec(m) is None for m in ("mkdocs", "material", "mkdocstrings_handlers.python")):
        pytest.skip("mkdocs, mkdocs-material or mkdocstrings-python is not installed here: pip install -e '.[docs]' "
                    "installs them (CI does, so the build runs there)")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(DOCS / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"

    from streamxai.cli import _parser
    from streamxai.settings import Settings

    settings = (site / "reference" / "settings.html").read_text(encoding="utf-8")
    missing = [f.name for f in dataclasses.fields(Settings) if f"<code>{f.name}</code>" not in settings]
    assert not missing, f"the settings page lacks {missing}"
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    commands = next(a for a in _parser()._actions if a.dest == "command").choices
    assert all(f"streamxai {name}" in cli for name in commands), sorted(commands)
    schemas = (site / "reference" / "schemas.html").read_text(encoding="utf-8")
    for path in (ROOT / "schemas" / "json").glob("*.json"):
        assert path.stem.rpartition(".v")[0] in schemas, path.name
    assert "<!-- generated:" not in settings + cli + schemas
    api = (site / "reference" / "api.html").read_text(encoding="utf-8")
    import streamxai

    missing = [n for n in streamxai.__all__
               if n != "__version__" and not re.search(rf'id="streamxai\.[a-z_.]+\.{n}"', api)]
    assert not missing, f"the Python API page (reference/api.md) lacks {missing}"


def test_generated_settings_table_follows_the_code():
    from streamxai.settings import Settings

    table = load_hook().settings_md()
    for f in dataclasses.fields(Settings):
        row = next(line for line in table.splitlines() if line.startswith(f"| `{f.name}` |"))
        if f.metadata.get("secret"):
            assert "secret, not shown" in row
        assert f.metadata["help"].split(" ")[0] in row


def test_schema_page_shows_each_message_s_newest_fields(tmp_path):
    (tmp_path / "ping.v1.json").write_text(json.dumps({"title": "old", "properties": {"gone": {"type": "string"}}}))
    (tmp_path / "ping.v2.json").write_text(json.dumps({
        "title": "a ping", "required": ["n"], "additionalProperties": False,
        "properties": {"n": {"type": "integer", "minimum": 0, "description": "how many"},
                       "tag": {"type": ["string", "null"]},
                       "raw": {"type": ["string", "null"], "contentEncoding": "base64"}}}))
    page = load_hook().schemas_md(tmp_path)
    assert "| [`ping`](#ping) | `ping/v2` | v1 |" in page
    assert "| `n` | integer | yes | ≥ `0` | how many |" in page
    assert "| `tag` | string or null |  |  |  |" in page
    assert "| `raw` | string (base64) or null |  |  |  |" in page  # bytes, as the schema file says
    assert "gone" not in page and "Fields not listed here are refused." in page


def test_performance_page_reads_what_the_results_writer_writes(tmp_path, monkeypatch):
    hook = load_hook()
    assert "No results file" in hook.performance_md(tmp_path)
    result_row, write_results = _bench_results(monkeypatch, "tests/benchmarks/bench_x.py", "--events", "5")
    rows = [result_row("model A", "fast path", 1500.0, "events/s", baseline=500.0),
            result_row("model A", "memory", 12.5, "MiB")]
    write_results(tmp_path / "bench_x.json", "bench_x", "A test benchmark", "the same loop without us", rows)
    page = hook.performance_md(tmp_path)
    assert "## A test benchmark" in page and "`python tests/benchmarks/bench_x.py --events 5`" in page
    assert "| model A | fast path | 1,500 | events/s | 500 | 3 |" in page
    assert "| model A | memory | 12.5 | MiB |  |  |" in page
    assert "Baseline: the same loop without us" in page
    (tmp_path / "bench_y.json").write_text('{"rows": []}')
    with pytest.raises(ValueError, match=r"bench_y.json: not a results file"):
        hook.performance_md(tmp_path)
    with pytest.raises(ValueError, match="baseline 0 must be above 0"):
        result_row("m", "x", 1.0, "s", baseline=0)


def test_performance_page_shows_bench_restart_s_medians_against_its_baseline(tmp_path, monkeypatch):
    import argparse

    from streamxai.settings import AGRAWAL_FEATURES, Settings

    monkeypatch.setattr(sys, "argv", ["tests/benchmarks/bench_restart.py", "--repeat", "3"])
    monkeypatch.setattr(sys, "path", list(sys.path))  # the benchmark puts its folders on the path
    spec = importlib.util.spec_from_file_location("bench_restart", ROOT / "tests" / "benchmarks" / "bench_restart.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    keys = [key for key, _, _ in bench.PARTS]

    def run(total: float, faust: float | None, replayed: int) -> dict:
        return {**dict.fromkeys(keys, 0.0), "total": total, "first": total / 2, "faust": faust,
                "model_replay": replayed / 1000, "replayed_events": replayed, "restored": 20}

    runs = {False: [run(12.0, 3.0, 900), run(10.0, 3.2, 800), run(14.0, 2.8, 1000)],
            True: [run(6.0, 3.1, 0), run(4.0, None, 0), run(5.0, 2.9, 0)]}
    args = argparse.Namespace(streams=10, events=2000, more=10, repeat=3)
    bench.write_restart_results(tmp_path / "bench_restart.json", runs, args, Settings(features=list(AGRAWAL_FEATURES)))
    page = load_hook().performance_md(tmp_path)
    case = "10 streams x 2,000 events, checkpoints at stop"
    assert "`python tests/benchmarks/bench_restart.py --repeat 3`" in page
    assert f"| {case} | process start -> new explanations of every stream (median) | 5 | s | 12 | 0.417 |" in page
    # a run whose log lacks the "Worker ready" line is left out of its part's median
    assert f"| {case} | Faust start-up (process start -> Worker ready) (median) | 3 | s | 3 | 1 |" in page
    # parts at 0 in the baseline have no baseline (a ratio needs one above 0)
    assert f"| {case} | events replayed (model) (median) | 0 | events | 900 | 0 |" in page
    assert f"| {case} | explain: checkpoint reads (median) | 0 | s |  |  |" in page
    doc = json.loads((tmp_path / "bench_restart.json").read_text())
    assert doc["details"]["streams"] == 10 and doc["details"]["restarts of each kind (repeat)"] == 3


def test_sizing_page_reads_what_bench_scale_and_bench_streams_write(tmp_path, monkeypatch):
    hook = load_hook()
    for section in (hook.sizing_cores_md, hook.sizing_workers_md, hook.sizing_groups_md):
        assert "No `docs/results/bench_scale.json` yet" in section(tmp_path)
    assert "tests/benchmarks/bench_streams.py" in hook.sizing_memory_md(tmp_path)
    result_row, write_results = _bench_results(monkeypatch, "tests/benchmarks/bench_scale.py")
    write_results(tmp_path / "bench_scale.json", "bench_scale", "Scaling", "one worker", [
        result_row("HAT, iPFI only", "events/s per worker core", 2000.0, "events/s"),
        result_row("HAT, iPFI only", "events/s per core, broker included", 1600.0, "events/s"),
        result_row("4 partitions, 4 stream(s), 1 worker", "events/s", 900.0, "events/s"),
        result_row("4 partitions, 4 stream(s), 2 workers", "events/s", 1620.0, "events/s", baseline=900.0),
        result_row("4 partitions, 4 stream(s), 2 workers", "ratio the cores allow at its CPU per event", 1.8, "x"),
        result_row("4 partitions, 4 stream(s), 2 workers", "ratio the split allows", 1.9, "x"),
        result_row("4 partitions, 4 stream(s), 2 workers", "cores busy: workers, broker, others", 1.95, "of 2"),
        result_row("one stream, explain_groups 2, 2 worker(s)", "events/s", 1200.0, "events/s", baseline=800.0),
    ])
    cores = hook.sizing_cores_md(tmp_path)
    assert "`python tests/benchmarks/bench_scale.py`" in cores and "baseline: one worker." in cores
    assert "| HAT, iPFI only | 2,000 | 1,600 |" in cores
    # the worked example divides the page's target rate by the first row's events per core
    need = hook.SIZING_TARGET / 2000.0
    assert f"need {need:.1f} cores of workers" in cores
    assert f"headroom, {math.ceil(need * (1 + hook.SIZING_HEADROOM))}." in cores
    # with a soak's results, its last interval's rate (trees grown) instead of a young stream's
    write_results(tmp_path / "bench_soak.json", "bench_soak", "Soak", "its warm-up", [
        result_row("200,000 events", hook.SOAK_RATE, 180.0, "events/cpu-s"),
        result_row("1,000,000 events", hook.SOAK_RATE, 125.0, "events/cpu-s", baseline=180.0)])
    cores = hook.sizing_cores_md(tmp_path)
    assert "| HAT, iPFI only | 2,000 | 1,600 |" in cores
    assert "at the 125 events per worker CPU second of the soak's last interval (1,000,000 events" in cores
    assert f"need {hook.SIZING_TARGET / 125.0:.1f} cores of workers" in cores
    (tmp_path / "bench_soak.json").unlink()
    workers = hook.sizing_workers_md(tmp_path)
    assert "| 4 partitions, 4 stream(s), 2 workers | 1,620 | 900 | 1.8 | 1.8 | 1.9 | 1.95 of 2 |" in workers
    assert "1 worker |" not in workers and "explain_groups" not in workers  # the baselines' own rows, the groups'
    groups = hook.sizing_groups_md(tmp_path)
    assert "| one stream, explain_groups 2, 2 worker(s) | 1,200 | 800 | 1.5 |  |  |  |" in groups
    assert "partitions" not in groups.split("\n", 2)[2]
    write_results(tmp_path / "bench_streams.json", "bench_streams", "Many streams", "one stream", [
        result_row("hat, 1000 streams", "MB per stream", 0.8, "MB"),
        result_row("hat, 1000 streams", "events/s", 700.0, "events/s", baseline=900.0),
        result_row("logistic, 100 streams", "MB per stream", 0.1, "MB"),
        result_row("hat, 1000 streams", "worker: stop s", 4.5, "s", baseline=15.0),
        result_row("hat, 1000 streams, max_live_streams=100", "MB per stream", 0.9, "MB"),
        result_row("hat, 1000 streams, max_live_streams=100", "in process: peak MB", 66.0, "MB", baseline=60.0)])
    memory = hook.sizing_memory_md(tmp_path)
    assert "| case | MB per stream (MB) | events/s (events/s) |" in memory
    assert "| hat, 1000 streams | 0.8 | 700 |" in memory and "| logistic, 100 streams | 0.1 |  |" in memory
    assert "stop" not in memory and "max_live_streams" not in memory  # the limits' table has them
    limits = hook.sizing_limits_md(tmp_path)
    assert "| hat, 1000 streams | worker: stop s | 4.5 s | 15 s | 0.3 |" in limits
    assert "| hat, 1000 streams, max_live_streams=100 | MB per stream | 0.9 MB |  |  |" in limits
    assert "| hat, 1000 streams, max_live_streams=100 | in process: peak MB | 66 MB | 60 MB | 1.1 |" in limits
    assert "| hat, 1000 streams | MB per stream |" not in limits


def test_sizing_page_reads_what_bench_soak_writes(tmp_path, monkeypatch):
    hook = load_hook()
    assert "No `docs/results/bench_soak.json` yet" in hook.sizing_soak_md(tmp_path)
    result_row, write_results = _bench_results(monkeypatch, "tests/benchmarks/bench_soak.py", "--events", "500000")
    write_results(tmp_path / "bench_soak.json", "bench_soak", "Soak: one worker, 500,000 events: flat after 200,000",
                  "the row at the warm-up's end", [
                      result_row("200,000 events", "worker RSS", 190.0, "MB"),
                      result_row("500,000 events", "worker RSS", 199.0, "MB", baseline=190.0),
                      result_row("500,000 events", hook.SOAK_RATE, 238.0, "events/cpu-s")])
    page = hook.sizing_soak_md(tmp_path)
    assert page.startswith("Soak: one worker, 500,000 events: flat after 200,000.") and "--events 500000" in page
    assert f"| case | worker RSS (MB) | {hook.SOAK_RATE} (events/cpu-s) |" in page
    assert "| 200,000 events | 190 |  |" in page and "| 500,000 events | 199 | 238 |" in page


def test_production_cluster_page_reads_what_bench_chaos_writes(tmp_path, monkeypatch):
    hook = load_hook()
    assert "No `docs/results/bench_chaos.json` yet" in hook.chaos_md(tmp_path)
    result_row, write_results = _bench_results(monkeypatch, "tests/benchmarks/bench_chaos.py", "--nodes", "3")
    write_results(tmp_path / "bench_chaos.json", "bench_chaos", "Chaos on a cluster of 3 brokers: equal",
                  "the in-process reference", [result_row("predictions", "messages", 120, "messages"),
                                               result_row("predictions", "missing", 0, "messages")])
    page = hook.chaos_md(tmp_path)
    assert page.startswith("Chaos on a cluster of 3 brokers: equal.") and "--nodes 3" in page
    assert "| predictions | 120 | 0 |" in page


def test_production_cluster_page_reads_what_the_rebalance_run_writes(tmp_path, monkeypatch):
    hook = load_hook()
    assert "No `docs/results/bench_chaos_rebalance.json` yet" in hook.chaos_rebalance_md(tmp_path)
    result_row, write_results = _bench_results(monkeypatch, "tests/benchmarks/bench_chaos.py", "--workers", "3")
    write_results(tmp_path / "bench_chaos_rebalance.json", "bench_chaos_rebalance", "Rebalances under load: equal",
                  "the in-process reference", [
                      result_row("alerts (pages)", "distinct", 4, "messages"),
                      result_row("after SIGTERM w2, started again at 39 s", "longest wait for a stream's next "
                                 "prediction", 7.5, "s"),
                      result_row("recovery of w2", "longest recovery", 3.2, "s")])
    page = hook.chaos_rebalance_md(tmp_path)
    assert page.startswith("Rebalances under load: equal.") and page.count("--workers 3") == 1
    assert "| alerts (pages) | 4 |" in page and "| after SIGTERM w2, started again at 39 s | 7.5 |" in page
    assert "| recovery of w2 | 3.2 |" in page and page.count("| case |") == 3
