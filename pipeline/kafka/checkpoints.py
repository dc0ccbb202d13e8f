"""Checkpoints as files under ``state_dir/checkpoints/``, shared by the workers of one host.

>>> import tempfile
>>> store = FileCheckpointStore(tempfile.mkdtemp(), every=2, secret=b"0123456789abcdef")
>>> store.save("explain", b"s/0", {"n": 1}, Source("tasks", 3, 41))
>>> store.load("explain", b"s/0", "tasks", 3)
({'n': 1}, 41)
>>> store.load("explain", b"s/0", "tasks", 3, before_offset=41) is None  # not before offset 41
True
>>> store.load("explain", b"s/0", "tasks", 2) is None  # another partition: not ours
True
>>> FileCheckpointStore(store.directory, secret=b"another key 12345").load("explain", b"s/0", "tasks", 3) is None
True
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from streamxai.schemas import Source  # noqa: F401  (used by the doctest)

from .checkpoint_seal import HEADER_BYTES, CheckpointSeal, SealedStore
from .committed_offsets import CommittedOffsets

__all__ = ["FileCheckpointStore"]


class FileCheckpointStore(SealedStore):
    """Sealed checkpoints of per-key handler state, as files under ``directory``.

    File names are SHA-256 hashes of the key, and files are written atomically (temporary file,
    then rename), so the workers of one host can share them if they share the key.
    """

    def __init__(self, directory: str | os.PathLike[str], every: int = 2000, *, secret: bytes,
                 commits: CommittedOffsets | None = None):
        super().__init__(every, secret=secret, commits=commits)
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"FileCheckpointStore({str(self.directory)!r}, every={self.every})"

    def _paths(self, kind: str, key: bytes) -> tuple[Path, Path]:
        """The newest and the previous checkpoint of ``key``."""
        stem = self.directory / kind / hashlib.sha256(key).hexdigest()
        return stem.with_suffix(".ckpt"), stem.with_suffix(".prev")

    def _write(self, kind: str, key: bytes, blob: bytes, keep_previous: bool = False) -> None:
        newest, previous = self._paths(kind, key)
        newest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=newest.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            if newest.exists() and not keep_previous:
                os.replace(newest, previous)
            os.replace(tmp, newest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _drop_previous(self, kind: str, key: bytes) -> None:
        self._paths(kind, key)[1].unlink(missing_ok=True)

    def _newest_source(self, kind: str, key: bytes) -> tuple[str, int | None, int] | None:
        newest, _ = self._paths(kind, key)
        try:
            with open(newest, "rb") as fh:
                return CheckpointSeal.source(fh.read(HEADER_BYTES))
        except OSError:  # none yet (or unreadable: a restore refuses it)
            return None

    def _candidates(self, kind: str, key: bytes) -> list[tuple[str, bytes]]:
        out = []
        for path in self._paths(kind, key):
            try:
                out.append((str(path), path.read_bytes()))
            except FileNotFoundError:
                continue
            except OSError as e:
                self._refuse(kind, key, str(path), f"unreadable ({e.strerror})")
        return out

    def _set_aside(self, kind: str, key: bytes, where: str) -> str:
        """Rename the file to ``*.refused`` (replacing an older refused one: the disk use stays
        bounded), where it can be looked at and is never read as a checkpoint again."""
        aside = where + ".refused"
        try:
            os.replace(where, aside)
        except FileNotFoundError:
            return "already moved by another worker"
        except OSError as e:
            return f"renaming it failed: {e.strerror}; it is refused again on the next restore"
        return f"renamed to {aside}"
