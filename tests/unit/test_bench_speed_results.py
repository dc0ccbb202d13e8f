"""bench_speed.py --kafka's results file carries the figure it prints: the median of the rounds'
own ratios to the reference, not a ratio of medians."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_the_worker_results_carry_the_median_of_the_rounds_ratios(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setattr(sys, "argv", ["tests/benchmarks/bench_speed.py", "--kafka"])
    import bench_speed

    # three rounds in which the machine moved: each round's worker is 1.2x its reference, while the
    # medians of each side taken apart give 1.5x
    rounds = {"cpu_ref": [2.0, 3.0, 2.5], "cpu_k": [2.4, 3.6, 3.75], "cpu_in": [2.2, 3.3, 2.75]}
    assert bench_speed._over_ref(rounds, "cpu_k") == pytest.approx([1.2, 1.2, 1.5])
    measured = {"hat": {"cpu_ref": 2.5, "cpu_in": 2.75, "cpu_k": 3.6, "cpu_k_over_ref": 1.2, "cpu_in_over_ref": 1.1}}
    path = bench_speed.write_worker_results(str(tmp_path / "w.json"), measured,
                                            argparse.Namespace(kafka_events=8000, kafka_repeats=3))
    rows = {r["measure"]: r for r in json.loads(Path(path).read_text())["rows"]}
    assert rows["the worker's CPU an event over the reference's, median of the rounds"]["value"] == 1.2
    assert rows["the handlers' CPU an event over the reference's, median of the rounds"]["value"] == 1.1
    assert rows["one Kafka worker (model, explain, change), CPU time"]["ratio"] == round(2.5 / 3.6, 3)
