"""What one output message costs a worker to send, layer by layer.

    python tests/benchmarks/bench_send_cost.py [--reports 1000] [--per-report 27] [--bytes 400] [--rounds=3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the helpers package
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's pipeline

MODES = ("Outbox, Faust's send", "Outbox, Appender", "Outbox, OutputProducer", "aiokafka send", "add_message",
         "confluent produce", "nothing")


async def run(mode: str, bootstrap: str, reports: int, per: int, size: int) -> tuple[float, float]:
    """CPU us per message of ``mode`` (the modes: see main): (user, system)."""
    import faust
    from aiokafka.structs import TopicPartition
    from streamxai.agents._forward import Outbox
    from streamxai.handlers import Out, Source
    from streamxai.kafka.faust_transport import QuietMonitor
    from streamxai.metrics import Metrics
    from streamxai.settings import Settings

    app = faust.App(f"send-{uuid.uuid4().hex[:6]}", broker=f"kafka://{bootstrap}", producer_linger_ms=5,
                    autodiscover=False, web_enabled=False, Monitor=QuietMonitor, datadir=tempfile.mkdtemp())
    producer = app.producer
    await producer.start()
    client = producer._producer
    s = Settings(bootstrap_servers=bootstrap, topic_prefix=f"bench-{uuid.uuid4().hex[:6]}.")
    topic = s.topic("explanations")
    await client.send_and_wait(topic, b"warm", key=b"s")  # metadata loaded, as in a running worker
    box = Outbox(producer, s, Metrics())
    if mode == "Outbox, Faust's send":
        box.appender._client, box.appender._direct = client, False  # every send the full way, as before
    value = b"x" * size
    outs = [Out("explanations", b"s", value) for _ in range(per)]
    src = Source("explain-tasks", 0, 0)
    acc = client._message_accumulator
    tp = TopicPartition(topic, client._partition(topic, None, b"s", value, b"s", value))
    confluent = None
    output = None
    if mode == "Outbox, OutputProducer":
        from streamxai.kafka.output_producer import OutputProducer

        output = OutputProducer(s, 1_000_000)
        output.start()
        await output.send(topic, b"s", b"warm", None, None)
        await output.flush()
        box = Outbox(output, s, Metrics())
    if mode == "confluent produce":
        from confluent_kafka import Producer
        from streamxai.kafka.faust_transport import PRODUCER_MAX_BATCH_BYTES

        confluent = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": PRODUCER_MAX_BATCH_BYTES,
                              "acks": "all", "enable.idempotence": False})
        confluent.produce(topic, b"warm", key=b"s")
        confluent.flush(30)
    acked = [0]

    def delivered(err, msg):
        acked[0] += 1

    t0 = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(reports):
        if mode == "Outbox, Faust's send":
            for out in outs:
                await box.send(out, src)
        elif mode in ("Outbox, Appender", "Outbox, OutputProducer"):
            await box.send_all(outs, src, lambda out, err: None)
        elif mode == "aiokafka send":
            for _ in range(per):
                await client.send(topic, value, key=b"s")
        elif mode == "add_message":
            for _ in range(per):
                await acc.add_message(tp, b"s", value, 30.0, timestamp_ms=None, headers=[])
        elif confluent is not None:
            produce = confluent.produce
            for _ in range(per - 1):
                produce(topic, value, b"s")
            produce(topic, value, b"s", on_delivery=delivered)
            confluent.poll(0)
        await asyncio.sleep(0)
    if confluent is not None:
        confluent.flush(30)
    if output is not None:
        await output.flush()
    await producer.flush()
    await asyncio.sleep(0)  # the acknowledgements' callbacks
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    if output is not None:
        await output.close(5)
    await producer.stop()
    n = reports * per
    return (t1.ru_utime - t0.ru_utime) / n * 1e6, (t1.ru_stime - t0.ru_stime) / n * 1e6


def main() -> None:
    """On a local broker (or $STREAMXAI_BOOTSTRAP), one Faust producer (the worker's linger of 5 ms)
    sends ``--reports`` reports of ``--per-report`` messages (a report's public explanations: 27 at
    the defaults) to one partition, yielding to the event loop after each report as the agents do,
    then flushes. It prints the process's CPU time per message, from the first send to the end of
    the flush (the acknowledgements included), the median of ``--rounds`` fresh processes per mode:

    - ``Outbox, Faust's send``: the agents' Outbox through Faust's ``Producer.send`` (one
      acknowledgement callback per message);
    - ``Outbox, Appender``: the agents' Outbox on Faust's producer
      (:class:`streamxai.kafka.appender.Appender`, one callback per report);
    - ``Outbox, OutputProducer``: the agents' Outbox as a worker runs it, on the worker's
      :class:`streamxai.kafka.output_producer.OutputProducer` (confluent-kafka: each output handed
      over with no future, ``OutputProducer.hand``, its delivery report served by a polling task),
      flushed as the consumer flushes it before a commit;
    - ``aiokafka send``: aiokafka's ``AIOKafkaProducer.send`` alone, no callback;
    - ``add_message``: aiokafka's accumulator alone (what the Appender ends in), no callback;
    - ``confluent produce``: confluent-kafka's ``Producer.produce`` (librdkafka, the same linger
      and batch size), one delivery callback per report, ``poll(0)`` after each report; its own
      threads' CPU counted as the process's;
    - ``nothing``: no message: the loop and the flush alone (the baseline of this run).
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reports", type=int, default=1000)
    ap.add_argument("--per-report", type=int, default=27)
    ap.add_argument("--bytes", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, bootstrap = args.child
        print(json.dumps(asyncio.run(run(mode, bootstrap, args.reports, args.per_report, args.bytes))), flush=True)
        return
    from _worker_runs import broker_for

    with broker_for(tempfile.mkdtemp(prefix="streamxai-bench-send-")) as bootstrap:
        print(f"CPU per message sent: {args.reports} reports of {args.per_report} messages of {args.bytes} bytes, "
              f"median of {args.rounds} processes per mode")
        cost: dict[str, list[tuple[float, float]]] = {m: [] for m in MODES}
        for _ in range(args.rounds):
            for mode in MODES:
                done = subprocess.run([sys.executable, __file__, "--child", mode, bootstrap, "--reports",
                                       str(args.reports), "--per-report", str(args.per_report), "--bytes",
                                       str(args.bytes)], capture_output=True, text=True, timeout=300, check=False)
                lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
                if done.returncode or not lines:
                    raise RuntimeError(f"{mode} failed:\n{done.stdout[-1000:]}{done.stderr[-2000:]}")
                cost[mode].append(tuple(json.loads(lines[-1])))
        before = statistics.median(u + k for u, k in cost[MODES[0]])
        for mode in MODES:
            total = statistics.median(u + k for u, k in cost[mode])
            user = statistics.median(u for u, _ in cost[mode])
            system = statistics.median(k for _, k in cost[mode])
            print(f"  {mode:22s} {total:6.2f} us/message ({total / before:4.2f} of the first): user {user:5.2f}, "
                  f"system {system:5.2f}; rounds {', '.join(f'{u + k:.2f}' for u, k in cost[mode])}")

if __name__ == "__main__":
    main()
