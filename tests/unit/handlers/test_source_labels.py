"""Labels of a labels source joined by the team's event id (intake, model handler and join wired as a worker
wires them, no Kafka): late labels learned, missing ones expire, unknown ids dead letters; every label
accounted for; a restarted join gives the same outputs."""

from __future__ import annotations

import pickle

import orjson
import pytest
from helpers.partition_log import PartitionLog
from streamxai.handlers import ModelHandler, Source
from streamxai.handlers.intake import IntakeHandler
from streamxai.handlers.join import JoinHandler
from streamxai.schemas import ConfigError
from streamxai.settings import Settings

FEATURES = ["amount", "merchant.risk"]
PAYMENTS = {"topic": "team.payments", "kind": "features", "features": FEATURES, "stream_id": "account",
            "event_id": "txn_id", "event_time": "event_time", "profile": "payments:*"}
FRAUD = {"topic": "team.fraud", "kind": "labels", "event_id": "txn_id", "label": "fraud"}


def _settings(**over) -> Settings:
    base = dict(sources={"payments": PAYMENTS, "fraud": FRAUD}, partitions=1, max_label_delay=40,
                streams={"payments:*": {"features": FEATURES, "model_params": {"grace_period": 20},
                                        "explainers": ["ipfi"]}})
    base.update(over)
    return Settings(**base)


class Worker:
    """The intake, model and join handlers of one worker over in-memory partitions (one each)."""

    def __init__(self, s: Settings, log: PartitionLog | None = None):
        self.s = s
        self.log = log or PartitionLog()
        self.intake, self.model = IntakeHandler(s), ModelHandler(s, history=self.log)
        self.join = JoinHandler(s, history=self.log)
        self.done = {"arrivals": 0, "event-index": 0}
        self.outs: list = []

    def send(self, topic: str, records: list[tuple[bytes | None, bytes]]) -> None:
        for k, v in records:
            off = len(self.log.parts.get((topic, 0), []))
            self.log.append(topic, 0, k, v, timestamp=float(off))
            self._route(self.intake.on_message(v, k, self.log.source(topic, 0, off)))
            self.drain()

    def drain(self) -> None:
        moved = True
        while moved:
            moved = False
            for name, handler in (("arrivals", self.model), ("event-index", self.join)):
                topic = self.s.topic(name)
                while self.done[name] < len(self.log.parts.get((topic, 0), [])):
                    off = self.done[name]
                    self.done[name] += 1
                    k, v, _, _ = self.log.parts[(topic, 0)][off]
                    self._route(handler.on_message(v, k, self.log.source(topic, 0, off)))
                    moved = True

    def _route(self, outs) -> None:
        for o in outs:
            if o.topic in ("arrivals", "event-index"):
                topic = self.s.topic(o.topic)
                at = len(self.log.parts.get((topic, 0), []))
                self.log.append(topic, 0, o.key, o.value, headers=o.headers, timestamp=1000.0 + at)
            else:
                self.outs.append((o.topic, orjson.loads(o.value)))


def _payment(i: int) -> tuple[bytes, bytes]:
    risk = (i * 37 % 11) / 10
    return b"", orjson.dumps({"txn_id": f"t{i}", "account": "a" if i % 2 else "b", "amount": 5.0 + i % 7,
                              "merchant": {"risk": risk}, "event_time": 1_700_000_000 + i})


def _fraud(i: int, event_id: str | None = None) -> tuple[bytes, bytes]:
    return (event_id or f"t{i}").encode(), orjson.dumps({"txn_id": event_id or f"t{i}", "fraud": int((i * 37 % 11) > 6)})


def _script(n: int = 200, delay: int = 10, never=range(3, 200, 25), unknown=(50, 120)) -> list[tuple[str, tuple]]:
    """Payments; each one's label ``delay`` payments later (some never); labels of ids that never existed."""
    steps = []
    for i in range(n):
        steps.append(("team.payments", _payment(i)))
        j = i - delay
        if j >= 0 and j not in never:
            steps.append(("team.fraud", _fraud(j)))
        if i in unknown:
            steps.append(("team.fraud", _fraud(i, f"ghost-{i}")))
    return steps


def _run(w: Worker, steps) -> Worker:
    for topic, record in steps:
        w.send(topic, [record])
    return w


def test_late_labels_are_learned_unknown_ids_dead_lettered_and_every_label_accounted_for():
    w = _run(Worker(_settings()), _script())
    outcomes = [m for t, m in w.outs if t == "predictions" and m["schema"] == "label_outcome/v1"]
    learned = {(m["stream_id"], m["seq"]) for m in outcomes if m["outcome"] == "learned"}
    expired = {(m["stream_id"], m["seq"]) for m in outcomes if m["outcome"] == "expired"}
    letters = [m for t, m in w.outs if t == "dead-letters"]
    preds = {m["event_id"]: (m["stream_id"], m["seq"]) for t, m in w.outs
             if t == "predictions" and m["schema"] == "prediction/v2"}
    labels_sent = sum(1 for topic, _ in _script() if topic == "team.fraud")
    # every label that came: learned, or a dead letter naming its id
    assert len(learned) + len(letters) == labels_sent
    assert learned == {preds[f"t{j}"] for j in range(190) if j not in range(3, 200, 25)}
    assert [(d["reason"], d["event_id"], d["stage"]) for d in letters] == [
        ("unknown_event_id", "ghost-50", "join"), ("unknown_event_id", "ghost-120", "join")]
    assert "no event with this id came while max_label_delay=40 events came" in letters[0]["error"]
    assert letters[0]["source"]["topic"] == "team.fraud"
    # a learned outcome, and the explain tasks of the step its label made, name the team's event id
    by_seq = {v: k for k, v in preds.items()}
    assert all(m["event_id"] == by_seq[m["stream_id"], m["seq"]] for m in outcomes if m["outcome"] == "learned")
    label_tasks = [m for t, m in w.outs if t == "explain-tasks" and m["step"] == "learn"]
    assert label_tasks and all(m["event_id"] == by_seq[m["stream_id"], m["seq"]] for m in label_tasks)
    # the labels that never come: their events expire, once their stream is max_label_delay events on
    assert expired == {preds[f"t{j}"] for j in range(3, 200, 25) if preds[f"t{j}"][1] + 40 <= 99}  # 100 per stream


def test_a_label_before_its_event_is_held_until_the_event_comes():
    w = Worker(_settings())
    w.send("team.fraud", [_fraud(0)])
    assert w.outs == []
    w.send("team.payments", [_payment(0)])
    (pred,) = [m for t, m in w.outs if t == "predictions" and m["schema"] == "prediction/v2"]
    (outcome,) = [m for t, m in w.outs if t == "predictions" and m["schema"] == "label_outcome/v1"]
    assert (pred["event_id"], outcome["outcome"], outcome["seq"]) == ("t0", "learned", pred["seq"])


def test_a_restarted_join_gives_the_outputs_of_one_that_ran_through():
    s = _settings()
    whole = _run(Worker(s), _script())
    topic = s.topic("event-index")
    index = whole.log.parts[(topic, 0)]
    for stop in (37, 150, len(index) - 1):
        fresh = JoinHandler(s, history=whole.log)
        again = []
        for off in range(stop, len(index)):
            k, v, _, _ = index[off]
            again += [_plain(o) for o in fresh.on_message(v, k, whole.log.source(topic, 0, off))]
        through = JoinHandler(s)
        first = []
        for off in range(len(index)):
            k, v, _, _ = index[off]
            outs = through.on_message(v, k, whole.log.source(topic, 0, off))
            if off >= stop:
                first += [_plain(o) for o in outs]
        assert again == first and any(o[0] == "arrivals" for o in first)
        assert fresh.metrics.get("join_replayed_records") == stop  # the partition up to where it starts


def _plain(o) -> tuple:
    m = orjson.loads(o.value)
    m.pop("ts", None) if o.topic == "dead-letters" else None  # a dead letter's wall-clock time
    return o.topic, o.key, m, o.headers


def test_a_label_forwarded_twice_is_learned_once():
    s = _settings()
    w = _run(Worker(s), _script(n=60, never=(), unknown=()))
    arrivals = w.log.parts[(s.topic("arrivals"), 0)]
    joined = [(off, k, v) for off, (k, v, _, h) in enumerate(arrivals) if b"label_event" in v]
    off, k, v = joined[5]
    assert w.model.on_message(v, k, w.log.source(s.topic("arrivals"), 0, off)) == []
    assert w.model.metrics.get("duplicate_labels_dropped") == 1


@pytest.mark.parametrize(("table", "says"), [
    ({**FRAUD, "features": ["a"]}, "[sources.fraud] features = ['a']: a labels source has no features"),
    ({k: v for k, v in FRAUD.items() if k != "label"}, "[sources.fraud] label is missing"),
])
def test_a_labels_source_table_says_what_it_takes(table, says):
    with pytest.raises(ConfigError) as e:
        _settings(sources={"payments": PAYMENTS, "fraud": table})
    assert says in str(e.value)


def test_a_label_without_an_event_id_is_a_dead_letter_of_the_intake():
    s = _settings()
    (out,) = IntakeHandler(s).on_message(b'{"fraud": 1}', b"", Source("team.fraud", 0, 7))
    letter = orjson.loads(out.value)
    assert (out.topic, letter["stage"], letter["reason"]) == ("dead-letters", "intake", "features")
    assert "path 'txn_id'" in letter["error"]


def _expired(outs) -> list[dict]:
    return [m for t, m in outs if t == "predictions" and m.get("outcome") == "expired"]


def test_an_expired_outcome_names_the_team_s_event_id():
    w = _run(Worker(_settings()), _script())
    seqs = {(m["stream_id"], m["seq"]): m["event_id"] for t, m in w.outs
            if t == "predictions" and m["schema"] == "prediction/v2"}
    expired = _expired(w.outs)
    assert len(expired) == 5  # of the 8 labels that never come: events 40 or more before their stream's end
    assert [m.get("event_id") for m in expired] == [seqs[m["stream_id"], m["seq"]] for m in expired]


def test_a_model_handler_rebuilt_from_its_history_names_the_event_ids_of_what_expires():
    s = _settings()
    whole = _run(Worker(s), _script())
    topic = s.topic("arrivals")
    arrivals = whole.log.parts[(topic, 0)]
    stop = len(arrivals) // 2
    through, rebuilt = ModelHandler(s), ModelHandler(s, history=whole.log)
    first, again = [], []
    for off, (k, v, _, _) in enumerate(arrivals):
        outs = through.on_message(v, k, whole.log.source(topic, 0, off))
        if off >= stop:
            first += [(o.topic, orjson.loads(o.value)) for o in outs]
            again += [(o.topic, orjson.loads(o.value)) for o in rebuilt.on_message(v, k, whole.log.source(topic, 0, off))]
    assert _expired(first) and _expired(again) == _expired(first)
    assert all(m.get("event_id") for m in _expired(again))


def test_a_checkpointed_stream_state_without_event_ids_restores_with_none_waiting():
    st = Worker(_settings()).model._fresh("payments:a")
    del st.event_ids  # as a checkpoint of a state that kept no event ids holds it
    assert pickle.loads(pickle.dumps(st)).event_ids == {}
