"""Picking TCP ports to listen on for local brokers, workers and tests, and claiming them."""

from __future__ import annotations

import logging
import random
import socket
import time

from ..kafka.config import BrokerError

__all__ = ["free_port", "free_ports", "port_bindable", "port_unused", "port_holders", "claim_port", "TIME_WAIT_S"]

log = logging.getLogger("streamxai")

#: how long Linux keeps a socket in TIME-WAIT (TCP_TIMEWAIT_LEN), plus a margin
TIME_WAIT_S = 65.0
#: the states of /proc/net/tcp (include/net/tcp_states.h) a port can be held in
_TCP_STATES = {"01": "ESTABLISHED", "02": "SYN-SENT", "03": "SYN-RECV", "04": "FIN-WAIT-1", "05": "FIN-WAIT-2",
               "06": "TIME-WAIT", "07": "CLOSE", "08": "CLOSE-WAIT", "09": "LAST-ACK", "0A": "LISTEN",
               "0B": "CLOSING", "0C": "NEW-SYN-RECV"}

_FALLBACK_EPHEMERAL = (32768, 60999)
_LOWEST = 20000


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(v) for v in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return _FALLBACK_EPHEMERAL


def port_unused(port: int, host: str) -> bool:
    """Whether ``host:port`` binds without SO_REUSEADDR: nothing listens on it and no connection of
    it lingers (in TIME-WAIT), so a port picked now stays free for a process started next."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def port_bindable(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a listener can bind ``host:port`` now, with SO_REUSEADDR as Kafka (Java) binds."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def port_holders(port: int) -> set[str]:
    """The TCP states of the sockets on local ``port`` (``LISTEN``, ``TIME-WAIT``, ...), from
    ``/proc/net/tcp`` and ``tcp6`` (empty where there is no /proc: the caller then knows nothing).

    >>> port_holders(1) <= set(_TCP_STATES.values())
    True
    """
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)  # the header
                for line in f:
                    cols = line.split()
                    if len(cols) > 3 and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        found.add(_TCP_STATES.get(cols[3], cols[3]))
        except OSError:
            continue
    return found


def claim_port(port: int, name: str, host: str = "127.0.0.1", wait: float = TIME_WAIT_S) -> None:
    """Return once a listener can bind ``host:port``; raise :class:`BrokerError` if a process holds
    it. A port held only by TIME-WAIT sockets (no process) is waited for, up to ``wait`` seconds,
    with one log line."""
    if port_bindable(port, host):
        return
    holders = port_holders(port)
    option = f"--{name.replace('_', '-')}"
    if holders != {"TIME-WAIT"}:
        raise BrokerError(f"{host}:{port} ({name}) is already in use by another process; "
                          f"stop it or choose another {name} ({option})")
    log.warning("%s:%d (%s) is held by a closed connection in TIME-WAIT, not by a process; the kernel frees it "
             "within 60 s: waiting", host, port, name)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        if port_bindable(port, host):
            return
    raise BrokerError(f"{host}:{port} ({name}) is still held by a closed connection in TIME-WAIT after "
                      f"{wait:.0f} s (the kernel frees it within 60 s); try again in a minute or choose "
                      f"another {name} ({option})")


def free_ports(n: int, host: str = "0.0.0.0") -> list[int]:
    """``n`` distinct ports that nothing listens on now, outside the ephemeral range.

    A port from ``bind(("", 0))`` comes from the ephemeral range that outgoing connections draw
    from, so it can be taken before the listener binds it: ports are picked at random below that
    range and checked.
    """
    lo_eph, hi_eph = _ephemeral_range()
    lo, hi = (_LOWEST, lo_eph - 1) if lo_eph - _LOWEST > 1000 else (hi_eph + 1, 65535)
    rng = random.SystemRandom()
    picked: list[int] = []
    for _ in range(2000):
        p = rng.randint(lo, hi)
        if p not in picked and port_unused(p, host):
            picked.append(p)
            if len(picked) == n:
                return picked
    raise OSError(f"found no {n} free TCP port(s) in {lo}-{hi} on {host}; free some ports or pass them explicitly")


def free_port(host: str = "0.0.0.0") -> int:
    """One port that nothing listens on now, outside the ephemeral range."""
    return free_ports(1, host=host)[0]
