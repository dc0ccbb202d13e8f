"""The ``streamxai`` command. The environment is read here and nowhere else."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence

from schemas import StreamxaiError

from .settings import Settings, load_settings, settings_help

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--settings", metavar="FILE", help="TOML settings file [env: STREAMXAI_SETTINGS]")
    common.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                        help="override one setting (repeatable); JSON for lists and dicts")
    common.add_argument("--bootstrap", metavar="HOST:PORT", help="Kafka bootstrap servers [env: STREAMXAI_BOOTSTRAP_SERVERS]")

    p = argparse.ArgumentParser(
        prog="streamxai",
        description="Live explanations (iPFI, iSAGE, iPDP) of online river models on Kafka.",
        epilog="settings (file keys, --set KEY=VALUE, or environment variables):\n" + settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("broker", help="start, stop or inspect the local Kafka broker",
                       description="Every option of `python -m pipeline.broker` (see `streamxai broker start --help`).")
    b.add_argument("action", choices=["start", "stop", "status"])
    b.add_argument("options", nargs=argparse.REMAINDER,
                   help="--port, --controller-port, --data-dir, --log-file, --heap, --timeout, --sasl-users")

    w = sub.add_parser("worker", parents=[common], help="run a worker (model, explainer and drift agents)",
                       epilog=settings_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("--roles", default="model,explain,drift", help="comma-separated: model, explain, drift")
    w.add_argument("--loglevel", default="info")

    pr = sub.add_parser("produce", parents=[common], help="produce a demo stream or a file to the features topic")
    pr.add_argument("source", help="'demo' (agrawal with drift), 'control' (no drift), or a .jsonl/.csv path")
    pr.add_argument("--stream-id", default=None)
    pr.add_argument("--n", type=int, default=30000, help="events of the demo stream")
    pr.add_argument("--drift-at", type=int, default=None, help="concept drift position (default n/3)")
    pr.add_argument("--swap-at", type=int, default=None, help="feature swap position (default 2n/3)")
    pr.add_argument("--seed", type=int, default=42)
    pr.add_argument("--rate", type=float, default=None, help="events per second (default: as fast as possible)")
    pr.add_argument("--target", default="y", help="target column of a file")

    t = sub.add_parser("tail", parents=[common], help="print a topic in readable form")
    t.add_argument("topic", help="features, predictions, explanations, drift-events, dead-letters, or a full name")
    t.add_argument("--max", type=int, default=None, help="stop after this many records")
    t.add_argument("--idle", type=float, default=None, help="stop after this many idle seconds")
    t.add_argument("--latest", action="store_true", help="only new records")

    d = sub.add_parser("demo", parents=[common], help="broker + workers + demo stream + live view, all in one")
    d.add_argument("--n", type=int, default=18000, help="events of the demo stream (drift at n/3, swap at 2n/3)")
    d.add_argument("--workers", type=int, default=1)
    d.add_argument("--rate", type=float, default=None)
    d.add_argument("--control", action="store_true", help="also run a stationary control stream")
    d.add_argument("--keep-broker", action="store_true", help="leave the broker running afterwards")
    d.add_argument("--timeout", type=float, default=900.0)

    c = sub.add_parser("config", parents=[common], help="print the effective settings (secrets masked)")
    del c
    return p


def _settings(args: argparse.Namespace, **defaults: object) -> Settings:
    overrides: dict[str, object] = dict(defaults)
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise StreamxaiError(f"--set {item!r}: expected KEY=VALUE")
        overrides[key.strip()] = value
    if args.bootstrap:
        overrides["bootstrap_servers"] = args.bootstrap
    path = args.settings or os.environ.get("STREAMXAI_SETTINGS")
    return load_settings(path, env=os.environ, **overrides)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return _run(args)
    except StreamxaiError as e:
        print(f"streamxai: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _run(args: argparse.Namespace) -> int:
    if args.command == "broker":
        from .broker import main as broker_main

        return broker_main([args.action, *args.options], prog="streamxai broker")
    if args.command == "worker":
        from .worker import run_worker

        run_worker(_settings(args), tuple(r.strip() for r in args.roles.split(",") if r.strip()), args.loglevel)
        return 0
    if args.command == "produce":
        return _produce(args)
    if args.command == "tail":
        return _tail(args)
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(args, _settings(args))
    if args.command == "config":
        for k, v in _settings(args).public_dict().items():
            print(f"{k} = {v!r}")
        return 0
    raise AssertionError(args.command)  # argparse restricts the choices


def _produce(args: argparse.Namespace) -> int:
    from .demo_stream import agrawal_events, file_events
    from .kafka_config import ensure_topics
    from .kafka_io import produce_events

    s = _settings(args)
    ensure_topics(s)
    if args.source in ("demo", "control"):
        drift = args.source == "demo"
        events = agrawal_events(
            args.stream_id or args.source, args.n,
            drift_at=(args.drift_at if args.drift_at is not None else args.n // 3) if drift else None,
            swap_at=(args.swap_at if args.swap_at is not None else 2 * args.n // 3) if drift else None,
            seed=args.seed)
    else:
        events = file_events(args.source, args.stream_id or "file", s.features, args.target)
    t0 = time.monotonic()
    n = produce_events(s, events, rate=args.rate)
    print(f"produced {n} events to {s.topic('features')} in {time.monotonic() - t0:.1f} s")
    return 0


def _tail(args: argparse.Namespace) -> int:
    import orjson

    from .kafka_config import TOPIC_NAMES
    from .kafka_io import consume

    s = _settings(args)
    topic = s.topic(args.topic) if args.topic in TOPIC_NAMES else args.topic
    for i, rec in enumerate(consume(s, [topic], from_beginning=not args.latest, idle_timeout=args.idle)):
        try:
            body = orjson.loads(rec.value).__repr__() if rec.value else "<empty>"
        except orjson.JSONDecodeError:
            body = repr(rec.value[:200])
        key = rec.key.decode(errors="replace") if rec.key else "-"
        print(f"{rec.topic}[{rec.partition}]@{rec.offset} key={key} {body}", flush=True)
        if args.max is not None and i + 1 >= args.max:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
