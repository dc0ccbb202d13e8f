"""Damaged checkpoints, as a disk error, a half-written file, a bad copy or another key leaves them."""

from __future__ import annotations

import hashlib
import hmac
import os

__all__ = ["DAMAGES", "damaged"]

#: the ways a checkpoint is damaged in the fault tests
DAMAGES = ("truncated", "zero-length", "random-bytes", "wrong-key")


def damaged(data: bytes, how: str) -> bytes:
    """``data`` (a sealed checkpoint) damaged ``how`` (one of :data:`DAMAGES`).

    >>> [len(damaged(b"0123456789", how)) for how in ("truncated", "zero-length", "random-bytes")]
    [5, 0, 10]
    """
    if how == "truncated":
        return data[: len(data) // 2]
    if how == "zero-length":
        return b""
    if how == "random-bytes":
        return os.urandom(len(data))
    if how == "wrong-key":  # well formed, sealed with another key
        magic, _, rest = data.partition(b"\n")
        _, _, rest = rest.partition(b"\n")
        header, _, payload = rest.partition(b"\n")
        tag = hmac.new(b"another-key-0123456789", header + b"\n" + payload, hashlib.sha256).hexdigest().encode()
        return magic + b"\n" + tag + b"\n" + header + b"\n" + payload
    raise ValueError(f"unknown damage {how!r}; one of {DAMAGES}")
