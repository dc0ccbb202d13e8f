"""Adversarial input at the handlers: the worker stays up, valid events are predicted and explained once, bad
input is a dead letter with a reason."""

from __future__ import annotations

import collections

import orjson
import pytest
from helpers.handler_inputs import one_group_settings as settings
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler, Source
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.local.demo_stream import agrawal_events
from streamxai.schemas import dumps


def feed(handler, items, topic="features", start=0):
    """``items``: (key, raw) pairs on one partition, fed from offset ``start``; every Out, by topic."""
    outs: dict[str, list] = {}
    for off in range(start, len(items)):
        key, raw = items[off]
        for o in handler.on_message(raw, key, Source(topic, 0, off)):
            outs.setdefault(o.topic, []).append(o)
    return outs


def preds(outs):
    return {m["seq"]: m["y_pred"] for m in map(orjson.loads, (o.value for o in outs.get("predictions", [])))}


class FakeLog:
    """One topic partition in memory; ``history`` is what streamxai.kafka.replay reads from Kafka."""

    def __init__(self):
        self.parts: dict[tuple[str, int], list] = {}

    def append(self, topic, partition, key, value):
        self.parts.setdefault((topic, partition), []).append((key, value))

    def history(self, topic, partition, before_offset, key, from_offset=0):
        for k, v in self.parts.get((topic, partition), [])[from_offset:before_offset]:
            if k == key:
                yield v


def seqs(outs, topic="predictions"):
    return [orjson.loads(o.value)["seq"] for o in outs.get(topic, [])]


def reasons(outs):
    return [orjson.loads(o.value)["reason"] for o in outs.get("dead-letters", [])]


def test_a_huge_seq_is_a_dead_letter_not_the_end_of_the_stream():
    # a seq of 10**18 after 99, if accepted, would make every later event a duplicate
    events = list(agrawal_events("s", 200, seed=1))
    items = [(b"s", dumps(ev)) for ev in events[:100]]
    items.append((b"s", dumps(events[100].__class__("s", 10**18, 0.0, events[100].x, events[100].y))))
    items += [(b"s", dumps(ev)) for ev in events[100:]]
    mh = ModelHandler(settings())
    outs = feed(mh, items)
    assert seqs(outs) == list(range(200))
    assert reasons(outs) == ["seq_gap"]
    assert mh.metrics.get("duplicates_dropped") == 0
    # a handler that lost its state at offset 150 rebuilds it by replay without the bad event
    log = FakeLog()
    for k, v in items:
        log.append("features", 0, k, v)
    resumed = feed(ModelHandler(settings(), history=log.history), items, start=150)
    first_run = preds(outs)
    assert preds(resumed) == {q: first_run[q] for q in range(149, 200)}


def test_seq_gap_limit_is_a_setting():
    events = list(agrawal_events("s", 10, seed=1))
    ev = events[0]
    items = [(b"s", dumps(ev.__class__("s", q, 0.0, ev.x, ev.y))) for q in (0, 1, 51, 102, 103)]
    outs = feed(ModelHandler(settings(max_seq_gap=50)), items)
    assert seqs(outs) == [0, 1, 51]  # 102 is 51 beyond 51: refused, and 103 too (52 beyond)
    assert reasons(outs) == ["seq_gap", "seq_gap"]


def test_longest_stream_ids_checkpoint_and_explain(tmp_path):
    # the longest ids must not make checkpoint file names (or drift series keys) too long for
    # the file system (an OSError every checkpoint_every-th event)
    sid = "L" * 128
    s = settings(checkpoint_every=7)
    store = FileCheckpointStore(tmp_path, every=7, secret=b"k" * 32)
    events = list(agrawal_events(sid, 60, seed=2))
    mh = ModelHandler(s, checkpoints=store)
    outs = feed(mh, [(sid.encode(), dumps(ev)) for ev in events])
    assert seqs(outs) == list(range(60)) and "dead-letters" not in outs
    eh = ExplainHandler(s, checkpoints=store)
    expl = feed(eh, [(o.key, o.value) for o in outs["explain-tasks"]], topic="explain-tasks")
    assert "dead-letters" not in expl and eh.metrics.get("checkpoints_written") > 0
    dh = ChangeHandler(s, checkpoints=store)
    changes = feed(dh, [(o.key, o.value) for o in expl["explanations"]], topic="explanations")
    assert "dead-letters" not in changes and dh.metrics.get("checkpoints_written") > 0
    assert all(len(p.name) < 100 for p in tmp_path.rglob("*"))  # file names are hashes, not ids


class _Msg:
    def __init__(self, topic, partition, offset):
        self.topic, self.partition, self.offset = topic, partition, offset


class _Event:
    def __init__(self, key, value, offset):
        self.key, self.value, self.message = key, value, _Msg("features", 0, offset)


class _Stream:
    def __init__(self, items):
        self.items = items

    async def events(self):
        for off, (k, v) in enumerate(self.items):
            yield _Event(k, v, off)


class _Producer:
    """Faust's producer with the broker's size limit per topic: bigger messages raise like
    aiokafka's MessageSizeTooLargeError; a topic that is ``down`` refuses every send."""

    def __init__(self, limits, down):
        self.limits, self.down, self.sent = limits, down, {}

    async def send(self, topic, key, value, partition, timestamp, headers):
        import asyncio

        short = topic.split(".", 1)[1]
        size = len(value) + len(key or b"")
        if short in self.down or size > self.limits.get(short, 1_000_000):
            raise RuntimeError(f"MessageSizeTooLargeError: {size} bytes" if short not in self.down
                               else "broker unreachable")
        self.sent.setdefault(short, []).append((key, value))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def _run_agent(handler, items, limits=None, down=()):
    """What the agent loop sends for ``items``, by (short) topic name."""
    import asyncio

    from streamxai.agents._forward import Outbox, forward

    producer = _Producer(limits or {}, set(down))

    async def run():
        await forward(_Stream(items), handler, Outbox(producer, handler.settings, handler.metrics), "model")
        await asyncio.sleep(0)  # the acknowledgements' callbacks

    asyncio.run(run())
    return collections.defaultdict(list, producer.sent)


def test_a_message_just_under_the_broker_limit_gets_a_dead_letter_that_fits():
    # a message just under the broker's limit is refused as oversized; its dead letter (base64
    # original) must still fit the broker's limit, or the send fails and the model agent with it
    import hashlib

    events = list(agrawal_events("s", 4, seed=1))
    big = dumps(events[1]).replace(b'"x":{', b'"pad":"' + b"p" * 900_000 + b'","x":{')
    items = [(b"s", dumps(events[0])), (b"s", big), (b"s", dumps(events[2])), (b"s", dumps(events[3]))]
    mh = ModelHandler(settings())
    topics = _run_agent(mh, items)
    assert [orjson.loads(v)["seq"] for _, v in topics["predictions"]] == [0, 2, 3]
    ((key, value),) = topics["dead-letters"]
    assert len(key) + len(value) <= settings().max_dead_letter_bytes
    dl = orjson.loads(value)
    assert dl["reason"] == "oversized" and dl["truncated"] is True
    assert dl["original_bytes"] == len(big) and dl["original_sha256"] == hashlib.sha256(big).hexdigest()
    import base64

    assert big.startswith(base64.b64decode(dl["original"])) and len(base64.b64decode(dl["original"])) > 300_000
    assert mh.metrics.get("dead_letters{reason=oversized}") == 1


def test_a_dead_letter_that_cannot_be_sent_is_counted_as_an_error_not_as_sent():
    events = list(agrawal_events("s", 3, seed=1))
    items = [(b"s", dumps(events[0])), (b"s", b"not json"), (b"s", dumps(events[1]))]
    mh = ModelHandler(settings())
    topics = _run_agent(mh, items, down=["dead-letters"])
    assert [orjson.loads(v)["seq"] for _, v in topics["predictions"]] == [0, 1]
    assert mh.metrics.get("dead_letters{reason=malformed}") == 0
    assert mh.metrics.get("send_errors{topic=dead-letters}") == 1


def test_an_output_the_producer_refuses_becomes_a_dead_letter_of_the_input():
    events = list(agrawal_events("s", 3, seed=1))
    items = [(b"s", dumps(ev)) for ev in events]
    mh = ModelHandler(settings())
    topics = _run_agent(mh, items, limits={"predictions": 10})
    assert topics["predictions"] == [] and len(topics["explain-tasks"]) == 3
    assert [orjson.loads(v)["reason"] for _, v in topics["dead-letters"]] == ["send_error"] * 3
    assert mh.metrics.get("dead_letters{reason=send_error}") == 3


def _bad_inputs(template):
    """(name, key, raw) of every kind of bad feature event, built around a valid one."""
    good = orjson.loads(template)

    def ev(**over):
        d = dict(good)
        for k, v in over.items():
            if v is _DROP:
                d.pop(k)
            else:
                d[k] = v
        return orjson.dumps(d)

    bad = [
        ("not json", b"hello"),
        ("truncated", template[: len(template) // 2]),
        ("empty", b""),
        ("no value", None),
        ("json array", b"[1, 2, 3]"),
        ("json string", b'"s"'),
        ("invalid utf-8", template.replace(b'"s"', b'"\xff\xfe"')),
        ("NaN literal", template.replace(b'"ts":0.0', b'"ts":NaN')),
        ("infinity", template.replace(b'"ts":0.0', b'"ts":1e999')),
        ("oversized", ev(x={**good["x"], "salary": "9" * 70_000})),
        ("huge category", ev(x={**good["x"], "car": "c" * 60_000})),
        ("unknown feature", ev(x={**good["x"], "zzz": 1.0})),
        ("missing feature", ev(x={k: v for k, v in good["x"].items() if k != "age"})),
        ("x null", ev(x=None)),
        ("x list", ev(x=[1, 2])),
        ("feature null", ev(x={**good["x"], "age": None})),
        ("feature string", ev(x={**good["x"], "age": "37"})),
        ("feature bool", ev(x={**good["x"], "age": True})),
        ("target object", ev(y={"a": 1})),
        ("unknown schema", ev(schema="feature_event/v9")),
        ("no schema", ev(schema=_DROP)),
        ("extra field", ev(extra=1)),
        ("negative seq", ev(seq=-5)),
        ("float seq", ev(seq=3.0)),
        ("string seq", ev(seq="3")),
        ("bool seq", ev(seq=True)),
        ("int64 overflow seq", ev(seq=2**63)),
        ("huge seq", ev(seq=10**18)),
        ("long stream id", ev(stream_id="L" * 200)),
        ("odd stream id", ev(stream_id="a/b c\n")),
        ("null stream id", ev(stream_id=None)),
        ("ts string", ev(ts="now")),
    ]
    for field in ("stream_id", "seq", "ts", "x"):
        bad.append((f"missing {field}", ev(**{field: _DROP})))
    # every field null or of a wrong type (values that would be valid are left out: a string
    # stream_id names another stream, y may be null, missing, a string or a boolean label)
    wrong = [None, [], {}, True, "s", 1.5]
    valid = {"stream_id": ["s"], "ts": [1.5], "y": [None, True, "s"]}
    for field in ("schema", "stream_id", "seq", "ts", "x", "y"):
        for value in wrong:
            if value not in valid.get(field, []):
                bad.append((f"{field}={value!r}", ev(**{field: value})))
    return [(name, b"s", raw) for name, raw in bad] + [("key is not the stream id", b"other", template)]


_DROP = object()


def test_fault_suite_every_bad_input_is_a_dead_letter_and_valid_events_are_exact():
    s = settings(explainers=["ipfi", "ipdp"])
    a = list(agrawal_events("s", 120, seed=5))
    b = list(agrawal_events("t.2", 120, seed=6))
    template = dumps(a[0].__class__("s", 40, 0.0, a[40].x, a[40].y))
    bad = _bad_inputs(template)
    # the clean run: the two streams interleaved
    clean = []
    for ea, eb in zip(a, b, strict=True):
        clean += [(b"s", dumps(ea)), (b"t.2", dumps(eb))]
    # the attacked run: bad inputs spread through it, plus duplicates and out-of-order seqs
    dirty, bad_at = [], iter(bad)
    for i, item in enumerate(clean):
        dirty.append(item)
        for nxt in [next(bad_at, None)] if i % 3 == 2 else []:
            if nxt is not None:
                dirty.append(nxt[1:])
        if i in (50, 90):
            dirty.append(clean[i - 10])  # a duplicate of an earlier event (out of order)
    assert next(bad_at, None) is None, "spread every bad input"

    def run(items):
        mh, eh = ModelHandler(s), ExplainHandler(s)
        outs = feed(mh, items)
        tasks = [(o.key, o.value) for o in outs["explain-tasks"]]
        expl = feed(eh, tasks, topic="explain-tasks")
        values = {(m["stream_id"], m["seq"], m["explainer"], m["feature"]): m["value"]
                  for m in map(orjson.loads, (o.value for o in expl["explanations"]))}
        return mh, outs, values

    mh_clean, outs_clean, values_clean = run(clean)
    mh, outs, values = run(dirty)
    pred = [(m["stream_id"], m["seq"], m["y_pred"]) for m in map(orjson.loads, (o.value for o in outs["predictions"]))]
    pred_clean = [(m["stream_id"], m["seq"], m["y_pred"])
                  for m in map(orjson.loads, (o.value for o in outs_clean["predictions"]))]
    assert pred == pred_clean  # every valid event predicted once, with the clean run's values
    assert values == values_clean and values  # and explained exactly as without the attack
    letters = [orjson.loads(o.value) for o in outs["dead-letters"]]
    assert len(letters) == len(bad)  # one dead letter per bad input, none for valid events
    assert all(len(o.value) + len(o.key or b"") <= s.max_dead_letter_bytes for o in outs["dead-letters"])
    assert all(m["reason"] in {"malformed", "schema", "features", "bad_value", "label_type", "oversized", "seq_gap"}
               for m in letters), {m["reason"] for m in letters}
    assert mh.metrics.get("predictions") == mh_clean.metrics.get("predictions") == 240
    assert mh.metrics.get("duplicates_dropped") == 2


def test_bad_explain_tasks_and_explanations_are_dead_letters():
    s = settings()
    for handler, topic in ((ExplainHandler(s), "explain-tasks"), (ChangeHandler(s), "explanations")):
        for raw in (b"", None, b"{", b"[]", b'{"schema": "explain_task/v1"}', b'{"schema": "explanation/v1"}',
                    b"\xff" * 10, b"x" * 2_000_000):
            (out,) = handler.on_message(raw, b"k", Source(topic, 0, 1))
            assert out.topic == "dead-letters" and len(out.value) <= s.max_dead_letter_bytes


@pytest.mark.slow
def test_fault_suite_bad_labels_are_dead_letters_with_reasons_and_the_stream_goes_on():
    """Each bad label among labels 10 events late is one dead letter with its reason and record; the stream's
    outputs are those without them, and every label is accounted for."""
    from helpers.arrivals import record_arrivals, redeliver, run_handlers
    from helpers.partition_log import PartitionLog
    from streamxai.local.demo_stream import labels_later
    from streamxai.schemas import LabelEvent

    s = settings(explainers=["ipfi", "ipdp"], max_label_delay=30)
    events = [e for e in agrawal_events("s", 120, seed=5) if e.seq != 50]  # seq 50 never comes
    clean = labels_later(events, delay=10, unlabelled={6})
    y3 = next(e.y for e in events if e.seq == 3)

    def label(**over):
        d = {"schema": "label_event/v1", "stream_id": "s", "seq": 30, "y": 1, "ts": 0.0, **over}
        return orjson.dumps({k: v for k, v in d.items() if v is not _DROP})

    bad = {  # where: the bad label comes right after the feature event of this seq
        10: [(b"s", b"{not json", "malformed"), (b"s", label(extra=1), "schema"), (b"s", label(y=_DROP), "schema"),
             (b"s", label(schema="label_event/v9"), "schema"), (b"s", label(seq=-1), "schema"),
             (b"s", label(stream_id="s t"), "schema"), (b"other", label(), "schema"), (b"s", b"", "malformed"),
             (b"s", label().replace(b'"y":1', b'"y":NaN'), "malformed")],
        20: [(b"s", label(y={"a": 1}), "label_type"), (b"s", label(y=1.5), "label_type"),
             (b"s", label(y=None), "label_type"), (b"s", label(seq=3, y=1 - y3), "label_already_labelled")],
        40: [(b"s", label(seq=6), "label_expired"), (b"s", label(seq=9_999), "label_unknown_seq")],
        48: [(b"s", dumps(LabelEvent("s", 50, 1, 0.0)), "label_unknown_seq")],  # held; refused when 51 comes
        60: [(b"s", label(seq=50), "label_unknown_seq")],
    }
    dirty = []
    for m in clean:
        dirty.append(m)
        if not isinstance(m, LabelEvent):
            dirty += [("labels", key, raw) for key, raw, _ in bad.get(m.seq, [])]

    def run(messages, again=()):
        log = PartitionLog()
        record_arrivals(log, messages)
        redeliver(log, again)
        mh = ModelHandler(s)
        return mh, run_handlers(s, log, model=lambda off: mh)

    _, clean_run = run(clean)
    # and the intake forwards 40 arrivals twice (a bad message forwarded twice is dead-lettered
    # twice, as after any restart: at least once; consumers dedupe dead letters by source)
    again = [i for i in range(70, 110) if not isinstance(dirty[i], tuple)]
    mh, dirty_run = run(dirty, again=again)
    assert dirty_run.predictions() == clean_run.predictions() and len(clean_run.predictions()) == 119
    def timeless(msgs):  # the arrival times differ: the dirty run has more messages in between
        return [{k: v for k, v in m.items() if k != "delay_s"} for m in msgs]

    assert timeless(dirty_run.of("predictions")) == timeless(clean_run.of("predictions"))  # outcomes too
    assert dirty_run.explanation_values() == clean_run.explanation_values()
    letters = dirty_run.of("dead-letters")
    want = [r for rows in bad.values() for _, _, r in rows]
    assert sorted(m["reason"] for m in letters) == sorted(want)
    assert all(m["source"]["topic"] == s.topic("labels") and m["stage"] == "model" for m in letters)
    import base64

    assert sorted(base64.b64decode(m["original"]) for m in letters) == sorted(
        dumps(m) if isinstance(m, LabelEvent) else m[2] for m in dirty
        if isinstance(m, tuple) or isinstance(m, LabelEvent) and m.seq == 50)
    n_labels = sum(1 for m in dirty if isinstance(m, LabelEvent) or (isinstance(m, tuple) and m[0] == "labels"))
    n_forwarded_twice = sum(1 for i in again if isinstance(dirty[i], LabelEvent))
    c = mh.metrics
    assert c.get("labels_received") == n_labels + n_forwarded_twice
    assert c.get("labels_learned") + c.get("labels_dead_lettered") + c.get("duplicate_labels_dropped") \
        == c.get("labels_received")
    assert c.get("labels_dead_lettered") == len(want) and c.get("duplicate_labels_dropped") == n_forwarded_twice
    assert c.get("labels_expired") == 1  # event 6, never labelled


# --- bad stream profiles: the worker process stops at start with one line ------------------------

def test_a_worker_process_with_a_bad_stream_profile_exits_2_with_one_line_naming_table_and_key(tmp_path):
    import os
    import subprocess
    import sys

    bad_file = tmp_path / "s.toml"
    bad_file.write_text('[streams."fraud-*"]\nfeatures = ["amount"]\nmodel = "river.nope.Forest"\n')
    cases = [  # (environment, arguments, what the line says)
        ({"STREAMXAI_STREAMS": '{"r-*": {"features": ["a"], "partitions": 8}}'}, [],
         '$STREAMXAI_STREAMS: [streams."r-*"]: partitions is deployment-wide'),
        ({}, ["--settings", str(bad_file)], '[streams."fraud-*"] model: model \'river.nope.Forest\' cannot be imported'),
    ]
    base = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    for env, args, says in cases:
        proc = subprocess.run([sys.executable, "-m", "streamxai.cli", "worker", "--bootstrap", "127.0.0.1:1", *args],
                              env={**base, **env}, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and says in proc.stderr, proc.stderr
