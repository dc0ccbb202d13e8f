"""An alert pages once: a change handler dying between sending an alert and committing is replaced by one
that takes the input again; both alerts carry one ``alert_key``, paged and counted once."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import orjson
import pytest
from helpers.alerts import Pager, stepped_explanations
from helpers.handler_inputs import change_settings
from streamxai.handlers import ChangeHandler
from streamxai.handlers.alert_line import episode_line
from streamxai.handlers.change import alert_key
from streamxai.kafka.checkpoints import FileCheckpointStore


def _run(handler, log, offsets):
    """The change-episodes messages ``handler`` sends for the records at ``offsets``, by offset."""
    got = []
    for off in offsets:
        key, value = log.items("explanations", 0)[off]
        for out in handler.on_message(value, key, log.source("explanations", 0, off)):
            if out.topic == "change-episodes":
                got.append((off, orjson.loads(out.value)))
    return got


def _alert_series(handler):
    return {k: v for k, v in handler.metrics.snapshot()["gauges"].items() if k.startswith("alert{")}


@pytest.mark.parametrize("checkpoint_every", [0, 150])
def test_an_alert_sent_again_after_a_crash_pages_once(tmp_path, checkpoint_every):
    s = change_settings(checkpoint_every=checkpoint_every)
    log = stepped_explanations(s.emit_every)
    n = len(log.items("explanations", 0))
    whole = _run(ChangeHandler(s), log, range(n))
    alerts = [(off, ep) for off, ep in whole if ep["alert"]]
    (sent_at, opened), (_, closed) = alerts  # the degradation, announced open, then closed
    assert opened["status"] == "open" and closed["status"] == "closed"
    assert opened["alert_key"] == closed["alert_key"] == alert_key("d", opened["first_position"]) == "d/3059"
    assert "; alert_key d/3059; " in episode_line(SimpleNamespace(**opened))  # the line the worker logs

    # the first worker checkpoints as it goes; what it had checkpointed when its input was last
    # committed (200 records before the alert) is all the second one finds
    committed = sent_at - 200
    live, older = tmp_path / "live", tmp_path / "at-commit"
    store = FileCheckpointStore(live, every=checkpoint_every, secret=b"k" * 32) if checkpoint_every else None
    first = ChangeHandler(s, checkpoints=store)
    sent = _run(first, log, range(committed))
    if store is not None:
        shutil.copytree(live, older)
    sent += _run(first, log, range(committed, sent_at + 50))  # sends the alert, dies before the next commit
    again = FileCheckpointStore(older, every=checkpoint_every, secret=b"k" * 32) if checkpoint_every else None
    second = ChangeHandler(s, history=log.history, checkpoints=again)
    sent += _run(second, log, range(committed, n))  # redelivered from the committed offset on
    if checkpoint_every:
        assert second.metrics.get("checkpoints_restored") == 1

    on_topic = [ep for _, ep in sent if ep["alert"]]
    assert [ep["status"] for ep in on_topic] == ["open", "open", "closed"]  # the open message twice
    assert {ep["alert_key"] for ep in on_topic} == {"d/3059"}
    assert on_topic[0] == on_topic[1]  # equal, as after any redelivery
    pager = Pager()
    assert sum(pager.take(ep) for _, ep in sent) == 1 and pager.pages == ["d/3059"]
    series = 'alert{alert_key=d/3059,kind=degradation,stream_id=d}'
    assert _alert_series(first) == _alert_series(second) == {series: 1}


def test_an_episode_that_does_not_alert_has_no_key():
    h = ChangeHandler(change_settings(change_alert_kinds=["reliance_shift"]))  # a degradation does not page
    log = stepped_explanations(h.settings.emit_every)
    episodes = [ep for _, ep in _run(h, log, range(len(log.items("explanations", 0))))]
    assert [(ep["kind"], ep["alert"], ep["alert_key"]) for ep in episodes] == [("degradation", False, None)] * 2  # open, closed
    assert _alert_series(h) == {}


def test_alert_series_are_bounded_to_the_newest():
    from streamxai.metrics import Metrics

    m = Metrics()
    for pos in range(10):
        m.alert("s", alert_key("s", pos), "reliance_shift", keep=3)
    m.alert("s", alert_key("s", 8), "reliance_shift", keep=3)  # sent again: still one series
    text = m.exposition().decode()
    assert [line for line in text.splitlines() if line.startswith("streamxai_alert{")] == [
        f'streamxai_alert{{alert_key="s/{pos}",kind="reliance_shift",stream_id="s"}} 1.0' for pos in (7, 8, 9)]
