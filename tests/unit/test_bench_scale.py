"""The scaling benchmark's own arithmetic (``tests/benchmarks/bench_scale.py``), without a broker:
how busy the cores were over a run's output window, what the split of the work over the workers
allows, and the notes that say what held a ratio back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_scale import CpuSampler, Run, bound_note, cores  # noqa: E402


def _sampler(samples):
    s = CpuSampler([])
    s.samples = samples
    return s


def test_the_cores_busy_are_read_between_the_samples_inside_the_output_window():
    # (epoch s, workers' CPU s, broker's, this process's, the machine's): 1.5 cores of workers,
    # 0.25 of broker, 0.05 of this process and 0.1 of others between t=10 and t=12; the samples
    # outside the window (the start, the tail) are far busier or idler and must not count
    samples = [(9.0, 0.0, 0.0, 0.0, 0.0), (10.0, 1.0, 0.1, 0.1, 1.5)]
    samples += [(10.0 + i / 10, 1.0 + 0.15 * i, 0.1 + 0.025 * i, 0.1 + 0.005 * i, 1.5 + 0.19 * i) for i in range(1, 21)]
    samples += [(13.0, 9.0, 1.0, 1.0, 12.0)]
    workers, broker, others = _sampler(samples).busy(10.0, 12.0)
    assert workers == pytest.approx(1.5) and broker == pytest.approx(0.25) and others == pytest.approx(0.1)


def test_a_window_too_short_to_tell_gives_none_and_the_run_falls_back_to_its_whole_span():
    assert _sampler([(10.0, 0, 0, 0, 0), (10.2, 0.2, 0, 0, 0.2)]).busy(10.0, 10.2) is None
    r = Run(events=1000, wall=1.0, span=2.0, workers_cpu=[1.0, 0.6], broker_cpu=0.4, own_cpu=0.0, machine=2.2,
            window=None)
    assert r.cores_used("workers") == pytest.approx(0.8) and r.cores_used("others") == pytest.approx(0.1)
    r.window = (1.7, 0.2, 0.05)
    assert r.cores_used("workers") == 1.7 and r.cores_used("broker") == 0.2 and r.cores_used("others") == 0.05


def test_the_split_allows_the_workers_cpu_over_the_busiest_workers():
    r = Run(events=1000, wall=1.0, span=1.0, workers_cpu=[2.0, 1.0], broker_cpu=0.1, own_cpu=0.0, machine=3.1)
    assert r.split_allows() == pytest.approx(1.5)
    note = bound_note(r, base_rate=500.0, n_workers=2)
    assert "uneven: the busiest worker does 1.33x the mean worker's work, the split allows 1.50x" in note
    assert bound_note(r, base_rate=500.0, n_workers=1) == ""
    even = Run(events=1000, wall=1.0, span=1.0, workers_cpu=[1.0, 1.05], broker_cpu=0.1, own_cpu=0.0, machine=2.15)
    assert "uneven" not in bound_note(even, base_rate=500.0, n_workers=2)


def test_a_run_on_all_the_cores_says_what_they_allow_and_the_brokers_share():
    n = cores()
    r = Run(events=3000, wall=1.0, span=1.0, workers_cpu=[0.8 * n / 2] * 2, broker_cpu=0.2 * n, own_cpu=0.0,
            machine=float(n), window=(0.8 * n, 0.2 * n, 0.0))
    assert r.cpu_bound
    note = bound_note(r, base_rate=1000.0, n_workers=2)
    # n cores over (workers' 0.8 n + broker's 0.2 n) CPU seconds for 3000 events: 3000 events/s, 3x the baseline
    assert "CPU-bound: the cores allow 3.00x at this CPU per event, the broker takes 20% of it" in note
    r.window = (0.5 * n, 0.1 * n, 0.0)
    assert not r.cpu_bound and "CPU-bound" not in bound_note(r, base_rate=1000.0, n_workers=2)
