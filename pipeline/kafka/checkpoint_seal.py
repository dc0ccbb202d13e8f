"""Sealing a handler's state into authenticated bytes, and what every checkpoint store shares.

>>> seal = CheckpointSeal(b"0123456789abcdef")
>>> blob = seal.seal("explain", b"s/0", {"n": 1}, Source("tasks", 3, 41))
>>> seal.open(blob, "explain", b"s/0", "tasks", 3)
({'n': 1}, 41)
>>> CheckpointSeal(b"another key 12345").open(blob, "explain", b"s/0", "tasks", 3)
Traceback (most recent call last):
...
streamxai.kafka.checkpoint_seal.RefusedCheckpoint: its HMAC does not match (tampered, torn, or written with another checkpoint key)
"""

from __future__ import annotations

import abc
import hashlib
import hmac
import logging
import pickle
from collections.abc import Iterable
from typing import Any

import orjson
from streamxai.schemas import Source

from .checkpoint_key import checkpoint_secret  # noqa: F401  (re-exported)
from .committed_offsets import CommittedOffsets

__all__ = ["CheckpointSeal", "HEADER_BYTES", "RefusedCheckpoint", "SealedStore", "STATE_FORMAT", "checkpoint_secret"]

log = logging.getLogger("streamxai")

#: The format of the checkpointed states. Raise it with a change an older state cannot take (a
#: class gone, an attribute renamed or added): checkpoints of another format are then set aside
#: and the states rebuilt by replay. ``tests/unit/kafka/test_state_format.py`` checks the
#: classes and attributes recorded for this format.
STATE_FORMAT = 5
_MAGIC = b"streamxai-checkpoint/v2\n"
_MIN_SECRET = 16


class CheckpointSeal:
    """Seals states into bytes authenticated with ``secret`` (HMAC-SHA256 over a header naming
    kind, key hash, topic, partition and offset, and the pickle), and opens them again.

    The state is a pickle (river models have no other complete format), so a record without a
    valid tag, of another key (the key's SHA-256 is in the signed header) or whose state cannot
    be unpickled is refused, never unpickled, and the key's state rebuilt by replay. Where the
    sealed bytes live is a :class:`SealedStore`'s business. The secret never appears in its repr:

    >>> CheckpointSeal(b"0123456789abcdef")
    CheckpointSeal(secret=***)
    """

    def __init__(self, secret: bytes):
        if not isinstance(secret, bytes) or len(secret) < _MIN_SECRET:
            raise ValueError(f"the checkpoint key must be at least {_MIN_SECRET} bytes")
        self._secret = secret

    def __repr__(self) -> str:
        return "CheckpointSeal(secret=***)"

    def _tag(self, header: bytes, payload: bytes | memoryview) -> bytes:
        mac = hmac.new(self._secret, header, hashlib.sha256)
        mac.update(b"\n")
        mac.update(payload)  # not joined to the header: a state's bytes are not copied to be tagged
        return mac.hexdigest().encode()

    def seal(self, kind: str, key: bytes, state: Any, src: Source) -> bytes:
        """``state`` of ``key`` as of the message at ``src``, as authenticated bytes; the header
        names the state format and the river release the state was pickled with."""
        header = orjson.dumps({"kind": kind, "key_sha256": hashlib.sha256(key).hexdigest(),
                               "topic": src.topic, "partition": src.partition, "offset": src.offset,
                               "format": STATE_FORMAT, "river": _river_release()})
        # protocol 4: a numpy array of the state comes back owning its data (with 5 it comes back
        # as a view of a bytearray, through a memoryview and a second array: more to hold, per array)
        payload = pickle.dumps(state, protocol=4)
        return b"".join((_MAGIC, self._tag(header, payload), b"\n", header, b"\n", payload))

    def open(
        self, data: bytes, kind: str, key: bytes, topic: str, partition: int | None
    ) -> tuple[Any, int] | None:
        """``(state, offset)`` from ``data``, or None for another partition's checkpoint (the key
        moved). Raises :class:`RefusedCheckpoint` for bytes that are not a checkpoint of ``key``
        sealed with this key and :data:`STATE_FORMAT`, or whose state cannot be unpickled."""
        found = self.verify(data, kind, key, topic, partition)
        return None if found is None else (self.unpickle(found[1]), found[0])

    def verify(
        self, data: bytes, kind: str, key: bytes, topic: str, partition: int | None
    ) -> tuple[int, memoryview] | None:
        """``(offset, pickled state)`` of ``data`` once its seal is checked, without unpickling (a
        view into ``data``); None for another partition's checkpoint. Raises as :meth:`open` does."""
        if not data.startswith(_MAGIC):
            raise RefusedCheckpoint("not a signed (v2) streamxai checkpoint")
        tag_end = data.find(b"\n", len(_MAGIC))
        header_end = data.find(b"\n", tag_end + 1) if tag_end >= 0 else -1
        if header_end < 0:
            raise RefusedCheckpoint(_BAD_TAG)
        tag, header = data[len(_MAGIC):tag_end], data[tag_end + 1:header_end]
        payload = memoryview(data)[header_end + 1:]
        if not hmac.compare_digest(tag, self._tag(header, payload)):
            raise RefusedCheckpoint(_BAD_TAG)
        h = orjson.loads(header)
        if h["kind"] != kind or h["key_sha256"] != hashlib.sha256(key).hexdigest():
            raise RefusedCheckpoint("it belongs to another key")
        if h["topic"] != topic or h["partition"] != partition:
            return None
        fmt, river = h.get("format", 1), h.get("river")
        if fmt != STATE_FORMAT:
            raise RefusedCheckpoint(f"it holds state format {fmt} and this version of streamxai reads format "
                                    f"{STATE_FORMAT} (written by another version)")
        if river is not None and river != _river_release():
            raise RefusedCheckpoint(f"its state was pickled with river {river} and this worker runs river "
                                    f"{_river_release()}")
        return int(h["offset"]), payload

    @staticmethod
    def unpickle(payload: bytes | memoryview) -> Any:
        """The state of a verified checkpoint's pickle (:meth:`verify`). Raises
        :class:`RefusedCheckpoint` for one that cannot be unpickled."""
        try:
            return pickle.loads(payload)  # noqa: S301 - authenticated by verify
        except Exception as e:  # e.g. a state class another streamxai version had
            raise RefusedCheckpoint(f"its state cannot be unpickled ({type(e).__name__}: {str(e)[:200]}; "
                                    "written by another streamxai version?)") from None

    @staticmethod
    def source(data: bytes) -> tuple[str, int | None, int] | None:
        """``(topic, partition, offset)`` named by the header of ``data``, *not* verified (for
        choosing which checkpoint to keep; what is restored is verified); None if it does not
        read as a checkpoint.

        >>> CheckpointSeal.source(CheckpointSeal(b"0123456789abcdef").seal("change", b"s", 1, Source("t", 2, 7)))
        ('t', 2, 7)
        >>> CheckpointSeal.source(b"not a checkpoint") is None
        True
        """
        parts = data.split(b"\n", 3)
        if len(parts) < 4 or parts[0] + b"\n" != _MAGIC:
            return None
        try:
            h = orjson.loads(parts[2])
            return str(h["topic"]), h["partition"], int(h["offset"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


_BAD_TAG = "its HMAC does not match (tampered, torn, or written with another checkpoint key)"

#: how much of a checkpoint's beginning holds its header, for :meth:`CheckpointSeal.source`
HEADER_BYTES = 64 * 1024


def _river_release() -> str:
    """The installed river release (its models are most of a state)."""
    global _RIVER
    if _RIVER is None:
        from importlib.metadata import version

        _RIVER = version("river")
    return _RIVER


_RIVER: str | None = None


class RefusedCheckpoint(Exception):
    """A checkpoint that cannot be read or verified (the message says why); it is set aside."""


class SealedStore(abc.ABC):
    """Checkpoints sealed by a :class:`CheckpointSeal`, kept wherever a subclass keeps bytes
    (:meth:`_write`, :meth:`_candidates`); written every ``every`` messages of a key (0: never).

    This is what the handlers use (``streamxai.handlers.protocols.CheckpointStore``). A store in
    memory, for the example:

    >>> class Memory(SealedStore):
    ...     def __init__(self, every, *, secret):
    ...         super().__init__(every, secret=secret)
    ...         self.blobs = {}
    ...     def _write(self, kind, key, blob, keep_previous=False):
    ...         self.blobs.setdefault((kind, key), []).insert(0, blob)
    ...     def _candidates(self, kind, key):
    ...         return [("memory", b) for b in self.blobs.get((kind, key), [])[:2]]
    ...     def _set_aside(self, kind, key, where):
    ...         return "dropped"
    >>> m = Memory(2, secret=b"0123456789abcdef")
    >>> m.due(1), m.due(2)
    (False, True)
    >>> m.save("model", b"s", {"n": 5}, Source("features", 0, 9))
    >>> m.load("model", b"s", "features", 0), m.load("model", b"s", "features", 0, before_offset=9)
    (({'n': 5}, 9), None)
    """

    def __init__(self, every: int = 2000, *, secret: bytes, commits: CommittedOffsets | None = None):
        if every < 0:
            raise ValueError(f"checkpoint_every={every} must be >= 0 (0 disables checkpoints)")
        self.every = every
        self._seal = CheckpointSeal(secret)
        #: the offsets the worker committed (None: not known, as in tests and the in-process runner)
        self.commits = commits

    def due(self, n_since: int) -> bool:
        return self.every > 0 and n_since >= self.every

    def save(self, kind: str, key: bytes, state: Any, src: Source) -> None:
        """Keep ``state`` of ``key`` as of the message at ``src`` as the key's newest checkpoint.

        The newest one so far becomes the previous one if a commit covers it (:attr:`commits`),
        since a restart after a SIGKILL may restore it; else it is replaced and the previous one,
        the newest a commit covered, stays. A checkpoint a commit already covers as it is written
        (at a stop or an eviction) drops the previous one (:meth:`_drop_previous`)."""
        keep = self._keep_previous(kind, key)
        self._write(kind, key, self._seal.seal(kind, key, state, src), keep_previous=keep)
        if not keep and self.commits is not None and self.commits.covers(src.topic, src.partition, src.offset):
            self._drop_previous(kind, key)

    def _drop_previous(self, kind: str, key: bytes) -> None:
        """Drop the previous checkpoint of ``key``, if the store keeps it apart (by default it
        keeps two a key whatever happens)."""
        return None

    def _keep_previous(self, kind: str, key: bytes) -> bool:
        """Whether the next checkpoint of ``key`` replaces its newest one, keeping the previous one
        (no commit covers the newest yet, as far as :attr:`commits` tells)."""
        if self.commits is None:
            return False
        newest = self._newest_source(kind, key)
        return newest is not None and not self.commits.covers(*newest)

    def load(
        self, kind: str, key: bytes, topic: str, partition: int | None, before_offset: int | None = None
    ) -> tuple[Any, int] | None:
        """``(state, offset)`` of the newest valid checkpoint of ``key`` on ``topic[partition]``
        with ``offset < before_offset`` (any offset if None), or None. A checkpoint that cannot be
        read or verified is set aside (:meth:`_set_aside`) with one log line. Only the state
        restored is unpickled, so a restore never holds a key's state twice."""
        fits = []
        for where, data in self._candidates(kind, key):
            try:
                found = self._seal.verify(data, kind, key, topic, partition)
            except RefusedCheckpoint as e:
                self._refuse(kind, key, where, str(e))
                continue
            if found is not None and (before_offset is None or found[0] < before_offset):
                fits.append((found[0], where, found[1]))
        fits.sort(key=lambda f: -f[0])  # the newest first (of equal offsets, the first kept)
        for offset, where, payload in fits:
            try:
                return self._seal.unpickle(payload), offset
            except RefusedCheckpoint as e:
                self._refuse(kind, key, where, str(e))
        return None

    def discard(self, kind: str, key: bytes, why: str) -> int:
        """Set aside every checkpoint kept for ``key`` (one log line each, saying ``why``): a state
        restored from them failed, so the key is rebuilt from its whole history. The number set aside."""
        found = list(self._candidates(kind, key))
        for where, _ in found:
            self._refuse(kind, key, where, why)
        return len(found)

    def _refuse(self, kind: str, key: bytes, where: str, why: str) -> None:
        aside = self._set_aside(kind, key, where)
        log.warning("refusing checkpoint %s: %s; set aside (%s); the state is rebuilt by replay", where, why, aside)

    @abc.abstractmethod
    def _write(self, kind: str, key: bytes, blob: bytes, keep_previous: bool = False) -> None:
        """Keep ``blob`` as the newest checkpoint of ``key``: the one before it becomes the previous
        one, or with ``keep_previous`` is replaced (the previous one stays)."""

    def _newest_source(self, kind: str, key: bytes) -> tuple[str, int | None, int] | None:
        """``(topic, partition, offset)`` of the newest checkpoint kept for ``key`` (None: none);
        a store that keeps none apart reads it from the newest of :meth:`_candidates`."""
        found = [src for _, data in self._candidates(kind, key) if (src := CheckpointSeal.source(data)) is not None]
        return max(found, key=lambda src: src[2]) if found else None

    @abc.abstractmethod
    def _candidates(self, kind: str, key: bytes) -> Iterable[tuple[str, bytes]]:
        """``(where, bytes)`` of the checkpoints kept for ``key`` (at most two)."""

    @abc.abstractmethod
    def _set_aside(self, kind: str, key: bytes, where: str) -> str:
        """Make sure the refused checkpoint at ``where`` is not read again; says where it went."""
