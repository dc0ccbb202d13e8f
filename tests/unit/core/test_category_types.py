"""A categorical feature keeps its first value's type per stream: another type is one dead letter
(``category_type``), also after a restart or a rebuild."""

from __future__ import annotations

import random

import orjson
from helpers.arrivals import ARRIVALS, record_arrivals
from helpers.partition_log import PartitionLog
from streamxai.handlers import ModelHandler
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.schemas import FeatureEvent
from streamxai.settings import Settings

SECRET = b"0123456789abcdef"
ODD = 100  # the seq whose categorical value is an integer among strings


def _settings(**over) -> Settings:
    base = dict(features=["a", "c"], categorical=["c"], task="classification", output="label", loss="zero_one",
                model="river.tree.HoeffdingTreeClassifier", model_params={"grace_period": 20},
                explainers=["ipfi"], change_explainers=["ipfi"], partitions=1, checkpoint_every=25)
    base.update(over)
    return Settings(**base)


def _log(n: int = 130) -> PartitionLog:
    r, log = random.Random(5), PartitionLog()
    events = []
    for q in range(n):
        a, c = r.gauss(0, 1), 3 if q == ODD else "ab"[q % 3 == 0]
        events.append(FeatureEvent("s", q, float(q), {"a": a, "c": c}, a > 0 or c == "b"))
    record_arrivals(log, events)
    return log


def _run(h: ModelHandler, log: PartitionLog, offsets) -> tuple[dict[int, object], list[tuple[str, int]]]:
    """The predictions (by seq) and the dead letters (reason, offset of the features record)."""
    preds, dead = {}, []
    for off in offsets:
        key, value = log.items(ARRIVALS, 0)[off]
        src = log.source(ARRIVALS, 0, off)
        h.needs_recovery(key, src)
        for o in h.on_message(value, key, src):
            m = orjson.loads(o.value)
            if o.topic == "predictions" and m.get("outcome") is None:
                preds[m["seq"]] = m["y_pred"]
            elif o.topic == "dead-letters":
                dead.append((m["reason"], m["source"]["offset"]))
    return preds, dead


def test_the_type_a_stream_fixed_survives_a_checkpoint_and_a_rebuild_by_replay(tmp_path):
    s, log = _settings(), _log()
    whole, dead = _run(ModelHandler(s), log, range(130))
    assert dead == [("category_type", ODD)] and len(whole) == 129
    store = FileCheckpointStore(tmp_path, every=25, secret=SECRET)
    _run(ModelHandler(s, checkpoints=store), log, range(80))  # checkpoints after 24, 49 and 74
    restored = ModelHandler(s, history=log.history, checkpoints=store)
    assert _run(restored, log, range(80, 130)) == ({q: whole[q] for q in whole if q >= 80}, [("category_type", ODD)])
    assert restored.metrics.get("checkpoints_restored") == 1
    replayed = ModelHandler(s, history=log.history)
    assert _run(replayed, log, range(80, 130)) == ({q: whole[q] for q in whole if q >= 80}, [("category_type", ODD)])
    assert replayed.metrics.get("replayed_events") == 80

