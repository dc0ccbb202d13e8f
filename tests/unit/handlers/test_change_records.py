"""The change handler takes a drift-feed record in one pass when its stream's state is here and
every explanation of it passes its checks; otherwise message by message. Both ways give the
same messages, states, checkpoints and counters."""

from __future__ import annotations

import pickle
import random

import orjson
import pytest
from helpers.arrivals import Run, record_arrivals, run_handlers
from helpers.checkpoint_saves import Saves
from helpers.partition_log import PartitionLog
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler
from streamxai.schemas import FeatureEvent, Source, pack_feed, unpack_feed
from streamxai.settings import Settings


def _settings() -> Settings:
    return Settings(features=["a", "b"], task="regression", output="value", loss="squared",
                    model="river.linear_model.LinearRegression", model_params={}, explainers=["ipfi", "isage", "ipdp"],
                    change_explainers=["ipfi"], change_warmup=0, change_min_samples=10, emit_every=5,
                    storage_size=20, partitions=1)


def _feed(s: Settings) -> list:
    """The drift-feed records of two streams whose target swaps its features halfway."""
    r, events = random.Random(5), []
    for q in range(300):
        a, b = r.gauss(0, 1), r.gauss(0, 1)
        for sid in ("s", "t"):
            y = 3 * a - 0.5 * b if q < 150 or sid == "t" else 0.5 * a - 3 * b
            events.append(FeatureEvent(sid, q, float(q), {"a": a, "b": b}, y))
    log, run = PartitionLog(), Run()
    record_arrivals(log, events)
    model, explain = ModelHandler(s, history=log), ExplainHandler(s, history=run.tasks)
    run_handlers(s, log, model=lambda off: model, explain=lambda p, off: explain, run=run)
    return run.explanations.parts[("drift-feed", 0)]


def _records(feed: list) -> list:
    """``feed`` as a consumer may meet it: a record delivered twice, one with a broken
    explanation, one with an explanation of another stream, and a record of one explanation."""
    out = []
    for i, (key, value, ts, headers) in enumerate(feed):
        out.append((key, value, ts, headers))
        docs = unpack_feed(value, Source("drift-feed", 0, i, headers=headers))
        if i == 20:
            out.append((key, value, ts, headers))  # redelivered: every explanation a duplicate
        elif i == 31:
            j = next(j for j in range(i + 1, len(feed)) if feed[j][0] == key)  # the stream's next record
            later = unpack_feed(feed[j][1], Source("drift-feed", 0, j, headers=feed[j][3]))
            out += [(key, v, ts, h) for v, h in pack_feed(docs[-2:] + later[:3])]  # half again, half ahead
        elif i == 40:
            out += [(key, v, ts, h) for v, h in pack_feed([docs[0], docs[1][:-9], *docs[2:]])]  # cut short
        elif i == 50:
            d = orjson.loads(docs[0])
            other = orjson.dumps(dict(d, stream_id="t" if key == b"s" else "s"))
            out += [(key, v, ts, h) for v, h in pack_feed([other, *docs[1:]])]
        elif i == 60:
            out.append((key, docs[0], ts, None))  # one explanation, as on the public topic
    return out


def _take(s: Settings, records: list, one_pass: bool, monkeypatch) -> tuple:
    taken = []  # the records the one-pass path took
    if one_pass:
        real = ChangeHandler._take_feed

        def counted(self, raw, key, src):
            out = real(self, raw, key, src)
            if out is not None:
                taken.append(src.offset)
            return out

        monkeypatch.setattr(ChangeHandler, "_take_feed", counted)
    else:
        monkeypatch.setattr(ChangeHandler, "_take_feed", lambda self, raw, key, src: None)
    store = Saves(every=40)
    h, outs = ChangeHandler(s, checkpoints=store), []
    for off, (key, value, ts, headers) in enumerate(records):
        src = Source("drift-feed", 0, off, timestamp=ts, headers=headers)
        outs += [(o.topic, o.key, o.value if o.topic != "dead-letters" else
                  {k: v for k, v in orjson.loads(o.value).items() if k != "ts"}) for o in h.on_message(value, key, src)]
    monkeypatch.undo()
    assert not one_pass or len(taken) >= len(records) // 2  # the path compared is the one taken
    counters = {k: v for k, v in h.metrics.snapshot()["counters"].items() if not k.startswith("recovery_seconds")}
    return outs, {k: pickle.dumps(v) for k, v in h.streams.items()}, store.saved, counters  # times aside


@pytest.mark.parametrize("broken", [False, True])
def test_a_record_taken_in_one_pass_gives_what_it_gives_message_by_message(monkeypatch, broken):
    s = _settings()
    feed = _feed(s)
    records = _records(feed) if broken else feed
    one = _take(s, records, True, monkeypatch)
    each = _take(s, records, False, monkeypatch)
    outs, states, saved, counters = one
    assert outs == each[0] and states == each[1] and saved == each[2] and counters == each[3]
    # what the comparison covers: changes found, checkpoints written, and, with the crafted
    # records, duplicates and dead letters of explanations inside a record
    assert sum(t == "drift-events" for t, _, _ in outs) >= 2 and len(saved) >= 5
    reasons = sorted(o["reason"] for t, _, o in outs if t == "dead-letters")
    assert reasons == (["malformed", "schema"] if broken else [])
    assert (counters.get("duplicate_explanations_dropped", 0) > 5) == broken


def test_an_explanation_that_raises_hands_the_rest_of_its_record_to_the_skeleton(monkeypatch):
    s = _settings()
    feed = _feed(s)
    real = ChangeHandler._process
    raised = []

    def process(self, p, st, raw, key, src):
        if src.offset == 45 and p.feature == "b" and not raised:
            raised.append(p)
            raise RuntimeError("the stand-in failure")
        return real(self, p, st, raw, key, src)

    monkeypatch.setattr(ChangeHandler, "_process", process)
    one = _take(s, feed, True, monkeypatch)
    monkeypatch.setattr(ChangeHandler, "_process", process)
    raised.clear()
    each = _take(s, feed, False, monkeypatch)
    assert raised and one == each
    assert [o["reason"] for t, _, o in one[0] if t == "dead-letters"] == ["change_error"]
