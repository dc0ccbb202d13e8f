"""The key that authenticates local checkpoints: the ``checkpoint_key`` setting, or a random key
generated once into ``state_dir/checkpoint.key`` and shared by the workers of that ``state_dir``.
A key file that cannot be used is set aside (renamed) and replaced with one warning, under a
lock on ``state_dir`` so the workers of one host agree on the new key.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> key = checkpoint_secret("", d)
>>> len(key), checkpoint_secret("", d) == key
(64, True)
>>> _ = (Path(d) / "checkpoint.key").write_bytes(b"garbage")
>>> replaced = []
>>> new = checkpoint_secret("", d, on_replaced=lambda: replaced.append(1))
>>> new != key, len(new), replaced, (Path(d) / "checkpoint.key.refused").read_bytes()
(True, 64, [1], b'garbage')
"""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from streamxai.schemas import ConfigError

__all__ = ["checkpoint_secret", "KEY_FILE"]

log = logging.getLogger("streamxai")

#: the name of the generated key's file under ``state_dir``
KEY_FILE = "checkpoint.key"
_KEY_BYTES = 32  # of a generated key, written as hex


class _Unusable(Exception):
    """The key file holds no key streamxai can use (the message says why, never what it holds)."""


def checkpoint_secret(key_setting: str, state_dir: str | os.PathLike[str],
                      on_replaced: Callable[[], None] | None = None) -> bytes:
    """The checkpoint key: ``key_setting`` if given, or else the key in ``state_dir/checkpoint.key``,
    generated (64 hex digits, mode 0600, with a warning) when there is none and replaced when it
    cannot be used (set aside, one warning, ``on_replaced`` called).

    A key file readable by others is refused with a :class:`ConfigError`: whoever can read it can
    forge checkpoints, and the fix (``chmod 600``) is the operator's. So is a key file that cannot
    be set aside (``state_dir`` not writable).
    """
    if key_setting:
        return key_setting.encode()
    path = Path(state_dir) / KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent):
        try:
            return _read(path)
        except FileNotFoundError:
            key = _generate(path)
            log.warning("no checkpoint_key set: generated one in %s (mode 0600); workers that share this "
                        "state_dir share it; set checkpoint_key to share checkpoints otherwise", path)
            return key
        except _Unusable as e:
            why = str(e)
        aside = _set_aside(path, why)
        key = _generate(path)
    log.warning("checkpoint key file %s cannot be used: %s; set aside (renamed to %s) and a new key generated in "
                "its place: the checkpoints sealed with the old key are set aside as they are met and their states "
                "rebuilt by replay", path, why, aside)
    if on_replaced is not None:
        on_replaced()
    return key


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive lock on ``directory`` between the processes (and threads) that take it."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _read(path: Path) -> bytes:
    """The key in ``path``; :class:`FileNotFoundError` if there is none, :class:`_Unusable` if it
    cannot be used, :class:`ConfigError` if others can read it."""
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(path)
    if not path.is_file():
        raise _Unusable("it is not a regular file")
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"checkpoint key file {path} is accessible to other users (mode {oct(mode & 0o777)}); "
                          f"run `chmod 600 {path}`")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise _Unusable(f"it cannot be read ({e.strerror})") from None
    text = data.strip()
    if len(text) != 2 * _KEY_BYTES or not all(c in b"0123456789abcdefABCDEF" for c in text):
        raise _Unusable(f"it does not hold the {2 * _KEY_BYTES} hex digits streamxai writes "
                        f"({len(data)} bytes{', not text' if not text.isascii() else ''})")
    return text


def _generate(path: Path) -> bytes:
    """A new random key, written whole into ``path`` (a private temporary file renamed into place)."""
    key = secrets.token_hex(_KEY_BYTES).encode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".checkpoint-key-")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return key


def _set_aside(path: Path, why: str) -> str:
    """Rename the unusable key file to ``checkpoint.key.refused`` (or, if that name is taken by
    something it cannot replace, a name with the time in it); where it went."""
    for aside in (path.with_name(KEY_FILE + ".refused"), path.with_name(f"{KEY_FILE}.refused-{time.time_ns()}")):
        try:
            os.replace(path, aside)
        except OSError:
            continue
        return str(aside)
    raise ConfigError(f"checkpoint key file {path} cannot be used: {why}, and it cannot be set aside "
                      f"(is {path.parent} writable?): make {path.parent} writable, or move the file away, "
                      f"or set checkpoint_key")
