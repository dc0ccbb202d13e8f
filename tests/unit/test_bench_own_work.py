"""bench_speed.py --handlers' split of a worker's handlers' CPU (``_own_work.py``): each handler's own
work is its time less the core calls made in it, each timer's clock reads taken out, and the
classes it times are as they were afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def own_work_module(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _own_work

    return _own_work


class _Clock:
    """A clock whose every read costs ``read`` seconds; ``work(s)`` spends ``s`` seconds."""

    def __init__(self, read: float):
        self.t, self.read = 0.0, read

    def __call__(self) -> float:
        now = self.t
        self.t += self.read
        return now

    def work(self, s: float) -> None:
        self.t += s


def test_a_handlers_own_work_is_its_time_less_the_core_calls_in_it_and_the_clock_reads(own_work_module):
    clock = _Clock(read=0.5)

    class Core:
        def work(self):
            clock.work(2.0)

    class Handler:
        def on_message(self):
            clock.work(5.0)
            Core().work()
            Core().work()

    spent, calls, inside = {}, {}, {}
    with own_work_module.timed(spent, calls, inside, handlers=((Handler, ("model", "on_message")),),
                               core=((Core, ("the join", "work")),), clock=clock):
        Handler().on_message()
        Core().work()  # a core call outside any handler counts to the core, not to a handler
    assert calls == {"model": 1, "core:the join": 3}
    assert inside["model"] == [5.0, 2]  # each core call's span holds one of its two reads
    got = own_work_module.parts(spent, calls, inside, read=0.5, cpu=20.0, n=1)
    assert got["model"] == 5.0 and got["core:the join"] == got["core"] == 6.0 and got["total"] == 20.0
    assert Handler.__dict__["on_message"].__name__ == "on_message" and Core.__dict__["work"].__name__ == "work"


def test_own_work_splits_a_run_of_every_handler_and_leaves_the_classes_as_they_were(own_work_module, tmp_path):
    import bench_speed
    from helpers.pipeline_runs import make_settings
    from streamxai.handlers import ModelHandler

    evs, fields = bench_speed.worker_stream("hat", 40)
    got = own_work_module.own_work(make_settings("127.0.0.1:1", str(tmp_path / "run"), **fields), evs)
    assert {"intake", "model", "explain", "change"} <= set(got)
    assert {"core:the join", "core:the explainers", "core:the change test"} <= set(got)
    assert all(got[k] > 0 for k in ("core:the join", "core:the explainers", "core:the change test", "total"))
    assert "on_message" not in ModelHandler.__dict__  # the skeleton's again, not a timed one left behind
