"""A state whose history retention deleted is restored exactly while its checkpoint and what follows are
kept, else built from what remains with one warning and ``history_incomplete``, never a crash."""

from __future__ import annotations

import logging

import orjson
import pytest
from helpers.handler_inputs import one_group_settings
from streamxai.handlers import ModelHandler, Source
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.local.demo_stream import agrawal_events
from streamxai.schemas import dumps

KEY = b"test-checkpoint-key-0123456789"


class RetainedLog:
    """One partition whose messages before ``first`` were deleted by retention."""

    def __init__(self, items, first):
        self.items, self.first = items, first

    def __call__(self, topic, partition, before_offset, key, from_offset=0):
        for off in range(max(from_offset, self.first), before_offset):
            if self.items[off][0] == key:
                yield self.items[off][1]

    def first_offset(self, topic, partition):
        return self.first


def _settings():
    return one_group_settings(checkpoint_every=25)


def _predictions(handler, items, offsets):
    out = {}
    for off in offsets:
        for o in handler.on_message(items[off][1], items[off][0], Source("arrivals", 0, off)):
            if o.topic == "predictions":
                m = orjson.loads(o.value)
                out[m["seq"]] = m["y_pred"]
    return out


@pytest.fixture
def run(tmp_path):
    s = _settings()
    items = [(b"s", dumps(ev)) for ev in agrawal_events("s", 160, seed=11)]
    whole = _predictions(ModelHandler(s), items, range(160))
    store = FileCheckpointStore(tmp_path / "checkpoints", s.checkpoint_every, secret=KEY)
    _predictions(ModelHandler(s, checkpoints=store), items, range(60))  # checkpoints after 24 and 49
    return s, items, whole, store


def test_a_checkpoint_and_the_messages_after_it_kept_restore_exactly(run, caplog):
    s, items, whole, store = run
    resumed = ModelHandler(s, history=RetainedLog(items, first=40), checkpoints=store)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        got = _predictions(resumed, items, range(55, 160))  # the checkpoint after 49, then 50..54
    assert got == {seq: y for seq, y in whole.items() if seq >= 55}
    assert resumed.metrics.get("checkpoints_restored") == 1 and resumed.metrics.get("history_incomplete") == 0
    assert not caplog.records


@pytest.mark.parametrize("checkpoints", [True, False])
def test_a_state_without_its_history_goes_on_from_what_remains_with_one_warning(run, caplog, checkpoints):
    s, items, whole, store = run
    # resumed at 45: the checkpoint after 24 is the one before it, and 25..39 are gone
    resumed = ModelHandler(s, history=RetainedLog(items, first=40), checkpoints=store if checkpoints else None)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        got = _predictions(resumed, items, range(45, 160))
    assert sorted(got) == list(range(45, 160))  # every event predicted: the stream goes on
    assert resumed.metrics.get("history_incomplete") == 1
    assert resumed.metrics.get("replayed_events") == 5  # 40..44, what remains
    (line,) = [r.getMessage() for r in caplog.records]
    needed = 25 if checkpoints else 0
    assert "model state s" in line and f"arrivals[0] from offset {needed}" in line and "from offset 40" in line
    assert ("after its checkpoint" if checkpoints else "no checkpoint") in line and "what remains" in line
    assert "streamxai_history_incomplete_total 1.0" in resumed.metrics.exposition().decode()
