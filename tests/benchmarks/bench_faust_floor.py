"""What one message costs a Faust agent, with no work of ours: the floor under a worker's
transport.

    python tests/benchmarks/bench_faust_floor.py [--n 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's pipeline

MODES = ("consume", "+ sleep(0)", "+ send", "+ Topic.send", "take(100)", "bulk", "aiokafka getmany",
         "consume, cProfile")
TAKE = 100  # the batch of the take(100) mode


def bare_consumer(bootstrap: str, topic: str, n: int) -> None:
    """aiokafka's consumer alone, as Faust configures it (fetch wait bounded), batches of records."""
    from aiokafka import AIOKafkaConsumer
    from streamxai.kafka.faust_transport import FETCH_MAX_WAIT_MS

    async def run() -> float:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                    enable_auto_commit=False, fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
                                    group_id=f"floor-{uuid.uuid4().hex[:6]}")
        await consumer.start()
        try:
            seen, c0 = 0, 0.0
            while seen < n:
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    if seen == 0:
                        c0 = time.process_time()
                    seen += len(records)
            return (time.process_time() - c0) / (n - 1) * 1e6
        finally:
            await consumer.stop()

    print(json.dumps({"us": asyncio.run(run())}), flush=True)


def shares_by_library(stats: pstats.Stats) -> dict[str, float]:
    """Each library's share of the profiled CPU (own time of its functions; C functions go to
    the library calling them)."""
    own: dict[str, float] = {}
    for (path, _line, _name), (_cc, _nc, tottime, _ct, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if path == "~" and callers:  # a built-in: charge its caller's library
            path = max(callers.items(), key=lambda kv: kv[1][3])[0][0]
        lib = next((name for name, part in LIBRARIES if part in path), "other")
        own[lib] = own.get(lib, 0.0) + tottime
    total = sum(own.values()) or 1.0
    return {lib: own[lib] / total for lib in sorted(own, key=own.get, reverse=True)}


def per_message(stats: pstats.Stats, n: int) -> dict[str, float]:
    """Tasks created and event loop turns per message, and the share of the CPU spent in the
    ``wait_first`` by which Faust's fetcher hands each record over (its callback included)."""
    calls = {name: (nc, ct) for (_path, _line, name), (_cc, nc, _tt, ct, _c) in stats.stats.items()}  # type: ignore[attr-defined]
    total = sum(tt for (_cc, _nc, tt, _ct, _c) in stats.stats.values()) or 1.0  # type: ignore[attr-defined]
    return {"tasks created": calls.get("create_task", (0, 0))[0] / n,
            "event loop turns": calls.get("_run_once", (0, 0))[0] / n,
            "wait_first share": calls.get("wait_first", (0, 0.0))[1] / total}


#: where a function's file lies -> the library it is counted to (the first that matches)
LIBRARIES = (("aiokafka", "/aiokafka/"), ("faust", "/faust/"), ("mode (Faust's services)", "/mode/"),
             ("asyncio (event loop, tasks, futures)", "asyncio"), ("asyncio (event loop, tasks, futures)", "selectors"))


def child(mode: str, bootstrap: str, topic: str, n: int) -> None:
    if mode == "aiokafka getmany":
        bare_consumer(bootstrap, topic, n)
        return
    import faust
    from streamxai.kafka.faust_transport import QuietMonitor, RawSchema, use_bounded_fetch_wait

    run = uuid.uuid4().hex[:6]
    app = faust.App(f"floor-{run}", broker=f"kafka://{bootstrap}", value_serializer="raw", key_serializer="raw",
                    store="memory://", autodiscover=False, web_enabled=False, topic_partitions=1,
                    datadir=tempfile.mkdtemp(prefix="streamxai-bench-floor-app-"),
                    producer_linger_ms=5, consumer_auto_offset_reset="earliest", Monitor=QuietMonitor)
    use_bounded_fetch_wait(app)
    source = app.topic(topic, schema=RawSchema(), partitions=1)
    sink = app.topic(f"{topic}-out-{run}", key_type=bytes, value_type=bytes, partitions=1)
    state = {"n": 0, "c0": 0.0}
    profiler = cProfile.Profile() if mode == "consume, cProfile" else None

    def done() -> None:
        out = {"us": (time.process_time() - state["c0"]) / (n - 1) * 1e6}
        if profiler is not None:
            profiler.disable()
            stats = pstats.Stats(profiler)
            out["shares"] = shares_by_library(stats)
            out["per_message"] = per_message(stats, n)
        print(json.dumps(out), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)

    async def bulk(fetched):  # noqa: ANN001, ANN202 - the worker's intake way: each fetch in one call
        if state["n"] == 0:
            state["c0"] = time.process_time()
        state["n"] += len(fetched)
        if state["n"] >= n:
            done()

    if mode == "bulk":
        from streamxai.kafka.bulk_fetch import take_in_bulk

        take_in_bulk(app, [topic], bulk)

    @app.agent(source)
    async def agent(stream):  # noqa: ANN001, ANN202
        producer = app.producer
        if mode == "take(100)":
            async for batch in stream.take(TAKE, within=0.02):
                if state["n"] == 0:
                    state["c0"] = time.process_time()
                state["n"] += len(batch)
                if state["n"] >= n:
                    done()
            return
        async for event in stream.events():
            if state["n"] == 0:
                state["c0"] = time.process_time()
                if profiler is not None:
                    profiler.enable()
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
                done()

    worker = faust.Worker(app, loglevel="warning", quiet=True, redirect_stdouts=False)
    worker.spinner = None
    try:
        worker.execute_from_commandline()
    except SystemExit:
        pass


def main() -> None:
    """On a local broker (or $STREAMXAI_BOOTSTRAP), with ``--n`` messages of 300 bytes waiting in a
    topic, one Faust app (the worker's settings: raw payloads, the quiet monitor, the bounded
    fetch wait) runs one agent that, per message, does:

    - ``consume``: nothing (``async for`` over ``stream.events()``);
    - ``+ sleep(0)``: yields to the event loop, as the agents' loop does;
    - ``+ send``: also hands one message of the same size to Faust's ``Producer.send`` (the
      Outbox's layers are compared in ``bench_send_cost.py``);
    - ``+ Topic.send``: sends it through Faust's ``Topic.send`` instead;
    - ``take(100)``: consumes in batches of up to 100 (``stream.take``, acked after each batch),
      nothing else: whether handing an agent batches would lower the cost per message;
    - ``bulk``: each fetch's records handed to one coroutine by the worker's consumer, below
      Faust's per-record hand-over, and acknowledged after it (``pipeline/kafka/bulk_fetch.py``,
      how a worker's intake takes ``features`` and ``labels``); the agent only subscribes;
    - ``aiokafka getmany``: no Faust, aiokafka's consumer alone taking up the records in batches:
      what the Kafka client costs under Faust's machinery;
    - ``consume, cProfile``: ``consume`` under cProfile (which slows it several times over), and
      each library's share of the CPU.

    Each mode runs in a fresh process; it prints the CPU time of the process per message, from
    the first message taken up to the last (sends flushed), and under cProfile each library's
    share. The Kafka client is not the floor: Faust's hand-over from fetcher to stream is, and
    taking batches (``stream.take``) goes through the same hand-over; taking a fetch's records in
    one call (``bulk``) leaves it out.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, bootstrap, topic, n = args.child
        child(mode, bootstrap, topic, int(n))
        return
    from _worker_runs import broker_for
    from streamxai.kafka.io import produce_raw
    from streamxai.settings import Settings

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
            result = json.loads(lines[-1])
            print(f"  {mode:18s} {result['us']:6.1f} us/message")
            for lib, share in result.get("shares", {}).items():
                print(f"      {lib:38s} {100 * share:5.1f} %")
            if "per_message" in result:
                pm = result["per_message"]
                print(f"      per message: {pm['tasks created']:.1f} tasks created, {pm['event loop turns']:.1f} event "
                      f"loop turns; the fetcher's wait_first (callback included) {100 * pm['wait_first share']:.1f} %")


if __name__ == "__main__":
    main()
