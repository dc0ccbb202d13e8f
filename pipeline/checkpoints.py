"""Local-disk checkpoints of a handler's per-key state, to bound the replay after a restart.

A checkpoint holds the state after the message at ``topic[partition]@offset``. A worker
that finds a key without state restores the newest checkpoint and replays only the key's
messages after that offset (``pipeline/replay.py``); without a checkpoint (another host,
or none written yet) it replays the key's whole history. Files are written atomically
(temporary file, then rename) under ``state_dir/checkpoints/``, so workers on one host share
them. They are pickles written by the worker itself: keep ``state_dir`` private.

>>> import tempfile
>>> store = CheckpointStore(tempfile.mkdtemp(), every=2)
>>> store.save("explain", b"s/0", {"n": 1}, Source("tasks", 3, 41))
>>> store.load("explain", b"s/0", "tasks", 3)
({'n': 1}, 41)
>>> store.load("explain", b"s/0", "tasks", 2) is None  # another partition: not ours
True
"""

from __future__ import annotations

import base64
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import orjson

from .handlers.common import Source, log

__all__ = ["CheckpointStore"]

_MAGIC = b"streamxai-checkpoint/v1\n"


class CheckpointStore:
    def __init__(self, directory: str | os.PathLike[str], every: int = 2000):
        if every < 0:
            raise ValueError(f"checkpoint_every={every} must be >= 0 (0 disables checkpoints)")
        self.directory = Path(directory)
        self.every = every

    def due(self, n_since: int) -> bool:
        return self.every > 0 and n_since >= self.every

    def _path(self, kind: str, key: bytes) -> Path:
        return self.directory / kind / (base64.urlsafe_b64encode(key).decode("ascii") + ".ckpt")

    def save(self, kind: str, key: bytes, state: Any, src: Source) -> None:
        path = self._path(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = orjson.dumps({"topic": src.topic, "partition": src.partition, "offset": src.offset})
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + header + b"\n")
                pickle.dump(state, fh, protocol=5)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load(self, kind: str, key: bytes, topic: str, partition: int) -> tuple[Any, int] | None:
        """``(state, offset)`` of the newest checkpoint of ``key`` on ``topic[partition]``, or None."""
        path = self._path(kind, key)
        try:
            with path.open("rb") as fh:
                if fh.readline() != _MAGIC:
                    raise ValueError("not a streamxai checkpoint")
                header = orjson.loads(fh.readline())
                if header["topic"] != topic or header["partition"] != partition:
                    return None
                return pickle.load(fh), int(header["offset"])
        except FileNotFoundError:
            return None
        except Exception as e:  # a torn or foreign file: fall back to a full replay
            log.warning("ignoring unreadable checkpoint %s (%s); replaying the full history", path, e)
            return None
