"""The ``streamxai`` command. The environment is read here and nowhere else."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from streamxai.schemas import StreamxaiError

from . import exit_codes
from .arg_types import at_least, port, positive, roles
from .settings import Settings, load_settings
from .settings_text import settings_help, settings_toml

__all__ = ["main"]


LOGLEVELS = ("debug", "info", "warning", "error")
ROLES = ("model", "explain", "change")  # streamxai.app.ROLES, without importing Faust to parse arguments


def _parser() -> argparse.ArgumentParser:
    from .local import broker

    logs = argparse.ArgumentParser(add_help=False)
    logs.add_argument("--loglevel", type=str.lower, choices=LOGLEVELS, default="info",
                      help="log messages of this level and above: debug, info, warning or error (default info)")
    common = argparse.ArgumentParser(add_help=False, parents=[logs])
    common.add_argument("--settings", metavar="FILE", help="TOML settings file [env: STREAMXAI_SETTINGS]")
    common.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                        help="override one setting (repeatable); JSON for lists and dicts")
    common.add_argument("--bootstrap", "--bootstrap-server", metavar="HOST:PORT", dest="bootstrap",
                        help="Kafka bootstrap servers [env: STREAMXAI_BOOTSTRAP_SERVERS]")

    p = argparse.ArgumentParser(
        prog="streamxai",
        description="Live explanations (iPFI, iSAGE, iPDP) of online river models on Kafka.",
        epilog="settings (file keys, --set KEY=VALUE, or environment variables):\n" + settings_help()
               + "\n\n" + exit_codes.HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("broker", parents=[logs], help="start, stop or inspect the local Kafka broker",
                       description=broker.DESCRIPTION, epilog=exit_codes.HELP)
    broker.add_arguments(b)

    w = sub.add_parser("worker", parents=[common], help="run a worker (model, explainer and change agents)",
                       epilog=settings_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("--roles", type=roles(ROLES), default="model,explain,change",
                   help="comma-separated: model, explain, change (default all three)")

    pr = sub.add_parser("produce", parents=[common], help="produce a demo stream or a file to the features topic")
    pr.add_argument("source", help="'demo' (agrawal with drift), 'control' (no drift), or a .jsonl/.csv path")
    pr.add_argument("--stream-id", default=None, help="stream id of the events (default: demo, control or file)")
    pr.add_argument("--n", type=at_least(1), default=30000, help="events of the demo stream (default 30000)")
    pr.add_argument("--drift-at", type=int, default=None, help="concept drift position (default n/3)")
    pr.add_argument("--swap-at", type=int, default=None, help="feature swap position (default 2n/3)")
    pr.add_argument("--seed", type=int, default=42, help="seed of the demo stream (default 42)")
    pr.add_argument("--rate", type=positive(), default=None, help="events per second (default: as fast as possible)")
    pr.add_argument("--target", metavar="COLUMN", default=None,
                    help="label column or field of a file (default: the setting target, else the first of "
                         "label (number for regression), y and target the file has)")
    pr.add_argument("--ts-column", metavar="COLUMN", default=None,
                    help="column with each event's time in seconds (default: the wall clock when it is sent)")
    pr.add_argument("--resume", action="store_true",
                    help="if the stream already has events, number these after its last seq")
    pr.add_argument("--force", action="store_true",
                    help="send even if the stream already has these seqs (the worker drops them as duplicates)")
    pr.add_argument("--without-labels", action="store_true",
                    help="send a file's features without their labels (they come later: see --labels)")
    pr.add_argument("--labels", action="store_true",
                    help="send a file's labels as label events to the labels topic: each row's target for the "
                         "event with its seq column (or, without one, the row's number, as FILE's events were numbered)")
    pr.add_argument("--label-delay", type=at_least(0), default=0, metavar="N",
                    help="send each event's label N events after its features, as a label event on the labels topic "
                         "(default 0: labels in the feature events)")

    t = sub.add_parser("tail", parents=[common], help="print a topic's messages as JSON lines, local-explanations as a readable block per event (follows new ones)")
    t.add_argument("topic", help="features, labels, predictions, explanations, local-explanations, drift-events, "
                                 "dead-letters, change-episodes, or a full topic name")
    t.add_argument("--from-beginning", action="store_true", help="start at the oldest message, not at new ones")
    t.add_argument("--max", type=at_least(1), default=None, help="stop after this many messages")
    t.add_argument("--idle", type=positive(zero=True), default=None, help="stop after this many seconds without a message, once every partition has been read to its end")
    t.add_argument("--json", action="store_true",
                   help="local-explanations: print the messages as JSON lines, not one readable block per explained event")
    t.add_argument("--top", type=at_least(1), default=10, metavar="K",
                   help="local-explanations: the attributions each block lists, largest by absolute value first (default 10)")
    t.add_argument("--meta", action="store_true",
                   help="wrap each message with its topic, partition, offset, Kafka timestamp (ms, its type and UTC time) and key")

    d = sub.add_parser("demo", parents=[common], help="broker + workers + demo stream + live view, all in one")
    d.add_argument("--n", type=at_least(1), default=18000, help="events of the demo stream (drift at n/3, swap at 2n/3)")
    d.add_argument("--workers", type=at_least(1), default=1, help="worker processes to start (default 1)")
    d.add_argument("--rate", type=positive(), default=None, help="events per second (default: as fast as possible)")
    d.add_argument("--control", action="store_true", help="also run a stationary control stream")
    d.add_argument("--label-delay", type=at_least(0), default=0, metavar="N",
                   help="send each event's label N events after its features, on the labels topic (default 0: "
                        "labels in the feature events)")
    d.add_argument("--source", choices=("payments",), default=None,
                   help="send the demo stream in a team's own shape, read by [sources.*]: payments: nested JSON "
                        "records keyed by account, labels keyed by txn_id on another topic, --label-delay (default "
                        "500) payments later")
    d.add_argument("--keep-broker", action="store_true", help="leave the broker running afterwards")
    d.add_argument("--timeout", type=positive(), default=900.0, help="give up after this many seconds (default 900)")
    d.add_argument("--dashboard-port", type=port(lowest=0), default=8050,
                   help="port of the dashboard the demo starts (default 8050; a free one if taken; 0: no dashboard)")
    d.add_argument("--keep", action="store_true",
                   help="keep the demo's topics and its .streamxai/demo-* directory (removed by default)")

    db = sub.add_parser("dashboard", parents=[common], help="serve the live dashboard (a plain consumer of the output topics)")
    db.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    db.add_argument("--port", type=port(), default=8050, help="port to listen on (default 8050)")
    db.add_argument("--latest", action="store_true", help="show only messages that arrive from now on")

    pl = sub.add_parser("plot", parents=[common], help="write a PNG (and optionally HTML) of a stream's explanations "
                                                          "(needs matplotlib: pip install 'streamxai[plot]')")
    pl.add_argument("stream_id", help="the stream to plot")
    pl.add_argument("--out", metavar="FILE.png", default=None, help="PNG to write (default: STREAM_ID.png)")
    pl.add_argument("--html", metavar="FILE.html", default=None, help="also write a self-contained HTML report")
    pl.add_argument("--local", action="store_true",
                    help="plot why one prediction: the waterfall of the stream's latest local explanation (local = true), "
                         "from the base value to the prediction (default file: STREAM_ID-local.png)")
    pl.add_argument("--event", metavar="ID", default=None,
                    help="with --local: the event to plot, by its event_id (or its seq), instead of the latest")
    pl.add_argument("--idle", type=positive(zero=True), default=3.0,
                    help="stop reading the topics after this many seconds without a message, once every partition has been read "
                         "to its end (default 3)")

    c = sub.add_parser("config", parents=[common],
                       help="print the effective settings as a settings file (TOML, each value's source in a comment; "
                            "secrets left out)")
    c.add_argument("--stream", metavar="ID", default=None,
                   help="the effective settings of this stream id: its stream profile's on top of the top level")
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


def _explicit_settings(args: argparse.Namespace) -> set[str]:
    """Settings given by a file, the environment, --set or --bootstrap (:meth:`Settings.explicit`)."""
    return set(_settings(args).explicit())


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = getattr(logging, args.loglevel.upper())
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(level)  # also when logging was configured before (basicConfig then does nothing)
    try:
        return _run(args)
    except StreamxaiError as e:
        print(f"streamxai: error: {e}", file=sys.stderr)
        return exit_codes.ERROR
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        print(f"streamxai: error: {e.strerror}: {e.filename}", file=sys.stderr)
        return exit_codes.ERROR
    except BrokenPipeError:  # `streamxai tail ... | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_codes.OK
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED


def _run(args: argparse.Namespace) -> int:
    if args.command == "broker":
        from .local.broker import run as run_broker

        return run_broker(args)
    if args.command == "worker":
        from .plan import check_streams
        from .worker import run_worker

        s = _settings(args)
        check_streams(s)  # no features, or a model that cannot be built: one line, no start
        return run_worker(s, args.roles, args.loglevel)
    if args.command in ("produce", "tail", "plot"):
        from . import commands

        return getattr(commands, args.command)(args, _settings(args))
    if args.command == "demo":
        from .local.demo import run_demo

        return run_demo(args, _settings(args))
    if args.command == "dashboard":
        from .local.dashboard import run_dashboard

        run_dashboard(_settings(args), host=args.host, port=args.port, from_beginning=not args.latest)
        return exit_codes.OK
    if args.command == "config":
        if args.stream is not None:
            from streamxai.schemas.features import check_stream_id

            check_stream_id(args.stream)
        print(settings_toml(_settings(args), args.stream), end="")
        return exit_codes.OK
    raise AssertionError(args.command)  # argparse restricts the choices


if __name__ == "__main__":
    sys.exit(main())
