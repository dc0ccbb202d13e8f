"""Where a worker's handlers spend CPU beside the core: :func:`own_work` runs
:func:`~_worker_runs.in_process_worker` with each handler's entry point and the core's (the label
join, the stream explainer's step, the change test's update) timed, and gives each handler's own
work (its CPU less the core's calls made in it) and the core's calls, in seconds an event. The
in-process reference makes the same core calls, so the handlers' own work is what a worker adds to
it before any message reaches Kafka. Timers rather than samples: a sampling profiler counts a long
C call (a compiled kernel, a river model) to whichever Python function is entered next, often a
handler's, while a clock read before and after each call counts it to the call itself; the reads'
own cost is measured and taken out.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from _worker_runs import in_process_worker
from streamxai.core.change import StreamChangeDetector
from streamxai.core.labels import LabelJoin
from streamxai.core.stream import StreamExplainer
from streamxai.handlers import ChangeHandler, ExplainHandler, IntakeHandler, ModelHandler
from streamxai.settings import Settings

__all__ = ["CORE", "HANDLERS", "own_work", "parts", "read_cost", "timed"]

#: each handler's entry point as in_process_worker calls it (they never call each other)
HANDLERS = ((IntakeHandler, ("intake", "on_batch")), (ModelHandler, ("model", "on_message")),
            (ExplainHandler, ("explain", "on_message")), (ChangeHandler, ("change", "on_message")))
#: the core's entry points a handler calls for an event: the same calls the reference makes
CORE = ((LabelJoin, ("the join", "on_features")), (LabelJoin, ("the join", "on_label")),
        (StreamExplainer, ("the explainers", "step")), (StreamChangeDetector, ("the change test", "update")))


def read_cost(n: int = 20_000) -> float:
    """Seconds one ``time.process_time()`` takes (a system call)."""
    t0 = time.process_time()
    for _ in range(n):
        time.process_time()
    return (time.process_time() - t0) / n


@contextlib.contextmanager
def timed(spent: dict[str, float], calls: dict[str, int], inside: dict[str, list], handlers: tuple = HANDLERS,
          core: tuple = CORE, clock: Callable[[], float] = time.process_time) -> Iterator[None]:
    """While inside, every entry point of ``handlers`` and ``core`` (:data:`HANDLERS`,
    :data:`CORE`) adds the seconds ``clock`` gives for its calls to ``spent`` and its calls to
    ``calls`` under its name (``core:<name>`` for the core's); a core call also adds its seconds
    and itself to ``inside`` under the handler it was made in."""
    saved = []
    handler: list[str] = [""]

    def wrap(cls: type, method: str, name: str, is_core: bool) -> None:
        f = getattr(cls, method)  # the handlers' on_message is the skeleton's, inherited

        def call(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            outer = handler[0]
            if not is_core:
                handler[0] = name
            t0 = clock()
            try:
                return f(*args, **kwargs)
            finally:
                took = clock() - t0
                handler[0] = outer
                spent[name] = spent.get(name, 0.0) + took
                calls[name] = calls.get(name, 0) + 1
                if is_core:
                    made = inside.setdefault(outer, [0.0, 0])
                    made[0] += took
                    made[1] += 1

        saved.append((cls, method, cls.__dict__.get(method)))
        setattr(cls, method, call)

    for cls, (name, method) in handlers:
        wrap(cls, method, name, False)
    for cls, (name, method) in core:
        wrap(cls, method, f"core:{name}", True)
    try:
        yield
    finally:
        for cls, method, own in reversed(saved):
            if own is None:
                delattr(cls, method)
            else:
                setattr(cls, method, own)


def own_work(s: Settings, events: list) -> dict[str, float]:
    """CPU seconds an event over ``events``: ``total`` (the run's), each handler's own work by its
    name (``intake``, ``model``, ``explain``, ``change``: its calls less the core's calls made in
    them), ``core`` and the core's calls by part (``core:the join`` ...).

    A timed call costs two clock reads, one of them inside its own span: a core call's span less
    one read is the core's, and a handler's own work is its span less the spans of the core calls
    made in it, less one read for each of those and for each of its own calls. The parts then add
    up to ``total`` but for the work outside any entry point (``in_process_worker``'s loop) and
    the timers' calls themselves."""
    spent: dict[str, float] = {}
    calls: dict[str, int] = {}
    inside: dict[str, list] = {}
    read = read_cost()
    with timed(spent, calls, inside):
        _, cpu = in_process_worker(s, events)
    return parts(spent, calls, inside, read, cpu, len(events))


def parts(spent: dict[str, float], calls: dict[str, int], inside: dict[str, list], read: float, cpu: float,
          n: int) -> dict[str, float]:
    """:func:`own_work`'s parts from what :func:`timed` counted over ``n`` events, ``read`` the
    seconds of one clock read and ``cpu`` the run's seconds.

    >>> spent = {"model": 10.0, "core:the join": 7.0}  # 2 calls of the handler, 3 of the join inside them
    >>> parts(spent, {"model": 2, "core:the join": 3}, {"model": [7.0, 3]}, 0.5, 11.0, 2)
    {'total': 5.5, 'core': 2.75, 'core:the join': 2.75, 'model': 0.25}
    """
    core = {k: spent[k] - read * calls[k] for k in spent if k.startswith("core:")}
    out = {"total": cpu / n, "core": sum(core.values()) / n, **{k: v / n for k, v in core.items()}}
    for name in spent.keys() - core.keys():
        core_s, core_calls = inside.get(name, (0.0, 0))
        out[name] = (spent[name] - core_s - read * (calls[name] + core_calls)) / n
    return out
