"""Checkpoints: authenticated (a crafted file never runs code), hashed file names, only a
checkpoint before the resumed message is restored, and the key's handling."""

from __future__ import annotations

import logging
import os
import pickle

import numpy as np
import orjson
import pytest
from helpers.damage import DAMAGES, damaged
from helpers.handler_inputs import one_group_settings
from streamxai.app import checkpoint_store
from streamxai.handlers import ExplainHandler, ModelHandler, Source, checkpoint_changed
from streamxai.kafka.checkpoint_seal import checkpoint_secret
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.local.demo_stream import agrawal_events
from streamxai.schemas import ConfigError, dumps
from streamxai.settings import Secret, Settings

KEY = b"test-checkpoint-key-0123456789"


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def store(tmp_path, **kw):
    return FileCheckpointStore(tmp_path / "checkpoints", kw.pop("every", 5), secret=kw.pop("secret", KEY))


def test_round_trip_and_hashed_names(tmp_path):
    st = store(tmp_path)
    key = ("k" * 128 + "/ipdp/commission").encode()
    st.save("change", key, {"n": 3}, Source("t", 1, 9))
    assert st.load("change", key, "t", 1) == ({"n": 3}, 9)
    (path,) = (tmp_path / "checkpoints" / "change").iterdir()
    assert len(path.name) == 64 + len(".ckpt")


@pytest.mark.parametrize("forge", ["v1-pickle", "v2-bad-tag", "v2-other-key"])
def test_a_crafted_checkpoint_is_refused_and_never_unpickled(tmp_path, caplog, forge):
    # a pickle dropped into state_dir must not run its code (here: create a marker file)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Exploit(marker))
    st = store(tmp_path)
    st.save("model", b"victim", {"ok": 1}, Source("features", 0, 3))
    newest, _ = st._paths("model", b"victim")
    header = orjson.dumps({"kind": "model", "key_sha256": "0" * 64, "topic": "features", "partition": 0, "offset": 3})
    if forge == "v1-pickle":
        data = b"streamxai-checkpoint/v1\n" + header + b"\n" + payload
    elif forge == "v2-bad-tag":
        data = b"streamxai-checkpoint/v2\n" + b"0" * 64 + b"\n" + header + b"\n" + payload
    else:  # a genuine checkpoint of another key, renamed to stand for this one
        attacker = FileCheckpointStore(tmp_path / "checkpoints", 5, secret=KEY)
        attacker.save("model", b"other", _Exploit(marker), Source("features", 0, 3))
        data = attacker._paths("model", b"other")[0].read_bytes()
    newest.write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        assert st.load("model", b"victim", "features", 0) is None
    assert not marker.exists()
    refusals = [r for r in caplog.records if "refusing checkpoint" in r.getMessage()]
    assert len(refusals) == 1 and "rebuilt by replay" in refusals[0].getMessage()


def test_a_tampered_byte_is_refused(tmp_path):
    st = store(tmp_path)
    st.save("model", b"s", {"weights": [1.0, 2.0]}, Source("features", 0, 7))
    path, _ = st._paths("model", b"s")
    data = bytearray(path.read_bytes())
    data[-3] ^= 1
    path.write_bytes(bytes(data))
    assert st.load("model", b"s", "features", 0) is None


def test_a_checkpoint_written_with_another_key_is_refused(tmp_path):
    store(tmp_path).save("model", b"s", 1, Source("features", 0, 7))
    assert store(tmp_path, secret=b"another-key-0123456789").load("model", b"s", "features", 0) is None


def test_the_previous_checkpoint_serves_when_the_newest_is_not_before_the_message(tmp_path):
    st = store(tmp_path)
    st.save("model", b"s", "old", Source("features", 0, 4))
    st.save("model", b"s", "new", Source("features", 0, 9))
    assert st.load("model", b"s", "features", 0, before_offset=10) == ("new", 9)
    assert st.load("model", b"s", "features", 0, before_offset=9) == ("old", 4)
    assert st.load("model", b"s", "features", 0, before_offset=4) is None


class _Counted:
    """A state that counts how often it is unpickled."""

    loaded = 0

    def __init__(self, name):
        self.name = name

    def __setstate__(self, state):
        type(self).loaded += 1
        self.__dict__.update(state)


def test_a_restore_unpickles_only_the_state_it_restores(tmp_path, monkeypatch):
    # a key keeps two checkpoints; a restore holds one state, not both
    st = store(tmp_path)
    st.save("model", b"s", _Counted("old"), Source("features", 0, 4))
    st.save("model", b"s", _Counted("new"), Source("features", 0, 9))
    monkeypatch.setattr(_Counted, "loaded", 0)
    restored, offset = st.load("model", b"s", "features", 0)
    assert (restored.name, offset, _Counted.loaded) == ("new", 9, 1)
    restored, offset = st.load("model", b"s", "features", 0, before_offset=9)
    assert (restored.name, offset, _Counted.loaded) == ("old", 4, 2)


def test_a_restored_array_owns_its_data(tmp_path):
    # not a view of the checkpoint's buffer through wrappers (a memoryview, a second array)
    st = store(tmp_path)
    st.save("explain", b"s/0", {"rows": np.arange(12.0).reshape(3, 4)}, Source("tasks", 0, 4))
    (restored, _) = st.load("explain", b"s/0", "tasks", 0)
    rows = restored["rows"]
    assert rows.base is None and rows.flags.owndata and rows.flags.writeable
    assert rows.tolist() == np.arange(12.0).reshape(3, 4).tolist()


def test_a_newest_checkpoint_that_cannot_be_unpickled_leaves_the_previous_one_to_serve(tmp_path, caplog):
    st = store(tmp_path)
    st.save("model", b"s", "old", Source("features", 0, 4))
    st.save("model", b"s", _Gone(), Source("features", 0, 9))
    newest, previous = st._paths("model", b"s")
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        with pytest.MonkeyPatch.context() as mp:
            mp.delattr(__import__(__name__), "_Gone")  # another version's class: unpickling fails
            assert st.load("model", b"s", "features", 0) == ("old", 4)
    assert "cannot be unpickled" in caplog.text and not newest.exists() and previous.exists()


def _settings(**over):
    return one_group_settings(**{"checkpoint_every": 25, **over})


class _Log:
    def __init__(self, items):
        self.items = items

    def history(self, topic, partition, before_offset, key, from_offset=0):
        for k, v in self.items[from_offset:before_offset]:
            if k == key:
                yield v


def _outs(handler, items, offsets, topic):
    got = {}
    for off in offsets:
        for o in handler.on_message(items[off][1], items[off][0], Source(topic, 0, off)):
            got.setdefault(o.topic, []).append(o)
    return got


def test_a_checkpoint_newer_than_the_committed_offset_is_not_restored(tmp_path):
    # a checkpoint after event 49, a SIGKILL before events 41..59's outputs are flushed, a resume at offset 41:
    # that checkpoint is not restored (41..49 would be duplicates whose outputs are never sent)
    s = _settings()
    items = [(b"s", dumps(ev)) for ev in agrawal_events("s", 100, seed=3)]
    whole = _outs(ModelHandler(s), items, range(100), "features")
    st = store(tmp_path, every=25)
    _outs(ModelHandler(s, checkpoints=st), items, range(60), "features")  # checkpoints after 24 and 49
    resumed = ModelHandler(s, history=_Log(items).history, checkpoints=st)
    again = _outs(resumed, items, range(41, 100), "features")
    for topic in ("predictions", "explain-tasks"):
        want = [orjson.loads(o.value) for o in whole[topic][41:]]
        got = [orjson.loads(o.value) for o in again[topic]]
        for m in want + got:
            m.pop("sent_at", None)
        assert got == want, topic
    assert resumed.metrics.get("checkpoints_restored") == 1  # the one after event 24
    assert resumed.metrics.get("replayed_events") == 41 - 25


def test_explain_handler_resumes_before_its_newest_checkpoint(tmp_path):
    s = _settings()
    tasks = [(o.key, o.value) for o in _outs(ModelHandler(s), [(b"e", dumps(ev)) for ev in
                                                               agrawal_events("e", 120, seed=4)],
                                             range(120), "features")["explain-tasks"]]
    whole = _outs(ExplainHandler(s), tasks, range(120), "explain-tasks")["explanations"]
    st = store(tmp_path, every=25)
    _outs(ExplainHandler(s, checkpoints=st), tasks, range(80), "explain-tasks")  # newest after 74
    resumed = ExplainHandler(s, history=_Log(tasks).history, checkpoints=st)
    again = _outs(resumed, tasks, range(61, 120), "explain-tasks")["explanations"]
    want = [o.value for o in whole if orjson.loads(o.value)["seq"] >= 61]
    assert [o.value for o in again] == want


def test_a_stop_checkpoints_every_changed_state_so_a_restart_replays_nothing(tmp_path):
    # without a checkpoint at the stop, a SIGTERM would make each key replay everything since its
    # last periodic checkpoint (up to checkpoint_every messages of each stream, group and drift state)
    s = _settings(checkpoint_every=2000)  # never due in this run
    items = [(ev.stream_id.encode(), dumps(ev))  # two streams, interleaved
             for pair in zip(agrawal_events("a", 60, seed=5), agrawal_events("b", 60, seed=6), strict=True)
             for ev in pair]
    whole = _outs(ModelHandler(s), items, range(120), "features")
    tasks = [(o.key, o.value) for o in whole["explain-tasks"]]
    explained = _outs(ExplainHandler(s), tasks, range(120), "explain-tasks")["explanations"]
    st = store(tmp_path, every=s.checkpoint_every)
    for handler, log, topic in ((ModelHandler, items, "features"), (ExplainHandler, tasks, "explain-tasks")):
        first = handler(s, checkpoints=st)
        _outs(first, log, range(80), topic)
        assert first.metrics.get("checkpoints_written") == 0
        assert first.checkpoint_all() == 2 and first.checkpoint_all() == 0  # each changed state, once
        resumed = handler(s, history=_Log(log).history, checkpoints=st)
        again = _outs(resumed, log, range(80, 120), topic)
        assert resumed.metrics.get("checkpoints_restored") == 2
        # by stage: a restart that replays nothing still says which stage restored its states
        assert resumed.metrics.get(f"checkpoints_restored{{stage={handler.STAGE}}}") == 2
        assert resumed.metrics.get(handler.REPLAYED_METRIC) == 0  # nothing before offset 80 is re-run
        if handler is ModelHandler:
            want = [orjson.loads(o.value) for o in whole["explain-tasks"][80:]]
            got = [orjson.loads(o.value) for o in again["explain-tasks"]]
            for m in want + got:
                m.pop("sent_at", None)
            assert got == want
        else:
            assert [o.value for o in again["explanations"]] == [
                o.value for o in explained if orjson.loads(o.value)["seq"] >= 40]


def test_a_stop_short_of_time_writes_the_states_of_the_most_messages_and_a_restart_replays_the_rest(tmp_path):
    s = _settings(checkpoint_every=2000)  # never due in this run
    events = {sid: list(agrawal_events(sid, n + 10, seed=i)) for i, (sid, n) in enumerate((("c", 10), ("a", 30), ("b", 20)))}
    first_part = [(ev.stream_id.encode(), dumps(ev)) for evs in events.values() for ev in evs[:-10]]
    items = first_part + [(ev.stream_id.encode(), dumps(ev)) for evs in events.values() for ev in evs[-10:]]
    whole = _outs(ModelHandler(s), items, range(len(items)), "features")
    st = store(tmp_path, every=s.checkpoint_every)
    first = ModelHandler(s, checkpoints=st)
    _outs(first, items, range(len(first_part)), "features")
    ticks = iter(range(100))  # a clock that moves one step a look: time for two checkpoints
    assert checkpoint_changed([first], until=2, clock=lambda: next(ticks)) == (2, 1)
    assert [st.load("model", k, "features", 0) is not None for k in (b"a", b"b", b"c")] == [True, True, False]
    resumed = ModelHandler(s, history=_Log(items).history, checkpoints=st)
    again = _outs(resumed, items, range(len(first_part), len(items)), "features")
    assert resumed.metrics.get("checkpoints_restored") == 2
    assert resumed.metrics.get(ModelHandler.REPLAYED_METRIC) == 10  # c's messages, none of a's or b's
    want = [orjson.loads(o.value) for o in whole["explain-tasks"][-len(again["explain-tasks"]):]]
    got = [orjson.loads(o.value) for o in again["explain-tasks"]]
    for m in want + got:
        m.pop("sent_at", None)
    assert got == want and len(got) == 30


def test_generated_key_file_is_private_reused_and_never_shown(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        k1 = checkpoint_secret("", tmp_path)
    path = tmp_path / "checkpoint.key"
    assert path.stat().st_mode & 0o777 == 0o600
    assert checkpoint_secret("", tmp_path) == k1 and len(k1) == 64
    assert "generated one" in caplog.text and k1.decode() not in caplog.text
    s = Settings(state_dir=str(tmp_path), checkpoint_key=Secret("a-configured-key-0123"))
    cs = checkpoint_store(s)
    assert "a-configured-key" not in repr(cs) + repr(s) + str(s.public_dict())
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        checkpoint_secret("", tmp_path)


def test_short_checkpoint_key_is_a_config_error():
    with pytest.raises(ConfigError, match="checkpoint_key is too short"):
        Settings(checkpoint_key=Secret("short"))


# --- a damaged state_dir ----------------------------------------------------------------------------

@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_checkpoint_is_set_aside_with_one_line_and_the_next_one_is_used(tmp_path, caplog, how):
    st = store(tmp_path)
    st.save("model", b"s", "old", Source("features", 0, 4))
    st.save("model", b"s", "new", Source("features", 0, 9))
    newest, previous = st._paths("model", b"s")
    newest.write_bytes(damaged(newest.read_bytes(), how))
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        assert st.load("model", b"s", "features", 0) == ("old", 4)  # the previous one serves
        assert st.load("model", b"s", "features", 0) == ("old", 4)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "set aside" in lines[0] and "rebuilt by replay" in lines[0], lines
    assert not newest.exists()
    (aside,) = newest.parent.glob(newest.name + ".refused*")
    assert str(aside) in lines[0]
    st.save("model", b"s", "newer", Source("features", 0, 12))  # writing goes on as before
    assert st.load("model", b"s", "features", 0) == ("newer", 12)


class _Gone:
    pass


def test_a_signed_checkpoint_that_cannot_be_unpickled_is_set_aside(tmp_path, caplog, monkeypatch):
    # written by another version whose state class is gone: the signature holds, unpickling fails
    st = store(tmp_path)
    st.save("change", b"s", _Gone(), Source("explanations", 0, 4))
    monkeypatch.delattr(__import__(__name__), "_Gone")
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        assert st.load("change", b"s", "explanations", 0) is None
    assert "cannot be unpickled" in caplog.text and "set aside" in caplog.text


def test_an_unreadable_checkpoint_is_set_aside(tmp_path, caplog):
    st = store(tmp_path)
    newest, _ = st._paths("explain", b"s/0")
    newest.mkdir(parents=True)  # reading it fails (as root, a mode does not stop a read)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        assert st.load("explain", b"s/0", "tasks", 0) is None
    assert "set aside" in caplog.text and not newest.exists()


@pytest.mark.slow
def test_the_checkpoint_topic_store_logs_nothing_while_the_broker_is_down(capfd):
    # librdkafka logs every reconnect attempt to stderr, many a second while the broker is down;
    # a failed read or write is an error raised here, and the outage is the worker's two lines
    from confluent_kafka import KafkaException
    from streamxai.kafka.checkpoint_topic import KafkaCheckpointStore
    from streamxai.local.ports import free_port

    s = Settings(bootstrap_servers=f"127.0.0.1:{free_port()}")  # nothing listens there
    st = KafkaCheckpointStore(s, 5, secret=KEY, timeout=1.5)
    with pytest.raises(KafkaException, match="Broker transport failure"):
        st.load("model", b"k", "t", 0)
    with pytest.raises(KafkaException, match="Broker transport failure"):
        st.save("model", b"k", {"n": 1}, Source("t", 0, 3))
    st.close()
    assert "rdkafka" not in capfd.readouterr().err
