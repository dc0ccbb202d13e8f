"""Where a worker's CPU goes: a sampling profiler on CPU time, and its breakdown; run a command
under it (the benchmarks run a worker so)::

    python tests/benchmarks/_cpu_profile.py OUT -- -m streamxai.cli worker ...
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import threading
from collections import Counter

import _loop_census

INTERVAL_S = 0.004
#: the signals that start and stop sampling (real-time ones: the worker's own handlers take SIGUSR1)
START, STOP = signal.SIGRTMIN + 3, signal.SIGRTMIN + 4

#: where a frame's file lies -> its layer, first match wins (our folders, then libraries)
LAYERS = (
    ("/pipeline/core/", "core"), ("/pipeline/handlers/", "handlers"), ("/pipeline/metrics.py", "metrics"),
    ("/schemas/", "schemas"), ("/agents/", "agents"), ("/pipeline/", "pipeline"),
    ("/river/", "river"), ("/numpy/", "numpy"), ("/faust/", "faust"), ("/mode/", "faust"),
    ("/aiokafka/", "aiokafka"), ("/asyncio/", "asyncio"), ("selectors.py", "asyncio"),
)


def layer(path: str) -> str:
    for part, name in LAYERS:
        if part in path:
            return name
    return "other"


def _running_thread() -> tuple[str, object] | None:
    """The name and current frame of a thread other than the main one that is on a core
    (state ``R`` in ``/proc``), or None."""
    main = threading.main_thread()
    frames = sys._current_frames()
    for t in threading.enumerate():
        if t is main or t.native_id is None or t.ident not in frames:
            continue
        try:
            with open(f"/proc/self/task/{t.native_id}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "R":
            return t.name, frames[t.ident]
    return None


def _sampler(out: str, census: str = "") -> None:
    samples: Counter[str] = Counter()
    counted: dict = {}
    on = {"run": False}

    def sample(_sig: int, frame) -> None:  # noqa: ANN001
        if not on["run"]:
            return
        frames = []
        stage = ""
        if frame is not None and frame.f_code.co_name == "select" and frame.f_code.co_filename.endswith("selectors.py"):
            # the main thread sat in epoll: the CPU this sample stands for was another thread's
            other = _running_thread()
            if other is not None:
                stage, frame = f"thread {other[0]}", other[1]
        while frame is not None:
            code = frame.f_code
            frames.append(f"{code.co_filename}:{code.co_name}")
            if code.co_name in ("forward", "forward_fetched") and code.co_filename.endswith("_forward.py"):
                stage = str(frame.f_locals.get("stage", ""))
            frame = frame.f_back
        samples[stage + "|" + ";".join(reversed(frames))] += 1

    def start(_sig: int, _frame) -> None:  # noqa: ANN001
        samples.clear()
        on["run"] = True
        if census:
            _loop_census.start(profile_threads=census == "--census-threads")

    def stop(_sig: int, _frame) -> None:  # noqa: ANN001
        on["run"] = False
        if census:
            counted.update(_loop_census.stop())
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"interval_s": INTERVAL_S, "samples": dict(samples), **counted}, f)
        os.replace(tmp, out)

    signal.signal(signal.SIGPROF, sample)
    signal.signal(START, start)
    signal.signal(STOP, stop)
    signal.setitimer(signal.ITIMER_PROF, INTERVAL_S, INTERVAL_S)


def _part(stage: str, frames: list[str]) -> str:
    """What one sample was doing: ``<agent>: handler <layer>``, ``<agent>: send``,
    ``<agent>: receive`` or, outside the agents, the layer of the innermost frame. An agent
    awaits its handler's call inside its send (``_send(outbox, _handle(...))``), so the
    handler's frames decide first, then the call's (``_handle``: receiving), then the send's."""
    if stage.startswith("thread "):
        return f"{stage}: {layer(frames[-1].rsplit(':', 1)[0])}"
    if stage:
        if any(fr.endswith((":on_message", ":on_message_on_loop", ":on_batch")) and "/pipeline/handlers/" in fr for fr in frames):
            return f"{stage}: handler ({layer(frames[-1].rsplit(':', 1)[0])})"
        if any(fr.endswith("_forward.py:_handle") for fr in frames):
            return f"{stage}: receive, loop"
        in_send = any(fr.endswith(("_forward.py:_send", "_forward.py:_send_all")) for fr in frames)
        return f"{stage}: {'send' if in_send else 'receive, loop'}"
    return f"outside the agents: {layer(frames[-1].rsplit(':', 1)[0])}"


def breakdown(path: str) -> tuple[float, list[tuple[str, float]]]:
    """``(cpu seconds sampled, [(part, cpu seconds)])``, largest part first.

    It samples the main thread's stack every ``INTERVAL_S`` of the process's CPU time (``SIGPROF``
    from ``setitimer(ITIMER_PROF)``: time waiting in ``epoll`` is never sampled, and a C call is
    counted to the Python function that made it; a sample taken while the main thread waited in
    ``epoll`` is the CPU of another thread, and is counted to the one on a core, e.g. the Kafka
    consumer's own thread; the kernel fires the timer at most once a tick,
    so the samples give shares, which :func:`print_breakdown` scales to the CPU time measured). Sampling starts on signal ``START`` (what came before
    is dropped) and stops on ``STOP``, which writes the samples to ``OUT`` (JSON: stack -> count;
    a stack is its frames root first, each ``file:function``, with the agent loop's stage). With
    ``--census`` (before ``--``) it also counts the callbacks the event loops run and each
    thread's CPU over the same span (``_loop_census.py``), at a cost of its own per callback;
    ``--census-threads`` also runs cProfile in the other threads' loops (the consumer's).

    :func:`breakdown` groups the samples: per agent (intake, model, explain, drift) what its
    handler did (our code, by layer) and what it cost the agent to receive and send its messages
    (Faust, aiokafka), and the rest (the clients' fetch and send tasks, the event loop).
    """
    with open(path) as f:
        data = json.load(f)
    parts: Counter[str] = Counter()
    for key, n in data["samples"].items():
        stage, _, stack = key.partition("|")
        parts[_part(stage, stack.split(";"))] += n * data["interval_s"]
    total = sum(parts.values())
    return total, parts.most_common()


def print_breakdown(path: str, events: int, cpu: float, indent: str = "    ") -> None:
    """The parts of ``cpu`` seconds (the worker's, measured) over ``events``, as sampled in ``path``."""
    sampled, parts = breakdown(path)
    parts = [(p, s * cpu / sampled) for p, s in parts]
    total = cpu
    print(f"{indent}worker CPU {total / events * 1e6:.0f} us/event ({sampled / INTERVAL_S:.0f} samples); "
          "by part (us/event, share):")
    for part, secs in parts:
        if secs / total >= 0.005:
            print(f"{indent}  {part:42s} {secs / events * 1e6:7.1f}  {secs / total * 100:5.1f} %")
    ours = sum(s for p, s in parts if ": handler" in p)
    print(f"{indent}  handlers {ours / events * 1e6:.0f} us/event; transport and loop "
          f"{(total - ours) / events * 1e6:.0f} us/event ({(total - ours) / total * 100:.0f} %)")


if __name__ == "__main__":
    out, *rest = sys.argv[1:]
    census = rest[0] if rest[:1] in (["--census"], ["--census-threads"]) else ""
    sep, *rest = rest[1:] if census else rest
    if sep != "--" or rest[:1] != ["-m"]:
        raise SystemExit("usage: _cpu_profile.py OUT [--census | --census-threads] -- -m MODULE ARGS...")
    _sampler(out, census)
    sys.argv = [rest[1], *rest[2:]]
    runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
