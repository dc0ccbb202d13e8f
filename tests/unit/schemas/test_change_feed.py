"""The drift feed: each report's explanations go to the public topic, then as one record to the change
agent, which takes each as if it came alone (same changes and episodes, own dead letters, duplicates
dropped, checkpoints after whole records, replay and restore); a kill around the record loses nothing."""

from __future__ import annotations

import logging
import pickle

import orjson
import pytest
from helpers.change_feed_run import FEED, explain, feed_settings, tasks_of
from helpers.handler_inputs import explanation_msg
from helpers.partition_log import PartitionLog
from streamxai.handlers import ChangeHandler, ExplainHandler, Source
from streamxai.handlers import change as change_handler
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.schemas import pack_feed, report_documents, unpack_feed
from streamxai.settings import Settings


def _change(handler: ChangeHandler, feed: PartitionLog, offsets) -> list:
    """The change agent over ``offsets`` of the feed: its outputs, one list per record."""
    out = []
    for off in offsets:
        src = feed.source(FEED, 0, off)
        key, value, _, _ = feed.parts[(FEED, 0)][off]
        handler.needs_recovery(key, src)
        out.append(handler.on_message(value, key, src))
    return out


def _flat(per_record) -> list:
    return [o for outs in per_record for o in outs]


def _told(outs) -> tuple[dict, dict]:
    """Change events by (series, position) and episodes by (first_position, status, series named), as a consumer
    keeps them after deduplicating redeliveries (each repeating with equal values)."""
    changes, episodes = {}, {}
    for o in outs:
        m = orjson.loads(o.value)
        m.pop("ts", None)
        if o.topic == "drift-events":
            assert changes.setdefault((m["series"], m["position"]), m) == m
        elif o.topic == "change-episodes":
            named = tuple((c["explainer"], c["feature"]) for c in m["changes"])
            assert episodes.setdefault((m["first_position"], m["status"], named), m) == m
    return changes, episodes


@pytest.fixture(scope="module")
def whole():
    """The uninterrupted run: its settings, tasks, feed, public explanations, change outputs and handler."""
    s = feed_settings()
    tasks, feed, public = tasks_of(s), PartitionLog(), []
    explain(ExplainHandler(s), tasks, range(len(tasks.parts[("explain-tasks", 0)])), feed, public)
    change = ChangeHandler(s)
    outs = _change(change, feed, range(len(feed.parts[(FEED, 0)])))
    return s, tasks, feed, public, outs, change


def test_a_report_is_its_public_explanations_then_one_record_of_the_same_documents(whole):
    s, tasks, feed, public, _, _ = whole
    records = feed.parts[(FEED, 0)]
    docs = [d for _, v, _, h in records for d in unpack_feed(v, Source(FEED, headers=h))]
    assert docs == public  # byte for byte, in the same order
    assert len(records) == len(public) // len(s.features)  # one record per report (ipfi x 3 features)


def test_the_feed_gives_the_change_events_and_episodes_of_the_explanations_one_by_one(whole):
    s, _, _, public, outs, change = whole
    alone = ChangeHandler(s)
    one_by_one = []
    for off, raw in enumerate(public):
        one_by_one += alone.on_message(raw, b"f", Source("explanations", 0, off))
    changes, episodes = _told(_flat(outs))
    assert changes and episodes  # the stream's change is found
    assert [(o.topic, o.value) for o in _flat(outs)] == [(o.topic, o.value) for o in one_by_one]
    assert change.metrics.get("explanations_monitored") == len(public)


def test_a_malformed_part_of_a_record_is_its_own_dead_letter_naming_it():
    s = Settings(features=["a", "b"], explainers=["ipfi"], emit_every=10)
    good = [explanation_msg("m", "ipfi", f, 9, 0.1, (10, 0.1, 0.01), 10) for f in ("a", "b")]
    bad = b'{"schema": "explanation/v2", "stream_id": "m"'
    ((value, headers),) = pack_feed([good[0], bad, good[1]])
    h = ChangeHandler(s)
    outs = h.on_message(value, b"m", Source("streamxai.drift-feed", 3, 41, headers=headers))
    assert [o.topic for o in outs] == ["dead-letters"]
    letter = orjson.loads(outs[0].value)
    assert letter["source"] == {"topic": "streamxai.drift-feed", "partition": 3, "offset": 41}
    assert "explanation 2 of 3" in letter["error"], letter["error"]
    assert letter["original_bytes"] == len(bad)  # the part, not the record
    assert h.metrics.get("explanations_monitored") == 2  # the other two are taken


def _report(rows, sid="m", seq=9) -> bytes:
    """A drift-feed record of the form rows/1 of stream ``sid``'s report at ``seq``."""
    head = {"stream_id": sid, "seq": seq, "position": seq, "model_version": seq, "event_id": None}
    return orjson.dumps({**head, "rows": rows})


def _row(feature, value=0.1, block=(10, 0.1, 0.01)):
    return ["ipfi", feature, value, 10, 10, None, None, dict(zip(("n", "mean", "m2"), block, strict=True)), None, None]


ROWS = (("streamxai-feed-form", b"rows/1"),)


def test_a_row_that_is_not_a_usual_explanation_is_its_own_dead_letter_naming_it():
    s = Settings(features=["a", "b"], explainers=["ipfi"], emit_every=10)
    h = ChangeHandler(s)
    raw = _report([_row("a"), _row("b", value="high"), _row("b")])
    outs = h.on_message(raw, b"m", Source("streamxai.drift-feed", 3, 41, headers=ROWS))
    assert [o.topic for o in outs] == ["dead-letters"]
    letter = orjson.loads(outs[0].value)
    assert "explanation 2 of 3" in letter["error"] and "value" in letter["error"], letter["error"]
    assert h.metrics.get("explanations_monitored") == 2  # the other two are taken


@pytest.mark.parametrize(("raw", "says"), [
    (b'{"stream_id": "m", "rows": [["ipfi", "a"]]}', "rows of 10 fields"),
    (b'{"stream_id": "m", "seq": 9, "position": 9, "model_version": 9, "event_id": null, "rows": {}}', "rows of 10"),
    (b'{"stream_id": "m", "rows": [', "not valid JSON"),
])
def test_a_record_without_the_shape_of_its_form_is_one_dead_letter_saying_what_it_lacks(raw, says):
    h = ChangeHandler(Settings(features=["a", "b"], explainers=["ipfi"], emit_every=10))
    (out,) = h.on_message(raw, b"m", Source("streamxai.drift-feed", 0, 7, headers=ROWS))
    letter = orjson.loads(out.value)
    assert out.topic == "dead-letters" and says in letter["error"], letter["error"]
    assert letter["source"]["offset"] == 7 and h.metrics.get("explanations_monitored") == 0


def test_a_form_this_version_does_not_know_is_a_dead_letter_asking_for_an_upgrade():
    h = ChangeHandler(Settings(features=["a"], explainers=["ipfi"]))
    (out,) = h.on_message(_report([_row("a")]), b"m", Source("drift-feed", 0, 1, headers=(("streamxai-feed-form",
                                                                                             b"rows/9"),)))
    assert out.topic == "dead-letters" and "upgrade this worker" in orjson.loads(out.value)["error"]


def test_records_of_older_workers_one_document_a_line_give_what_the_rows_give(whole):
    s, _, feed, _, outs, _ = whole
    lines = PartitionLog()
    for key, value, _, headers in feed.parts[(FEED, 0)]:
        ((v, h),) = pack_feed(unpack_feed(value, Source(FEED, headers=headers)))
        assert h != headers  # the older form
        lines.append(FEED, 0, key, v, headers=h)
    again = _change(ChangeHandler(s), lines, range(len(lines.parts[(FEED, 0)])))
    assert [(o.topic, o.value) for o in _flat(again)] == [(o.topic, o.value) for o in _flat(outs)]


def test_an_explanation_over_max_message_bytes_is_refused_though_its_record_is_not():
    first, second = _report([_row("a", 0.5)]), _report([_row("a", 0.123456789012345)], seq=19)
    (doc,) = unpack_feed(second, Source(FEED, headers=ROWS))
    assert len(second) < len(doc)
    h = ChangeHandler(Settings(features=["a"], explainers=["ipfi"], emit_every=10, max_message_bytes=len(doc) - 1))
    assert h.on_message(first, b"m", Source(FEED, 0, 2, headers=ROWS)) == []  # the stream's state, for the one pass
    (out,) = h.on_message(second, b"m", Source(FEED, 0, 3, headers=ROWS))
    assert orjson.loads(out.value)["reason"] == "oversized" and h.metrics.get("explanations_monitored") == 1


def test_a_document_made_of_a_record_is_at_most_growth_times_its_bytes_besides_its_field_names():
    """orjson writes a number in at most 4.5 times the bytes it was read from, and a document's names and
    punctuation take under 1 KiB (``_GROWTH`` and ``_DOC_NAMES`` of the change handler rely on it)."""
    grown = 0.0
    for mantissa in ("1", "9", "-1", "-9", "1.5", "0.1", "12345"):
        for exponent in range(-330, 330):
            token = f"{mantissa}e{exponent}".encode()
            try:
                value = orjson.loads(token)
            except orjson.JSONDecodeError:  # out of a double's range
                continue
            grown = max(grown, len(orjson.dumps(value)) / len(token))
    assert grown == 4.5  # "1e15" as "1000000000000000.0"
    assert grown <= change_handler._GROWTH
    names = report_documents("", 0, 0, 0, "", [["", "", 0, 0, 0, {}, 0, {"n": 0, "mean": 0, "m2": 0},
                                                 {"n": 0, "mean": 0, "m2": 0}, 0]])[0]
    assert len(names) < change_handler._DOC_NAMES


def test_a_record_is_checkpointed_once_it_is_taken_whole(whole, tmp_path):
    s, _, feed, _, _, _ = whole
    # due after every 2 explanations: a record of 3 is still checkpointed once, after its last
    store = FileCheckpointStore(tmp_path, every=2, secret=b"k" * 32)
    h = ChangeHandler(s.replace(checkpoint_every=2), checkpoints=store)
    _change(h, feed, range(40))
    assert h.metrics.get("checkpoints_written") == 40
    assert store.load("change", b"f", FEED, 0)[1] == 39


def test_a_change_state_restored_from_its_checkpoint_replays_the_feed_after_it(whole, tmp_path):
    s, _, feed, _, outs, _ = whole
    s = s.replace(checkpoint_every=30)  # every 10 records
    store = FileCheckpointStore(tmp_path, every=30, secret=b"k" * 32)
    n, cut = len(feed.parts[(FEED, 0)]), len(outs) // 2
    _change(ChangeHandler(s, checkpoints=store), feed, range(cut))
    second = ChangeHandler(s, history=feed, checkpoints=store)
    again = _change(second, feed, range(cut - 3, n))  # resumed 3 records before where the first stopped
    assert second.metrics.get("checkpoints_restored") == 1 and second.metrics.get("replayed_explanations") > 0
    assert [[(o.topic, o.value) for o in r] for r in again] == [[(o.topic, o.value) for o in r] for r in outs[cut - 3:]]
    assert _told(_flat(outs[cut - 3:]))[0]  # change events among them


@pytest.mark.parametrize("where", ["between", "after"])
def test_a_worker_killed_at_a_report_loses_and_double_counts_nothing(whole, tmp_path, where):
    """A worker SIGKILLed ``between`` a report's public explanations and its drift-feed record, or ``after``
    it, redoes its uncommitted tasks and records on restart: nothing lost or counted twice."""
    s, tasks, _, _, outs, change = whole
    s = s.replace(checkpoint_every=7)
    store = FileCheckpointStore(tmp_path, every=7, secret=b"k" * 32)
    items = tasks.parts[("explain-tasks", 0)]
    # a task that reports (a report after the change, while change events are being found)
    k = next(off for off in range(len(items)) if orjson.loads(items[off][1])["seq"] >= 1000
             and orjson.loads(items[off][1])["seq"] % 10 == 9)
    feed, public = PartitionLog(), []
    explain(ExplainHandler(s, checkpoints=store), tasks, range(len(items)), feed, public, cut=(k, where))
    written = len(feed.parts[(FEED, 0)])
    first = _change(ChangeHandler(s, checkpoints=store), feed, range(written))
    # restarted: the explainer at its committed offset 25 tasks (2 reports) back, the change agent 2 records back
    explain(ExplainHandler(s, history=tasks, checkpoints=store), tasks, range(k - 25, len(items)), feed, public)
    second = ChangeHandler(s, history=feed, checkpoints=store)
    again = _change(second, feed, range(written - 2, len(feed.parts[(FEED, 0)])))
    assert second.metrics.get("duplicate_explanations_dropped") > 0  # redelivered, dropped
    # nothing lost: every change event and episode, with equal values where repeated
    assert _told(_flat(first + again)) == _told(_flat(outs))
    # nothing counted twice: the restarted change test holds what the uninterrupted one holds
    assert pickle.dumps(second.streams["f"].detector) == pickle.dumps(change.streams["f"].detector)


def test_a_stream_met_mid_way_with_nothing_of_it_on_the_feed_is_one_warning(whole, caplog):
    """A stream met mid-way without checkpoints or earlier records starts its change test there with one warning;
    a stream whose feed begins with its first report says nothing."""
    s, _, feed, _, _, _ = whole
    for start, warned in ((50, 1), (0, 0)):
        log = PartitionLog()
        for _, value, _, headers in feed.parts[(FEED, 0)][start:start + 5]:
            log.append(FEED, 0, b"f", value, headers=headers)
        h = ChangeHandler(s, history=log)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="streamxai"):
            _change(h, log, range(5))
        lines = [r.getMessage() for r in caplog.records if "its change detection starts here" in r.getMessage()]
        assert len(lines) == warned, (start, lines)
