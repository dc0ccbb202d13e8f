"""An unusable checkpoint key file is replaced (one warning, a metric, one key per state_dir) and its
checkpoints rebuilt; a key from the settings is never replaced, and no key is ever shown."""

from __future__ import annotations

import logging
import os
import threading

import pytest
from streamxai.app import checkpoint_store
from streamxai.kafka.checkpoint_key import checkpoint_secret
from streamxai.metrics import Metrics
from streamxai.schemas import ConfigError, Source
from streamxai.settings import Settings

DAMAGED_KEYS = ["random-bytes", "zero-length", "text", "truncated", "a-directory"]


def _damage(path, good, how):
    if how == "random-bytes":
        path.write_bytes(b"\x80" + os.urandom(63))
    elif how == "zero-length":
        path.write_bytes(b"")
    elif how == "text":
        path.write_text("this is not the key streamxai wrote\n")
    elif how == "truncated":
        path.write_bytes(good[:20])
    else:
        path.unlink()
        path.mkdir()
        (path / "inside").write_bytes(b"x")


@pytest.mark.parametrize("how", DAMAGED_KEYS)
def test_an_unusable_key_file_is_set_aside_and_replaced_with_one_line(tmp_path, caplog, how):
    path = tmp_path / "checkpoint.key"
    good = checkpoint_secret("", tmp_path)
    _damage(path, good, how)
    before = path.read_bytes() if path.is_file() else None
    replaced = []
    caplog.clear()  # the line of the first key's generation
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        new = checkpoint_secret("", tmp_path, on_replaced=lambda: replaced.append(1))
    assert len(new) == 64 and new != good and replaced == [1]
    assert path.read_bytes() == new and path.stat().st_mode & 0o777 == 0o600
    aside = tmp_path / "checkpoint.key.refused"
    assert (aside.read_bytes() if before is not None else sorted(p.name for p in aside.iterdir())) == (
        before if before is not None else ["inside"])  # renamed aside, not deleted
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines
    assert str(path) in lines[0] and "cannot be used" in lines[0] and str(aside) in lines[0]  # what, where
    assert "new key" in lines[0] and "rebuilt by replay" in lines[0]  # what the worker did
    for key in (good, new) + ((before,) if before and before.strip() else ()):
        assert key.decode(errors="replace")[:8] not in lines[0]  # nothing of a key is shown
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        assert checkpoint_secret("", tmp_path, on_replaced=lambda: replaced.append(1)) == new  # kept from now on
    assert replaced == [1] and len(caplog.records) == 1


def test_a_replaced_key_sets_aside_the_old_checkpoints_and_counts_once(tmp_path, caplog):
    s = Settings(state_dir=str(tmp_path), checkpoint_every=5)
    old = checkpoint_store(s)
    old.save("model", b"s", {"n": 1}, Source("features", 0, 4))
    (tmp_path / "checkpoint.key").write_bytes(os.urandom(64))
    metrics = Metrics()
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        new = checkpoint_store(s, metrics=metrics)
        again = checkpoint_store(s, metrics=metrics)  # another worker of the state_dir: the same new key
        assert new.load("model", b"s", "features", 0) is None  # sealed with the old key: rebuilt by replay
    assert metrics.get("checkpoint_keys_replaced") == 1
    assert "streamxai_checkpoint_keys_replaced_total 1.0" in metrics.exposition().decode()
    assert "refusing checkpoint" in caplog.text and "set aside" in caplog.text
    new.save("model", b"s", {"n": 2}, Source("features", 0, 9))
    assert again.load("model", b"s", "features", 0) == ({"n": 2}, 9)


def test_the_workers_of_a_state_dir_replace_a_damaged_key_once_and_share_the_new_one(tmp_path, caplog):
    checkpoint_secret("", tmp_path)
    (tmp_path / "checkpoint.key").write_bytes(b"\x00" * 64)
    keys, replaced, start = [], [], threading.Barrier(8)
    caplog.clear()

    def worker():
        start.wait(5)
        keys.append(checkpoint_secret("", tmp_path, on_replaced=lambda: replaced.append(1)))

    with caplog.at_level(logging.WARNING, logger="streamxai"):
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert len(keys) == 8 and len(set(keys)) == 1 and replaced == [1]
    assert sum("cannot be used" in r.getMessage() for r in caplog.records) == 1


def test_a_key_given_in_the_settings_is_used_and_the_file_never_touched(tmp_path):
    path = tmp_path / "checkpoint.key"
    path.write_bytes(b"garbage")
    assert checkpoint_secret("a-configured-key-0123", tmp_path) == b"a-configured-key-0123"
    assert path.read_bytes() == b"garbage" and not (tmp_path / "checkpoint.key.refused").exists()


def test_a_key_file_others_can_read_is_refused_not_replaced(tmp_path):
    path = tmp_path / "checkpoint.key"
    good = checkpoint_secret("", tmp_path)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600") as err:
        checkpoint_secret("", tmp_path)
    assert good.decode()[:8] not in str(err.value) and path.read_bytes() == good

