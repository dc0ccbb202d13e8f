"""What a worker's event loops run, counted: every callback a loop runs (asyncio's
``Handle._run``: a task's step, a future's done-callback, a ``call_soon``), by thread and by
what it is, and each thread's CPU time. A benchmark-only probe (``_cpu_profile.py --census``):
the count costs about a microsecond per callback, so the profiled run's CPU is not the
worker's usual one; the counts are what the probe is for.

>>> import asyncio
>>> start()
>>> async def two_turns():
...     await asyncio.sleep(0)
>>> asyncio.run(two_turns())
>>> counts = stop()["handles"]
>>> sum(n for k, n in counts.items() if "two_turns" in k)  # its first step, and one after the sleep
2
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from collections import Counter
from typing import Any

_state: dict[str, Any] = {"on": False, "counts": Counter(), "cpu0": {}, "original": None}


def _thread_cpu() -> dict[str, float]:
    """CPU seconds of each of this process's threads (by its Python name where it has one), in
    user mode (``NAME user``) and in the kernel (``NAME sys``: system calls, e.g. a socket's write
    to the broker on the loopback, whose TCP work the kernel does on the writer's account)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        name = names.get(int(tid), f"native {tid}")
        for mode, field in (("user", fields[11]), ("sys", fields[12])):
            out[f"{name} {mode}"] = out.get(f"{name} {mode}", 0.0) + int(field) / tick
    return out


def _where(coro: Any) -> str:
    """Where a suspended coroutine stands: its innermost awaited coroutine first."""
    chain = []
    while coro is not None and len(chain) < 12:
        code = getattr(coro, "cr_code", None) or getattr(coro, "ag_code", None) or getattr(coro, "gi_code", None)
        if code is None:
            break
        chain.append(code.co_qualname)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None) or getattr(coro, "gi_yieldfrom", None)
    return " <- ".join(reversed(chain[1:])) if len(chain) > 1 else ""


def name(callback: Any) -> str:
    """What ``callback`` (a loop's handle's callable) runs.

    A callback is named for what it runs:

    - a task's step or wake-up: ``step``/``wakeup`` and the task's coroutine, then where it stood
      (the innermost coroutine or async generator it awaited, ``<-`` the one awaiting it), e.g.
      ``step Agent._execute_actor @ Queue.get <- Stream.__aiter__ <- forward``;
    - anything else: the callable's qualified name (a ``functools.partial``'s function).

    Started by :func:`start`, read by :func:`stop`: ``{"handles": {"thread|name": count},
    "threads": {thread: cpu seconds}}`` over the span between.
    """
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        kind = "wakeup" if getattr(callback, "__name__", "") == "task_wakeup" else "step"
        coro = owner.get_coro()
        label = getattr(getattr(coro, "cr_code", None), "co_qualname", type(coro).__name__)
        where = _where(coro)
        return f"{kind} {label}" + (f" @ {where}" if where else "")
    if isinstance(callback, functools.partial):
        callback = callback.func
    return getattr(callback, "__qualname__", type(callback).__name__)


def _thread_loops() -> list[tuple[str, Any]]:
    """``(thread name, event loop)`` of the threads other than the main one that run a loop of
    their own (mode's service threads: Faust's Kafka consumer runs on one)."""
    out = []
    for t in threading.enumerate():
        loop = getattr(getattr(t, "service", None), "thread_loop", None)
        if t is not threading.main_thread() and loop is not None and not loop.is_closed():
            out.append((t.name, loop))
    return out


def _profile_threads(on: bool) -> dict[str, list]:
    """Start (``on``) or stop cProfile in each thread loop's own thread; when stopped, the
    functions that thread spent most time in (``[file:line(function), calls, own s, cumulative s]``)."""
    import cProfile
    import pstats

    out: dict[str, list] = {}
    for tname, loop in _thread_loops():
        if on:
            prof = _state.setdefault("profiles", {})[tname] = cProfile.Profile(time.thread_time)  # its CPU, not the GIL's waits
            loop.call_soon_threadsafe(prof.enable)
            continue
        prof = _state.get("profiles", {}).pop(tname, None)
        if prof is None:
            continue
        done = threading.Event()

        def disable(prof: Any = prof, done: threading.Event = done) -> None:
            prof.disable()
            done.set()

        loop.call_soon_threadsafe(disable)
        if not done.wait(5.0):
            continue
        stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
        rows = [[f"{f[0].rsplit('/', 1)[-1]}:{f[1]}({f[2]})", st[1], st[2], st[3]] for f, st in stats.items()]
        out[tname] = sorted(rows, key=lambda r: -r[2])[:40]
    return out


def start(profile_threads: bool = False) -> None:
    """Count from now on (every loop of every thread); with ``profile_threads``, also run cProfile
    in the threads other than the main one that run a loop (a cost of its own in those threads)."""
    if _state["original"] is None:
        original = _state["original"] = asyncio.events.Handle._run

        def _run(handle: Any) -> None:
            if _state["on"]:
                _state["counts"][f"{threading.current_thread().name}|{name(handle._callback)}"] += 1
            original(handle)

        asyncio.events.Handle._run = _run  # type: ignore[method-assign]
    _state["counts"].clear()
    _state["cpu0"] = _thread_cpu()
    _state["on"] = True
    if profile_threads:
        _profile_threads(True)


def stop() -> dict[str, dict[str, float]]:
    """Stop counting; what was counted since :func:`start`."""
    _state["on"] = False
    cpu0, cpu1 = _state["cpu0"], _thread_cpu()
    return {"handles": dict(_state["counts"]),
            "threads": {t: cpu1[t] - cpu0.get(t, 0.0) for t in cpu1},
            "thread_profiles": _profile_threads(False)}


def print_census(data: dict[str, dict[str, float]], events: int, indent: str = "    ", top: int = 25) -> None:
    """Per event: each thread's CPU and callbacks, and the ``top`` callbacks by count."""
    handles, threads = data["handles"], data["threads"]
    per_thread: Counter[str] = Counter()
    for key, n in handles.items():
        per_thread[key.split("|", 1)[0]] += n
    print(f"{indent}event loops: {sum(handles.values()) / events:.1f} callbacks per event; per thread "
          "(CPU us/event in user mode, in the kernel; callbacks/event):")
    for t in sorted({k.rsplit(" ", 1)[0] for k in threads}, key=lambda t: -threads[f"{t} user"] - threads[f"{t} sys"]):
        user, kernel = threads[f"{t} user"], threads[f"{t} sys"]
        if user + kernel > 0 or per_thread[t]:
            print(f"{indent}  {t:32s} {user / events * 1e6:7.1f} {kernel / events * 1e6:7.1f}  "
                  f"{per_thread[t] / events:6.2f}")
    print(f"{indent}callbacks per event, most run first:")
    for key, n in Counter(handles).most_common(top):
        print(f"{indent}  {n / events:6.2f}  {key}")
    for tname, rows in data.get("thread_profiles", {}).items():
        print(f"{indent}thread {tname} under cProfile (its CPU time, cProfile's cost included), functions by own time "
              "(calls/event, own us/event, cumulative us/event):")
        for where, calls, own, cum in rows[:top]:
            print(f"{indent}  {calls / events:7.2f} {own / events * 1e6:7.1f} {cum / events * 1e6:7.1f}  {where}")
