"""The change agent's input is checked against what an explanation can be (at most ``emit_every``
increments a block, each within the explainer's range, the loss block within the loss's): else one dead
letter (``bad_value``), also when a rebuilt change test replays its history."""

from __future__ import annotations

import pickle
import random

import orjson
import pytest
from helpers.arrivals import Run, record_arrivals, run_handlers
from helpers.partition_log import PartitionLog
from streamxai.handlers import ChangeHandler
from streamxai.schemas import FeatureEvent, Source, pack_feed, unpack_feed
from streamxai.settings import Settings


def _settings(**over) -> Settings:
    base = dict(features=["a", "b"], task="classification", output="label", loss="zero_one",
                model="river.linear_model.LogisticRegression", model_params={}, explainers=["ipfi", "isage", "ipdp"],
                emit_every=5, storage_size=20, partitions=1, change_warmup=0, change_min_samples=20)
    base.update(over)
    return Settings(**base)


def _feed(s: Settings, n: int = 400) -> list[tuple]:
    """The drift-feed records of ``n`` events of stream ``s``: a linear score, or its sign for a classifier."""
    r, events = random.Random(2), []
    for q in range(n):
        a, b = r.gauss(0, 1), r.gauss(0, 1)
        y = 3 * a - 2 * b + r.gauss(0, 1)
        events.append(FeatureEvent("s", q, float(q), {"a": a, "b": b}, y > 0 if s.task == "classification" else y))
    log = PartitionLog()
    record_arrivals(log, events)
    return run_handlers(s, log).explanations.parts[("drift-feed", 0)]


def _change(s: Settings, records, start: int = 0) -> tuple[ChangeHandler, Run]:
    """A change handler over ``records`` from ``start`` on (those before are its history)."""
    log = PartitionLog()
    for key, value, ts, headers in records:
        log.append("drift-feed", 0, key, value, headers=headers, timestamp=ts)
    h, out = ChangeHandler(s, history=log), Run()
    for off in range(start, len(records)):
        key, value, _, _ = records[off]
        src = log.source("drift-feed", 0, off)
        h.needs_recovery(key, src)
        for o in h.on_message(value, key, src):
            out.add(o.topic, o.value)
    return h, out


def _with(feed, at: int, explainer: str, change) -> list[tuple]:
    """``feed`` with one record after record ``at``: its first ``explainer`` document one position
    later, changed by ``change``."""
    key, value, ts, headers = feed[at]
    docs = [orjson.loads(d) for d in unpack_feed(value, Source("drift-feed", 0, at, headers=headers))]
    doc = next(d for d in docs if d["explainer"] == explainer)
    doc = dict(doc, position=doc["position"] + 1, seq=doc["seq"] + 1)
    change(doc)
    return [*feed[:at + 1], *((key, v, ts, h) for v, h in pack_feed([orjson.dumps(doc)])), *feed[at + 1:]]


def _block(doc, name="block", **values):
    doc[name] = dict(doc[name], **values)


CRAFTED = {
    "a block mean of 1e300": ("ipfi", lambda d: _block(d, mean=1e300, m2=0.0)),
    "a 0-1 loss increment of 1000": ("ipfi", lambda d: _block(d, mean=1000.0, m2=0.0)),
    "an iSAGE increment of 1000": ("isage", lambda d: _block(d, mean=-1000.0, m2=0.0)),
    "an iPDP increment of 1000 on a probability": ("ipdp", lambda d: _block(d, mean=1000.0, m2=0.0)),
    "a million increments in one block": ("ipfi", lambda d: _block(d, n=10**6, mean=0.4, m2=1.0)),
    "more increments than explained events": ("ipfi", lambda d: _block(d, n=d["n_explained"] + 1)),
    "a spread wider than the range allows": ("ipfi", lambda d: _block(d, m2=1e6)),
    "a model loss of 1000 for a 0-1 loss": ("ipfi", lambda d: _block(d, "model_loss", mean=1000.0, m2=0.0)),
    "a negative model loss": ("ipfi", lambda d: _block(d, "model_loss", mean=-0.5)),
}


@pytest.fixture(scope="module")
def clean():
    s = _settings()
    feed = _feed(s)
    return s, feed, _change(s, feed)[1]


@pytest.mark.parametrize("name", CRAFTED)
def test_one_crafted_drift_feed_record_is_one_dead_letter_and_no_change_event(clean, name):
    s, feed, want = clean
    explainer, change = CRAFTED[name]
    at = 2 * len(feed) // 3
    crafted = _with(feed, at, explainer, change)
    h, out = _change(s, crafted)
    dead = out.of("dead-letters")
    assert [(d["stage"], d["reason"]) for d in dead] == [("change", "bad_value")], (name, dead[:1])
    assert out.changes() == want.changes() and out.of("change-episodes") == want.of("change-episodes"), name
    # and a worker restarted past it rebuilds the stream's change test by replay without it
    h, out = _change(s, crafted, start=at + 2)
    assert h.metrics.get("replayed_explanations") > 0 and out.of("dead-letters") == []
    clean_h, clean_out = _change(s, feed, start=at + 1)  # the same records, none crafted
    assert out.changes() == clean_out.changes(), name
    assert pickle.dumps(h.streams["s"].detector) == pickle.dumps(clean_h.streams["s"].detector), name


def test_a_genuine_record_carrying_the_largest_increments_passes(clean):
    # every event of a 5-event block flipping the 0-1 loss: the bound itself, not a lie about it
    s, feed, want = clean
    h, out = _change(s, _with(feed, len(feed) // 2, "ipfi", lambda d: _block(d, n=5, mean=-1.0, m2=0.0)))
    assert out.of("dead-letters") == []


@pytest.mark.parametrize("over", [
    {},
    {"isage_loss": "cross_entropy", "model": "river.tree.HoeffdingTreeClassifier", "model_params": {"grace_period": 30}},
    {"task": "regression", "output": "value", "loss": "squared", "model": "river.linear_model.LinearRegression"},
], ids=["0-1 and Brier", "cross-entropy, a tree", "squared"])
def test_what_the_explainers_send_is_within_the_bounds(over):
    s = _settings(**over)
    h, out = _change(s, _feed(s, 300))
    assert h.metrics.get("explanations_monitored") > 100
    assert out.of("dead-letters") == []



@pytest.mark.slow  # 2.2 s
def test_ipdp_increments_past_half_the_bound_on_a_nearly_flat_pd_curve_pass():
    # nearly flat early PD curves let an increment pass the centred bound sqrt(K / (K - 1)) / 2 = 0.56 (0.71 with
    # 5 grid points); the bound is the whole sqrt(K / (K - 1)), which the stream's real increments all pass
    from streamxai.core.increments import Block
    from streamxai.handlers.feed_bounds import feed_bounds
    from streamxai.local.demo_stream import agrawal_events
    from streamxai.settings import AGRAWAL_FEATURES

    s = Settings(model="river.linear_model.LogisticRegression", model_params={}, features=list(AGRAWAL_FEATURES),
                 categorical=["elevel", "car", "zipcode"], explainers=["ipdp"], explain_groups=1, partitions=1,
                 change_warmup=0, change_min_samples=20, emit_every=5, storage_size=30, grid_size=5)
    log = PartitionLog()
    record_arrivals(log, agrawal_events("e", 200, seed=3))
    run = run_handlers(s, log)
    assert run.of("explanations") and run.of("dead-letters") == []
    feed_bounds(s).check("ipdp", 5, 5, Block(5, 0.71, 0.0), None, where="test")  # no BadValue
