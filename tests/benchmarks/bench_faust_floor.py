"""What one message costs a Faust agent, with no work of ours: the floor under a worker's
transport (issue 17).

    python tests/benchmarks/bench_faust_floor.py [--n 20000]

On a local broker (or $STREAMXAI_BOOTSTRAP), with ``--n`` messages of 300 bytes waiting in a
topic, one Faust app (the worker's settings: raw payloads, the quiet monitor, the bounded
fetch wait) runs one agent that, per message, does:

- ``consume``: nothing (``async for`` over ``stream.events()``);
- ``+ sleep(0)``: yields to the event loop, as the agents' loop does;
- ``+ send``: also hands one message of the same size to the producer (as the Outbox does);
- ``+ Topic.send``: sends it through Faust's ``Topic.send`` instead (what the agents did).

Each mode runs in a fresh process; it prints the CPU time of the process per message, from
the first message taken up to the last (sends flushed). Measured on 2 shared cores (the test
suite running beside it): 66.3, 64.1, 80.3 and 107.1 us/message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's pipeline

MODES = ("consume", "+ sleep(0)", "+ send", "+ Topic.send")


def child(mode: str, bootstrap: str, topic: str, n: int) -> None:
    import faust

    from pipeline.kafka.faust_transport import QuietMonitor, use_bounded_fetch_wait

    run = uuid.uuid4().hex[:6]
    app = faust.App(f"floor-{run}", broker=f"kafka://{bootstrap}", value_serializer="raw", key_serializer="raw",
                    store="memory://", autodiscover=False, web_enabled=False, topic_partitions=1,
                    producer_linger_ms=5, consumer_auto_offset_reset="earliest", Monitor=QuietMonitor)
    use_bounded_fetch_wait(app)
    source = app.topic(topic, key_type=bytes, value_type=bytes, partitions=1)
    sink = app.topic(f"{topic}-out-{run}", key_type=bytes, value_type=bytes, partitions=1)
    state = {"n": 0, "c0": 0.0}

    @app.agent(source)
    async def agent(stream):  # noqa: ANN001, ANN202
        producer = app.producer
        async for event in stream.events():
            if state["n"] == 0:
                state["c0"] = time.process_time()
            state["n"] += 1
            if mode == "+ sleep(0)":
                await asyncio.sleep(0)
            elif mode == "+ send":
                await producer.send(sink.get_topic_name(), event.key, event.value, None, None, None)
                await asyncio.sleep(0)
            elif mode == "+ Topic.send":
                await sink.send(key=event.key, value=event.value)
                await asyncio.sleep(0)
            if state["n"] == n:
                await producer.flush()
                print(json.dumps({"us": (time.process_time() - state["c0"]) / (n - 1) * 1e6}), flush=True)
                os.kill(os.getpid(), signal.SIGTERM)

    worker = faust.Worker(app, loglevel="warning", quiet=True, redirect_stdouts=False)
    worker.spinner = None
    try:
        worker.execute_from_commandline()
    except SystemExit:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, bootstrap, topic, n = args.child
        child(mode, bootstrap, topic, int(n))
        return
    from _worker_runs import broker_for

    from pipeline.kafka.io import produce_raw
    from pipeline.settings import Settings

    with broker_for(tempfile.mkdtemp(prefix="streamxai-bench-floor-")) as bootstrap:
        topic = f"floor-{uuid.uuid4().hex[:6]}"
        produce_raw(Settings(bootstrap_servers=bootstrap), topic, ((b"k", b"x" * 300) for _ in range(args.n)))
        print(f"Faust {__import__('faust').__version__}: CPU per message of one agent, {args.n} messages waiting")
        for mode in MODES:
            done = subprocess.run([sys.executable, __file__, "--child", mode, bootstrap, topic, str(args.n)],
                                  capture_output=True, text=True, timeout=600, check=False)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
            if not lines:
                raise RuntimeError(f"{mode} failed:\n{done.stdout[-1000:]}{done.stderr[-2000:]}")
            print(f"  {mode:14s} {json.loads(lines[-1])['us']:6.1f} us/message")


if __name__ == "__main__":
    main()
