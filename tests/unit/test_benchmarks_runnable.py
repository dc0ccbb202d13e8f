"""The on-demand benchmarks stay runnable: each one parses ``--help`` after importing everything it uses.
Each backs a claim of the docs or the README (speed, scale, streams, soak, chaos, real data, faults,
papers, sources, the iXAI comparison, local attributions, labels that come later, change events)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHES = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


def test_there_are_benchmarks():
    assert {b.stem for b in BENCHES} == {
        "bench_change", "bench_chaos", "bench_faults", "bench_ixai", "bench_labels", "bench_local", "bench_papers",
        "bench_real", "bench_restart", "bench_scale", "bench_soak", "bench_sources", "bench_speed", "bench_streams"}


@pytest.mark.parametrize("bench", BENCHES, ids=lambda p: p.name)
@pytest.mark.slow
def test_benchmark_imports_and_parses_help(bench):
    done = subprocess.run([sys.executable, str(bench), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{bench.name} --help failed:\n{done.stderr[-2000:]}"
    assert "usage:" in done.stdout
