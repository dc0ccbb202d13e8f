"""Authenticated local-disk checkpoints of a handler's per-key state, to bound the replay after a restart.

A checkpoint holds the state after the message at ``topic[partition]@offset``. A worker
that finds a key without state restores the newest checkpoint *before* the message it is
processing and replays only the key's messages after that offset (``pipeline/kafka/replay.py``);
without one (another host, none written yet, or refused) it replays the key's whole history.

Safety:

- The state is a pickle (river models have no other complete format), so every file carries
  an HMAC-SHA256 over its header and payload, made with a secret key. A file that is not a v2
  checkpoint, has no valid tag, or belongs to another key is refused with one log line and
  never unpickled; the key's state is then rebuilt by replay. Without the key, nobody who can
  write to ``state_dir`` can make a worker run code.
- File names are SHA-256 hashes of the key, never the key itself (no length or character
  limit to trip over); the key's hash is inside the authenticated header too, so a file cannot
  be renamed to stand for another key.
- Each key keeps its two newest checkpoints. A checkpoint is written when its message is
  processed, before that message's outputs are flushed and its offset committed; after a
  SIGKILL the worker resumes from the committed offset, which may be *before* the newest
  checkpoint. Restoring it would skip the messages in between, whose outputs may never have
  been sent; so only a checkpoint strictly before the resumed message is used.

Files are written atomically (temporary file, then rename) under ``state_dir/checkpoints/``,
so workers on one host can share them, if they share the key (``checkpoint_key``, or the key
file generated once in ``state_dir``, see :func:`checkpoint_secret`).

>>> import tempfile
>>> store = CheckpointStore(tempfile.mkdtemp(), every=2, secret=b"0123456789abcdef")
>>> store.save("explain", b"s/0", {"n": 1}, Source("tasks", 3, 41))
>>> store.load("explain", b"s/0", "tasks", 3)
({'n': 1}, 41)
>>> store.load("explain", b"s/0", "tasks", 3, before_offset=41) is None  # not before offset 41
True
>>> store.load("explain", b"s/0", "tasks", 2) is None  # another partition: not ours
True
>>> CheckpointStore(store.directory, secret=b"another key 12345").load("explain", b"s/0", "tasks", 3) is None
True
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import pickle
import secrets
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from schemas import ConfigError, Source

__all__ = ["CheckpointStore", "checkpoint_secret", "checkpoint_store"]

log = logging.getLogger("streamxai")

_MAGIC = b"streamxai-checkpoint/v2\n"
_KEY_FILE = "checkpoint.key"
_MIN_SECRET = 16


class CheckpointStore:
    """Checkpoints of per-key handler state under ``directory``, authenticated with ``secret``.

    Subclasses keep the sealed bytes elsewhere (:class:`pipeline.kafka.checkpoint_topic.KafkaCheckpointStore`
    on a compacted topic) by overriding :meth:`_write` and :meth:`_candidates`.
    """

    def __init__(self, directory: str | os.PathLike[str], every: int = 2000, *, secret: bytes):
        if every < 0:
            raise ValueError(f"checkpoint_every={every} must be >= 0 (0 disables checkpoints)")
        if not isinstance(secret, bytes) or len(secret) < _MIN_SECRET:
            raise ValueError(f"the checkpoint key must be at least {_MIN_SECRET} bytes")
        self.directory = Path(directory)
        self.every = every
        self._secret = secret

    def __repr__(self) -> str:
        return f"CheckpointStore({str(self.directory)!r}, every={self.every})"

    def due(self, n_since: int) -> bool:
        return self.every > 0 and n_since >= self.every

    # sealing: HMAC over header and payload ------------------------------------------------

    def _tag(self, header: bytes, payload: bytes) -> bytes:
        return hmac.new(self._secret, header + b"\n" + payload, hashlib.sha256).hexdigest().encode()

    def _seal(self, kind: str, key: bytes, state: Any, src: Source) -> bytes:
        header = orjson.dumps({"kind": kind, "key_sha256": hashlib.sha256(key).hexdigest(),
                               "topic": src.topic, "partition": src.partition, "offset": src.offset})
        payload = pickle.dumps(state, protocol=5)
        return _MAGIC + self._tag(header, payload) + b"\n" + header + b"\n" + payload

    def _unseal(
        self, data: bytes, where: str, kind: str, key: bytes, topic: str, partition: int | None
    ) -> tuple[Any, int] | None:
        magic, _, rest = data.partition(b"\n")
        tag, _, rest = rest.partition(b"\n")
        header, _, payload = rest.partition(b"\n")
        if magic + b"\n" != _MAGIC:
            why = "not a signed (v2) streamxai checkpoint"
        elif not hmac.compare_digest(tag, self._tag(header, payload)):
            why = "its HMAC does not match (tampered, torn, or written with another checkpoint key)"
        else:
            h = orjson.loads(header)
            if h["kind"] != kind or h["key_sha256"] != hashlib.sha256(key).hexdigest():
                why = "it belongs to another key"
            elif h["topic"] != topic or h["partition"] != partition:
                return None  # another partition's (the key moved): not ours, not an attack
            else:
                return pickle.loads(payload), int(h["offset"])  # noqa: S301 - authenticated above
        log.warning("refusing checkpoint %s: %s; the state is rebuilt by replay", where, why)
        return None

    # the store's interface ---------------------------------------------------------------

    def save(self, kind: str, key: bytes, state: Any, src: Source) -> None:
        self._write(kind, key, self._seal(kind, key, state, src))

    def load(
        self, kind: str, key: bytes, topic: str, partition: int | None, before_offset: int | None = None
    ) -> tuple[Any, int] | None:
        """``(state, offset)`` of the newest valid checkpoint of ``key`` on ``topic[partition]``
        with ``offset < before_offset`` (any offset if None), or None."""
        found_any = []
        for where, data in self._candidates(kind, key):
            found = self._unseal(data, where, kind, key, topic, partition)
            if found is not None and (before_offset is None or found[1] < before_offset):
                found_any.append(found)
        return max(found_any, key=lambda f: f[1]) if found_any else None

    # local files -------------------------------------------------------------------------

    def _paths(self, kind: str, key: bytes) -> tuple[Path, Path]:
        """The newest and the previous checkpoint of ``key``."""
        stem = self.directory / kind / hashlib.sha256(key).hexdigest()
        return stem.with_suffix(".ckpt"), stem.with_suffix(".prev")

    def _write(self, kind: str, key: bytes, blob: bytes) -> None:
        newest, previous = self._paths(kind, key)
        newest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=newest.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            if newest.exists():
                os.replace(newest, previous)
            os.replace(tmp, newest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _candidates(self, kind: str, key: bytes) -> list[tuple[str, bytes]]:
        out = []
        for path in self._paths(kind, key):
            try:
                out.append((str(path), path.read_bytes()))
            except FileNotFoundError:
                continue
            except OSError as e:
                log.warning("refusing checkpoint %s: unreadable (%s); the state is rebuilt by replay", path, e)
        return out


def checkpoint_secret(key_setting: str, state_dir: str | os.PathLike[str]) -> bytes:
    """The checkpoint key: the ``checkpoint_key`` setting, or else a random key generated once
    into ``state_dir/checkpoint.key`` (mode 0600, with a warning) and reused by every worker
    sharing that ``state_dir``.

    A key file readable by others is refused: whoever can read it can forge checkpoints.
    """
    if key_setting:
        return key_setting.encode()
    path = Path(state_dir) / _KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
        log.warning("no checkpoint_key set: generated one in %s (mode 0600); workers that share this "
                    "state_dir share it; set checkpoint_key to share checkpoints otherwise", path)
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"checkpoint key file {path} is accessible to other users (mode {oct(mode & 0o777)}); "
                          f"run `chmod 600 {path}`")
    for _ in range(50):  # another worker may have created it a moment ago and not written it yet
        text = path.read_text().strip()
        if text:
            return text.encode()
        time.sleep(0.02)
    raise ConfigError(f"checkpoint key file {path} is empty; delete it to generate a new key")


def checkpoint_store(settings: Any) -> CheckpointStore | None:
    """The store a worker uses (None when ``checkpoint_every`` is 0: no checkpoints written or
    read): ``state_dir/checkpoints`` authenticated by :func:`checkpoint_secret`, or with
    ``checkpoint_store = "kafka"`` the compacted topic ``<prefix>checkpoints``
    (:mod:`pipeline.kafka.checkpoint_topic`), authenticated by ``checkpoint_key``."""
    if settings.checkpoint_every == 0:
        return None
    if settings.checkpoint_store == "kafka":
        from .checkpoint_topic import KafkaCheckpointStore, ensure_checkpoint_topic

        if not settings.checkpoint_key.reveal():
            raise ConfigError("checkpoint_store = kafka needs checkpoint_key (the same on every worker, "
                              ">= 16 characters, e.g. `openssl rand -hex 32`), so a worker trusts what another wrote")
        ensure_checkpoint_topic(settings)
        return KafkaCheckpointStore(settings, settings.checkpoint_every, secret=settings.checkpoint_key.reveal().encode())
    secret = checkpoint_secret(settings.checkpoint_key.reveal(), settings.state_dir)
    return CheckpointStore(Path(settings.state_dir) / "checkpoints", settings.checkpoint_every, secret=secret)
