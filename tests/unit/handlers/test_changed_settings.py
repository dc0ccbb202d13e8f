"""A model or change checkpoint built under other state-shaping settings is rebuilt from history (one WARNING,
``checkpoints_outdated``); settings that shape no state keep it. The explain stage's case: ``test_labels.py``."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from helpers.arrivals import ARRIVALS, record_arrivals, run_handlers
from helpers.handler_inputs import delayed_settings
from helpers.partition_log import PartitionLog
from helpers.streams import threshold_events
from streamxai.handlers import ChangeHandler, ModelHandler
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.local.demo_stream import labels_later
from streamxai.settings import Settings

SECRET = b"checkpoint-key-" * 3
PASSWORD = "sasl-password-not-to-be-logged"
#: settings that shape neither a model nor a change state
UNSHAPING = dict(web_port=7777, max_lag_s=5.0, emit_every=7, sample_rate=0.5, checkpoint_every=10,
                 session_timeout_s=9.0, max_message_bytes=32 * 1024, max_seq_gap=500)


def arrivals(n=400) -> PartitionLog:
    log = PartitionLog()
    record_arrivals(log, labels_later(threshold_events("t", n, drift_at=n // 2, seed=3), 6))
    return log


def sent(handler_of, plog: PartitionLog, topic: str, partition: int, start: int, keep: str) -> list[bytes]:
    """The ``keep`` messages the handlers ``handler_of(offset)`` send for ``plog``'s messages from ``start`` on."""
    out = []
    for off, (key, value, _, _) in enumerate(plog.parts[(topic, partition)]):
        h = handler_of(off)
        src = plog.source(topic, partition, off)
        h.needs_recovery(key, src)
        out += [o.value for o in h.on_message(value, key, src) if o.topic == keep and off >= start]
    return out


def restart(tmp_path, kind, s, new, plog, topic, keep):
    """A handler under ``s`` to the middle of ``plog``, then one under ``new``: what the second sent, what fresh
    handlers under ``new`` and ``s`` would have sent, and the second handler."""
    cut = len(plog.parts[(topic, 0)]) // 2
    store = FileCheckpointStore(tmp_path, every=40, secret=SECRET)
    first, second = kind(s, checkpoints=store), kind(new, history=plog, checkpoints=store)
    resumed = sent(lambda off: first if off < cut else second, plog, topic, 0, cut, keep)
    under_new, under_old = kind(new), kind(s)
    return (resumed, sent(lambda off: under_new, plog, topic, 0, cut, keep),
            sent(lambda off: under_old, plog, topic, 0, cut, keep), second)


@pytest.mark.parametrize("where", ["top level", "profile"])
def test_a_model_checkpoint_of_another_model_is_not_restored_but_rebuilt_under_the_new_settings(tmp_path, caplog,
                                                                                                where):
    # the restarted handler must not restore the old tree and go on predicting with it, silently
    s = delayed_settings(checkpoint_every=40, sasl_password=PASSWORD)
    if where == "top level":
        new = s.replace(model="river.linear_model.LogisticRegression", model_params={})
    else:  # the stream's profile changed its model; the top level did not
        new = s.replace(streams={"t*": {"model": "river.linear_model.LogisticRegression", "model_params": {}}})
    with caplog.at_level(logging.INFO, logger="streamxai"):
        resumed, under_new, under_old, second = restart(tmp_path, ModelHandler, s, new, arrivals(), ARRIVALS,
                                                        "predictions")
    assert not second.metrics.get("checkpoints_restored") and second.metrics.get("checkpoints_outdated") == 1
    assert resumed and resumed == under_new != under_old
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "model" in warned[0] and "rebuilding" in warned[0], warned
    assert PASSWORD not in caplog.text and SECRET.decode() not in caplog.text


def test_a_model_checkpoint_is_restored_when_only_settings_that_shape_no_state_changed(tmp_path, caplog):
    s = delayed_settings(checkpoint_every=40)
    new = s.replace(change_delta=0.2, **UNSHAPING)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        resumed, _, under_old, second = restart(tmp_path, ModelHandler, s, new, arrivals(), ARRIVALS, "predictions")
    assert second.metrics.get("checkpoints_restored") == 1 and not second.metrics.get("checkpoints_outdated")
    assert resumed and resumed == under_old
    assert not caplog.records


def explanations(s):
    """The drift feed of the handlers over ``arrivals()``: what the change handler reads."""
    return run_handlers(s, arrivals()).explanations


def test_a_change_checkpoint_under_other_change_settings_is_not_restored_but_rebuilt_under_the_new_ones(tmp_path, caplog):
    # the restarted change handler must not restore the old change test and go on with its old
    # delta and minimum samples
    s = delayed_settings(checkpoint_every=40)
    new = s.replace(change_delta=0.2, change_min_samples=20)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        resumed, under_new, under_old, second = restart(tmp_path, ChangeHandler, s, new, explanations(s),
                                                        "drift-feed", "drift-events")
    assert not second.metrics.get("checkpoints_restored") and second.metrics.get("checkpoints_outdated") == 1
    assert resumed and resumed == under_new != under_old
    warned = [r.getMessage() for r in caplog.records if "not restored" in r.getMessage()]
    assert len(warned) == 1 and "change_delta, change_min_samples" in warned[0], warned


def test_a_change_checkpoint_is_restored_when_only_settings_that_shape_no_state_changed(tmp_path):
    s = delayed_settings(checkpoint_every=40)
    new = s.replace(model="river.linear_model.LogisticRegression", model_params={}, **UNSHAPING)
    resumed, _, under_old, second = restart(tmp_path, ChangeHandler, s, new, explanations(s), "drift-feed",
                                            "drift-events")
    assert second.metrics.get("checkpoints_restored") == 1 and not second.metrics.get("checkpoints_outdated")
    assert resumed == under_old


def test_a_state_records_settings_only_and_no_secret():
    # a checkpoint's pickle and the warning carry these: a secret must never be among them
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    for handler in (ModelHandler, ChangeHandler):
        assert handler.SHAPED_BY and set(handler.SHAPED_BY) <= set(fields)
        assert not [n for n in handler.SHAPED_BY if fields[n].metadata.get("secret")]
