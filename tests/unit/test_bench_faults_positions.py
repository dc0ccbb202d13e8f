"""The fault benchmark's seeds: a range of seeds never run before draws fault positions of its own,
so a held-out range is judged on places the rules were not tuned on."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_faults  # noqa: E402


def test_each_seed_draws_its_own_fault_position_whatever_the_range_it_runs_in():
    tuning = bench_faults.fault_spots("weather", "hat", list(range(9500, 9506)), 23_007, 2000)
    held_out = bench_faults.fault_spots("weather", "hat", list(range(9506, 9512)), 23_007, 2000)
    assert not {at for at, _ in tuning} & {at for at, _ in held_out}, (tuning, held_out)
    alone = bench_faults.fault_spots("weather", "hat", [9503], 23_007, 2000)
    assert alone[0] in tuning  # a seed's position does not depend on the seeds run beside it
    assert all(3000 <= at < 23_007 - 2000 - 1 for at, _ in tuning + held_out)
