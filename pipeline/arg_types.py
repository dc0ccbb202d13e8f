"""Argument types of the command line: numbers checked against their range as they are parsed,
so a bad one is argparse's one-line error naming the option (``--rate -1`` would otherwise send
as fast as it can).

>>> import argparse
>>> p = argparse.ArgumentParser(prog="x", exit_on_error=False)
>>> _ = p.add_argument("--port", type=port())
>>> p.parse_args(["--port", "8050"]).port
8050
>>> p.parse_args(["--port", "99999"])
Traceback (most recent call last):
...
argparse.ArgumentError: argument --port: 99999 is not a port: give a number from 1 to 65535
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["at_least", "port", "positive", "roles"]


def port(lowest: int = 1) -> Callable[[str], int]:
    """A TCP port number, ``lowest`` (1, or 0 where 0 means "none") to 65535."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if not lowest <= value <= 65535:
            raise argparse.ArgumentTypeError(f"{text} is not a port: give a number from {lowest} to 65535")
        return value

    parse.__name__ = "port"  # argparse names the type in "invalid port value" messages
    return parse


def at_least(lowest: int) -> Callable[[str], int]:
    """An integer of at least ``lowest``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"{text} is too small: give a number of at least {lowest}")
        return value

    parse.__name__ = "int"
    return parse


def positive(zero: bool = False) -> Callable[[str], float]:
    """A finite number above 0 (or at least 0, with ``zero``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (value >= 0 if zero else value > 0) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text} is out of range: give a number {'>= 0' if zero else '> 0'}")
        return value

    parse.__name__ = "float"
    return parse


def roles(choices: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    """A comma-separated list of at least one of ``choices``, as a tuple.

    >>> roles(("model", "change"))("change, model")
    ('change', 'model')
    """

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(r.strip() for r in text.split(",") if r.strip())
        unknown = [r for r in names if r not in choices]
        if unknown or not names:
            what = f"unknown role {unknown[0]!r}" if unknown else "no role given"
            raise argparse.ArgumentTypeError(f"{what}: give one or more of {', '.join(choices)}, separated by commas")
        return names

    parse.__name__ = "roles"
    return parse
