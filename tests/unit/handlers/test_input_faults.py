"""A data fault through the handlers: found by the explain handler holding the first unit, paged by the change
handler in an episode of its own, as in the reference and after a replay of the feed."""

from __future__ import annotations

import random

from helpers.arrivals import Run, record_arrivals, run_handlers
from helpers.partition_log import PartitionLog
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler
from streamxai.handlers.alert_line import episode_line
from streamxai.reference import run_in_process
from streamxai.schemas import ChangeEpisode, FeatureEvent
from streamxai.schemas.change_feed import FAULTS_V1, FEED_FORM
from streamxai.settings import Settings

AT = 2400  # the unit of feature a changes here: its values x 1000


def _settings(**over) -> Settings:
    base = dict(features=["a", "b", "c"], task="regression", output="value", loss="squared",
                model="river.linear_model.LinearRegression", model_params={}, explainers=["ipfi", "ipdp"],
                change_warmup=500, change_min_samples=50, emit_every=10, storage_size=50, partitions=1)
    return Settings(**{**base, **over})


def _events(n: int = 3000) -> list[FeatureEvent]:
    """The target rests on a (mostly) and b; c is noise. From AT on a arrives in another unit."""
    r, out = random.Random(3), []
    for q in range(n):
        a, b, c = r.gauss(0, 1), r.gauss(0, 1), r.gauss(0, 1)
        y = 3 * a + b
        out.append(FeatureEvent("s", q, float(q), {"a": a * (1000.0 if q >= AT else 1.0), "b": b, "c": c}, y))
    return out


def _run(s: Settings, log: PartitionLog, change=None) -> Run:
    run = Run()
    model, explain = ModelHandler(s, history=log), ExplainHandler(s, history=run.tasks)
    return run_handlers(s, log, model=lambda off: model, explain=lambda p, off: explain, change=change, run=run)


def test_a_unit_change_pages_as_a_data_fault_naming_the_feature_as_the_reference_does():
    s = _settings()
    log = PartitionLog()
    recorded = record_arrivals(log, _events())
    run = _run(s, log)
    ref = run_in_process(s, recorded)
    faults = [m for m in run.of("change-episodes") if m["kind"] == "data_fault"]
    assert faults, [m["kind"] for m in run.of("change-episodes")]
    opened = faults[0]
    assert opened["status"] == "open" and opened["alert"] and opened["alert_key"] == f"s/{opened['first_position']}/data_fault"
    (fault,) = opened["faults"]
    assert fault["feature"] == "a" and fault["what"] == "scaled" and fault["start_position"] == AT, fault
    assert AT < opened["first_position"] <= AT + 125 and fault["reliance"] >= 0.2, opened
    assert "scaled about x" in fault["detail"]
    # the fault's own change event, and the same changes and announced kinds as the reference
    assert ("s", opened["first_position"], "inputs", "a") in run.changes()
    assert run.changes() == {k: v for k, v in ref.changes.items()}
    told: dict[tuple, tuple] = {}  # each episode's first message: the one that told its kind
    for m in run.of("change-episodes"):
        told.setdefault((m["first_position"], m["kind"]), (m["kind"], m["alert"]))
    assert sorted(told.values()) == sorted((k, a) for _, _, k, a in ref.kinds)
    # the loss's rise and the reliance changes of a that follow are the fault's: no second page for them
    assert [m["kind"] for m in run.of("change-episodes") if m["alert"] and m["status"] == "open"] == ["data_fault"]


def test_the_watch_is_off_with_change_inputs_false():
    s = _settings(change_inputs=False)
    log = PartitionLog()
    record_arrivals(log, _events())
    run = _run(s, log)
    assert not [m for m in run.of("change-episodes") if m["kind"] == "data_fault"]
    assert not [h for part in run.explanations.parts.values() for *_, h in part if h and (FEED_FORM, FAULTS_V1) in h]


def test_a_restarted_change_handler_replays_the_faults_record_and_pages_once():
    s = _settings()
    log = PartitionLog()
    record_arrivals(log, _events())
    whole = _run(s, log)
    feed = whole.explanations.parts[("drift-feed", 0)]
    at = next(i for i, (_, _, _, h) in enumerate(feed) if h and (FEED_FORM, FAULTS_V1) in h)
    # a change handler that starts after the faults record, with no checkpoint: it rebuilds from the feed
    first, later = ChangeHandler(s, history=whole.explanations), ChangeHandler(s, history=whole.explanations)
    restarted = _run(s, log, change=lambda off: first if off <= at + 3 else later)
    episodes = lambda r: [(m["first_position"], m["status"], m["kind"], m["alert"])  # noqa: E731
                          for m in r.of("change-episodes")]
    assert episodes(restarted) == episodes(whole)
    assert [e for e in episodes(restarted) if e[2] == "data_fault" and e[1] == "open"] != []


def test_labels_that_stop_page_as_a_data_fault_of_the_labels_as_the_reference_does():
    """From AT on the events come without labels: the model learns no more and iPFI explains
    nothing, so no explanation can change; the watch of the labels pages, once."""
    s = _settings()
    log = PartitionLog()
    events = [e if e.seq < AT else FeatureEvent("s", e.seq, e.ts, e.x, None) for e in _events(AT + 400)]
    recorded = record_arrivals(log, [FeatureEvent("s", e.seq, e.ts, {**e.x, "a": e.x["a"] / 1000.0}, e.y)
                                     if e.seq >= AT else e for e in events])
    run = _run(s, log)
    ref = run_in_process(s, recorded)
    faults = [m for m in run.of("change-episodes") if m["kind"] == "data_fault"]
    assert [(m["status"], m["alert"]) for m in faults] == [("open", True)], faults
    (fault,) = faults[0]["faults"]
    assert fault["feature"] == "label" and fault["what"] == "stopped" and fault["start_position"] == AT, fault
    assert faults[0]["first_position"] == AT + 99 and fault["detail"].startswith(f"no label since {AT} (100 events)")
    assert run.changes() == dict(ref.changes.items())
    assert not run.of("dead-letters")
    line = episode_line(ChangeEpisode(**{k: v for k, v in faults[0].items() if k != "schema"}))
    assert f"check the labels: no label since {AT}" in line, line
