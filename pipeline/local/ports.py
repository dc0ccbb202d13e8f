"""Picking TCP ports to listen on for local brokers, workers and tests.

A port handed out by ``bind(("", 0))`` comes from the kernel's ephemeral range, the same range
outgoing connections (Kafka clients!) draw from, so it can be taken again before the listener
binds it. Ports are therefore picked at random *below* the ephemeral range and checked.
"""

from __future__ import annotations

import random
import socket

__all__ = ["free_port", "free_ports"]

_FALLBACK_EPHEMERAL = (32768, 60999)
_LOWEST = 20000


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(v) for v in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return _FALLBACK_EPHEMERAL


def _bindable(port: int, host: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(n: int, host: str = "0.0.0.0") -> list[int]:
    """``n`` distinct ports that nothing listens on now, outside the ephemeral range."""
    lo_eph, hi_eph = _ephemeral_range()
    lo, hi = (_LOWEST, lo_eph - 1) if lo_eph - _LOWEST > 1000 else (hi_eph + 1, 65535)
    rng = random.SystemRandom()
    picked: list[int] = []
    for _ in range(2000):
        p = rng.randint(lo, hi)
        if p not in picked and _bindable(p, host):
            picked.append(p)
            if len(picked) == n:
                return picked
    raise OSError(f"found no {n} free TCP port(s) in {lo}-{hi} on {host}; free some ports or pass them explicitly")


def free_port(host: str = "0.0.0.0") -> int:
    """One port that nothing listens on now, outside the ephemeral range."""
    return free_ports(1, host=host)[0]
