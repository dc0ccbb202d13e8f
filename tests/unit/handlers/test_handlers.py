"""Handlers without Kafka: model → explain → change gives the core's values for any number of groups,
survives lost state by replay, and turns bad input into dead letters."""

from __future__ import annotations

import orjson
import pytest
from helpers.alerts import stepped_explanations
from helpers.handler_inputs import change_settings, explanation_msg, settings
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler, Source
from streamxai.local.demo_stream import agrawal_events
from streamxai.plan import stream_explainer
from streamxai.schemas import dumps


class FakeLog:
    """Topic partitions in memory, so handlers can be wired like the agents wire them."""

    def __init__(self):
        self.parts: dict[tuple[str, int], list[tuple[bytes | None, bytes]]] = {}

    def append(self, topic, partition, key, value):
        part = self.parts.setdefault((topic, partition), [])
        part.append((key, value))
        return len(part) - 1

    def history(self, topic, partition, before_offset, key, from_offset=0):
        for k, v in self.parts.get((topic, partition), [])[from_offset:before_offset]:
            if k == key:
                yield v


def run_model(s, events):
    log, mh = FakeLog(), ModelHandler(s)
    for off, ev in enumerate(events):
        for out in mh.on_message(dumps(ev), ev.stream_id.encode(), Source("features", 0, off)):
            if out.topic == "explain-tasks":
                log.append("explain-tasks", out.partition, out.key, out.value)
    return log


def explain_all(s, log, handler_for, whole=False):
    """Feed every explain-task partition to ``handler_for(partition, offset)``; collect values
    (or, with ``whole``, the whole messages)."""
    got = {}
    for (topic, p), msgs in sorted(log.parts.items()):
        for off, (key, value) in enumerate(msgs):
            for out in handler_for(p, off).on_message(value, key, Source(topic, p, off)):
                if out.topic == "drift-feed":  # the same explanations again, for the change agent
                    continue
                m = orjson.loads(out.value)
                got[(m["stream_id"], m["seq"], m["explainer"], m["feature"])] = m if whole else m["value"]
    return got


def reference(s, events):
    out, ses = {}, {}
    for ev in events:
        se = ses.setdefault(ev.stream_id, stream_explainer(s, ev.stream_id))
        vals = se.process_one(ev.x, ev.y)
        if se.n_seen % s.emit_every == 0:
            out.update({(ev.stream_id, ev.seq, v.explainer, v.feature): v.value for v in vals})
    return out


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_handlers_give_in_process_values_for_any_grouping(groups):
    s = settings(explain_groups=groups)
    events = list(agrawal_events("a", 120, seed=1)) + list(agrawal_events("b", 60, seed=2))
    log = run_model(s, events)
    eh = ExplainHandler(s)
    assert explain_all(s, log, lambda p, off: eh) == reference(s, events)


def test_lost_state_is_rebuilt_exactly_from_the_partition():
    s = settings()
    events = list(agrawal_events("r", 150, seed=3))
    log = run_model(s, events)
    first = ExplainHandler(s)
    second = ExplainHandler(s, history=log.history)
    # the first handler dies after 70 tasks of each partition; the second resumes there
    got = explain_all(s, log, lambda p, off: first if off < 70 else second)
    assert got == reference(s, events)
    assert second.metrics.get("replayed_tasks") > 0


def test_model_handler_rebuilds_the_model_and_drops_duplicates():
    s = settings()
    events = list(agrawal_events("m", 100, seed=4))
    log = FakeLog()
    for ev in events:
        log.append("features", 0, b"m", dumps(ev))
    a = ModelHandler(s)
    preds_a = {}
    for off, (k, v) in enumerate(log.parts[("features", 0)]):
        for out in a.on_message(v, k, Source("features", 0, off)):
            if out.topic == "predictions":
                p = orjson.loads(out.value)
                preds_a[p["seq"]] = p["y_pred"]
    b = ModelHandler(s, history=log.history)
    preds_b = {}
    for off, (k, v) in list(enumerate(log.parts[("features", 0)]))[60:]:
        for out in b.on_message(v, k, Source("features", 0, off)):
            if out.topic == "predictions":
                p = orjson.loads(out.value)
                preds_b[p["seq"]] = p["y_pred"]
    assert preds_b == {q: preds_a[q] for q in range(60, 100)}
    # a re-delivered event is dropped, not learned twice
    k, v = log.parts[("features", 0)][99]
    assert b.on_message(v, k, Source("features", 0, 99)) == []
    assert b.metrics.get("duplicates_dropped") == 1


def test_checkpoint_plus_short_replay_is_exact(tmp_path):
    from streamxai.kafka.checkpoints import FileCheckpointStore

    s = settings(checkpoint_every=20)
    events = list(agrawal_events("c", 150, seed=5))
    log = run_model(s, events)
    store = FileCheckpointStore(tmp_path, every=s.checkpoint_every, secret=b"k" * 32)
    first = ExplainHandler(s, checkpoints=store)
    second = ExplainHandler(s, history=log.history, checkpoints=store)
    got = explain_all(s, log, lambda p, off: first if off < 75 else second)
    assert got == reference(s, events)
    assert first.metrics.get("checkpoints_written") > 0
    assert second.metrics.get("checkpoints_restored") > 0
    # only the tasks after the newest checkpoint were replayed, not the whole history
    assert 0 < second.metrics.get("replayed_tasks") < 20 * len(log.parts)


def test_model_checkpoint_restores_the_model(tmp_path):
    from streamxai.kafka.checkpoints import FileCheckpointStore

    s = settings(checkpoint_every=25)
    events = list(agrawal_events("mc", 100, seed=6))
    raws = [(b"mc", dumps(ev)) for ev in events]
    log = FakeLog()
    for k, v in raws:
        log.append("features", 0, k, v)
    store = FileCheckpointStore(tmp_path, every=s.checkpoint_every, secret=b"k" * 32)

    def preds(handler, offsets):
        out = {}
        for off in offsets:
            for o in handler.on_message(raws[off][1], b"mc", Source("features", 0, off)):
                if o.topic == "predictions":
                    p = orjson.loads(o.value)
                    out[p["seq"]] = p["y_pred"]
        return out

    full = preds(ModelHandler(s), range(100))
    preds(ModelHandler(s, checkpoints=store), range(60))
    resumed = ModelHandler(s, history=log.history, checkpoints=store)
    assert preds(resumed, range(60, 100)) == {q: full[q] for q in range(60, 100)}
    assert resumed.metrics.get("checkpoints_restored") == 1
    assert resumed.metrics.get("replayed_events") == 60 - 50  # checkpoint after event 49


def change_outputs(handler_for, log):
    got = []
    for off, (key, value) in enumerate(log.items("explanations", 0)):
        for out in handler_for(off).on_message(value, key, Source("explanations", 0, off)):
            got.append((out.topic, out.key, out.value))
    return got


@pytest.mark.parametrize("checkpoint_every", [0, 150])
def test_restarted_change_handler_emits_what_an_uninterrupted_one_does(tmp_path, checkpoint_every):
    from streamxai.kafka.checkpoints import FileCheckpointStore

    s = change_settings(checkpoint_every=checkpoint_every)
    log = stepped_explanations(s.emit_every)
    whole_handler = ChangeHandler(s)
    whole = change_outputs(lambda off: whole_handler, log)
    events = [orjson.loads(v) for t, _, v in whole if t == "drift-events"]
    episodes = [orjson.loads(v) for t, _, v in whole if t == "change-episodes"]
    # steps of 1.5 and 1 increment sd at event 3000 (point 600 of blocks of 5): each series changes
    # once, cut at the step (the boundaries there are single blocks), within a few hundred events:
    # ~(6 / 1)^2 = 36 events for car past the 100-increment minimum per side (measured: both at 3059);
    # the model's loss (0.1 -> 0.3) is a series of the test too, and changes at the same cut
    assert sorted(e["feature"] for e in events) == ["age", "car", "loss"]
    assert all(e["cut_seq"] == 3000 and 3000 < e["seq"] < 3500 for e in events), events
    # one episode: open once 100 losses follow its cut (its loss had risen: a degradation, known
    # then), closed after the gap
    assert [(e["status"], e["first_seq"], e["cut_seq"]) for e in episodes] == [("open", 3059, 3000),
                                                                              ("closed", 3059, 3000)]
    store = FileCheckpointStore(tmp_path, every=checkpoint_every, secret=b"k" * 32) if checkpoint_every else None
    first = ChangeHandler(s, checkpoints=store)
    second = ChangeHandler(s, history=log.history, checkpoints=store)
    # the first handler dies at offset 1100 (point 550 of each series, before the shift)
    resumed = change_outputs(lambda off: first if off < 1100 else second, log)
    assert resumed == whole  # byte for byte
    replayed = second.metrics.get("replayed_explanations")
    if checkpoint_every:
        assert second.metrics.get("checkpoints_restored") == 1
        assert 0 < replayed < checkpoint_every  # only what came after the stream's checkpoint
    else:
        assert replayed == 1100  # the stream's whole history before the restart


def test_change_handler_without_history_differs_so_replay_matters():
    s = change_settings()
    log = stepped_explanations(s.emit_every)
    whole_handler, first, second = ChangeHandler(s), ChangeHandler(s), ChangeHandler(s)
    whole = change_outputs(lambda off: whole_handler, log)
    resumed = change_outputs(lambda off: first if off < 1100 else second, log)
    # a fresh detector has 250 events before the step instead of 2750: other levels, other test
    assert whole and resumed != whole


def test_change_event_and_episode_explain_the_change():
    s = change_settings()
    log = stepped_explanations(s.emit_every, n=1400)
    h = ChangeHandler(s)
    outs = change_outputs(lambda off: h, log)
    events = [orjson.loads(v) for t, _, v in outs if t == "drift-events"]
    opened, episode = [orjson.loads(v) for t, _, v in outs if t == "change-episodes"]
    age = next(e for e in events if e["feature"] == "age")
    assert age["schema"] == "drift_event/v3" and age["series"] == "d/ipfi/age"
    assert (age["seq"], age["cut_seq"]) == (age["position"], age["cut_position"])  # labels in line
    # levels are means of increments, so they show the whole step (0.1 -> 0.4), with intervals
    assert age["level_before"] == pytest.approx(0.1, abs=0.03) and age["level_after"] == pytest.approx(0.4, abs=0.06)
    assert age["ci_before"][0] < age["level_before"] < age["ci_before"][1]
    assert age["explanation_before"]["car"] == pytest.approx(0.1, abs=0.05)
    assert age["loss_before"] == pytest.approx(0.1) and age["loss_after"] == pytest.approx(0.3)
    assert age["rank_after"]["age"] == 1
    assert [c["feature"] for c in episode["changes"]] == ["age", "car", "loss"]  # ranked by relative effect
    # why: the model's loss rose from 0.1 to 0.3 at the cut -- a degradation, which alerts by default,
    # when the episode opens (100 losses after its cut), counted once by kind and alert
    assert (opened["status"], opened["kind"], opened["alert"], opened["closed_seq"]) == ("open", "degradation", True, None)
    assert opened["first_seq"] == episode["first_seq"] and opened["kind"] == episode["kind"]
    assert (episode["status"], episode["kind"], episode["alert"]) == ("closed", "degradation", True)
    assert episode["loss_ci_before"][0] < 0.1 < episode["loss_ci_before"][1] and episode["loss_z"] > 1.96
    assert h.metrics.get("change_episodes{alert=true,kind=degradation}") == 1
    assert h.metrics.get("change_episodes{alert=false,kind=learning}") == 0
    assert h.metrics.get("change_events") == 3  # age, car and the model's loss
    assert episode["cut_seq"] == 3000 and episode["closed_seq"] > episode["last_seq"] + s.change_episode_gap
    ex = episode["explanations"]["ipfi"]
    assert ex["car"]["before"] == pytest.approx(0.1, abs=0.03) and ex["car"]["after"] == pytest.approx(0.3, abs=0.03)
    assert ex["salary"] == {"before": None, "after": None, "rank_before": None, "rank_after": None}
    # what the handler writes is what the JSON Schema files describe
    import json
    from pathlib import Path

    import jsonschema

    json_dir = Path(__file__).resolve().parents[3] / "schemas" / "json"
    for msg in [*events, opened, episode]:
        jsonschema.validate(msg, json.loads((json_dir / (msg["schema"].replace("/", ".") + ".json")).read_text()))


def test_change_handler_dead_letters_bad_explanations_and_keeps_going():
    from streamxai.schemas import dumps_obj

    s = change_settings()
    h = ChangeHandler(s)
    good = explanation_msg("d", "ipfi", "age", 9, 0.1, (5, 0.1, 0.5), 10)  # a block of emit_every increments
    bad = {
        "malformed": b"{}",
        "other_version": dumps_obj(orjson.loads(explanation_msg("d", "ipfi", "age", 9, 0.1, (10, 0.1, 0.5), 10))
                                   | {"schema": "explanation/v3"}),
        "schema_mismatch": explanation_msg("d", "ipfi", "age", 9, 0.1, (10, 0.1, -1.0), 10),  # m2 < 0
        "unknown series": explanation_msg("d", "isage", "age", 9, 0.1, (10, 0.1, 0.5), 10),
    }
    for i, (what, raw) in enumerate(bad.items()):
        outs = h.on_message(raw, b"d", Source("explanations", 0, i))
        assert [o.topic for o in outs] == ["dead-letters"], what
        dl = orjson.loads(outs[0].value)
        assert dl["source"] == {"topic": "explanations", "partition": 0, "offset": i}
        if what == "other_version":  # one version per message type: any other is refused, saying which is read
            assert dl["reason"] == "schema" and "expected 'explanation/v4'" in dl["error"]
    assert h.on_message(good, b"d", Source("explanations", 0, 9)) == []
    assert h.on_message(good, b"d", Source("explanations", 0, 10)) == []  # a duplicate
    assert h.metrics.get("duplicate_explanations_dropped") == 1


@pytest.mark.parametrize("checkpoint", [False, True], ids=["full-replay", "checkpoint+replay"])
def test_increment_blocks_and_model_loss_survive_a_restart_exactly(tmp_path, checkpoint):
    from streamxai.kafka.checkpoints import FileCheckpointStore

    s = settings(checkpoint_every=20 if checkpoint else 0, explain_groups=2)
    events = list(agrawal_events("k", 150, seed=6))
    log = run_model(s, events)
    eh = ExplainHandler(s)
    uninterrupted = explain_all(s, log, lambda p, off: eh, whole=True)
    store = FileCheckpointStore(tmp_path, every=s.checkpoint_every, secret=b"k" * 32) if checkpoint else None
    first = ExplainHandler(s, checkpoints=store)
    second = ExplainHandler(s, history=log.history, checkpoints=store)
    restarted = explain_all(s, log, lambda p, off: first if off < 77 else second, whole=True)
    assert restarted == uninterrupted  # values, blocks, model losses: the whole messages
    assert second.metrics.get("replayed_tasks") > 0


def test_blocks_hold_the_increments_and_losses_since_the_previous_message():
    s = settings(explain_groups=1, emit_every=5)
    events = list(agrawal_events("b", 100, seed=7))
    log, mh = FakeLog(), ModelHandler(s)
    losses = {}
    for off, ev in enumerate(events):
        for out in mh.on_message(dumps(ev), b"b", Source("features", 0, off)):
            if out.topic == "explain-tasks":
                log.append("explain-tasks", out.partition, out.key, out.value)
            else:
                p = orjson.loads(out.value)
                losses[p["seq"]] = p["loss"]
    eh = ExplainHandler(s)
    msgs = explain_all(s, log, lambda p, off: eh, whole=True)
    ipfi_age = sorted((m for m in msgs.values() if m["explainer"] == "ipfi" and m["feature"] == "age"),
                      key=lambda m: m["seq"])
    # the model's loss: the prediction topic's losses of the events since the previous message
    prev = -1
    for m in ipfi_age:
        window = [losses[q] for q in range(prev + 1, m["seq"] + 1)]
        assert m["model_loss"]["n"] == len(window)
        assert m["model_loss"]["mean"] == pytest.approx(sum(window) / len(window), abs=1e-12)
        prev = m["seq"]
    # the first event of a stream only fills iPFI's storage, so the first block has one less
    assert ipfi_age[0]["block"]["n"] == s.emit_every - 1
    assert all(m["block"]["n"] == s.emit_every for m in ipfi_age[1:])
    assert all(m["block"]["m2"] >= 0 for m in ipfi_age)


@pytest.mark.parametrize("explainer", ["ipfi", "isage"])
def test_a_one_event_block_is_the_increment_the_value_smooths(explainer):
    # with a message per event, block.mean is that event's increment, and the published value
    # is its exponential smoothing: value_t = (1 - alpha) value_(t-1) + alpha increment_t
    s = settings(explain_groups=1, emit_every=1, explainers=[explainer])
    log = run_model(s, list(agrawal_events("one", 60, seed=8)))
    eh = ExplainHandler(s)
    msgs = explain_all(s, log, lambda p, off: eh, whole=True)
    for feature in s.features:
        series = sorted((m for m in msgs.values() if m["feature"] == feature), key=lambda m: m["seq"])
        series = [m for m in series if m["block"] is not None]
        assert len(series) == 59  # the first event only fills the storage
        for before, m in zip(series[:-1], series[1:], strict=True):
            assert m["block"]["n"] == 1 and m["block"]["m2"] == 0.0
            smoothed = (1 - s.alpha) * before["value"] + s.alpha * m["block"]["mean"]
            assert m["value"] == pytest.approx(smoothed, rel=1e-12, abs=1e-15)


def test_the_explain_paths_view_of_a_task_has_the_tasks_fields_in_their_order():
    """The explain handler takes a task as a tuple (explain._Task), made from the checked fields
    by position: a field added to ExplainTask must be added there too, in the same place."""
    import dataclasses

    from streamxai.handlers.explain import _Task
    from streamxai.schemas import ExplainTask

    assert _Task._fields == tuple(f.name for f in dataclasses.fields(ExplainTask))
    task = ExplainTask("s", 3, 1.0, {"a": 1.0}, 1, 0, True, 2.0, 0.5, "learn", None, "e-3")
    view = ExplainHandler(settings())._parse(dumps(task), "explain-tasks[0]@9")
    assert view == dataclasses.astuple(task) and view.position == 3  # a null position is the seq, as the task's
