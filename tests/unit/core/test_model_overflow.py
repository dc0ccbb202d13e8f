"""An event with finite features but an infinite prediction or loss (x0 = 1e200) is the model's error: a dead
letter, never learned, the same in replay and reference, and the stream goes on (no rebuild per message)."""

from __future__ import annotations

import math
import random

from helpers.arrivals import record_arrivals, run_handlers
from helpers.partition_log import PartitionLog
from streamxai.core.labels import LabelJoin
from streamxai.core.prequential import PrequentialModel
from streamxai.handlers import ModelHandler
from streamxai.reference import run_in_process
from streamxai.schemas import FeatureEvent
from streamxai.settings import Settings


def _settings() -> Settings:
    return Settings(features=["a", "b"], task="regression", output="value", loss="squared",
                    model="river.linear_model.LinearRegression", model_params={}, explainers=["ipfi"],
                    change_explainers=["ipfi"], emit_every=10, storage_size=20, partitions=1)


def _events(n: int = 300, huge_at: int = 100) -> list[FeatureEvent]:
    r = random.Random(7)
    out = []
    for q in range(n):
        a, b = r.gauss(0, 1), r.gauss(0, 1)
        y = 3 * a - 2 * b
        if q == huge_at:
            a = 1e200  # finite, valid input; the model's squared loss overflows to inf
        out.append(FeatureEvent("s", q, float(q), {"a": a, "b": b}, y))
    return out


def test_an_event_whose_loss_overflows_is_a_dead_letter_and_the_stream_goes_on():
    s, log = _settings(), PartitionLog()
    recorded = record_arrivals(log, _events())
    h = ModelHandler(s, history=log)  # a rebuild replays this stream's arrivals, as a worker's does
    run = run_handlers(s, log, model=lambda off: h)
    dead = run.of("dead-letters")
    assert [(d["reason"], d["source"]["offset"]) for d in dead] == [("model_error", 100)], dead[:3]
    assert "not finite" in dead[0]["error"], dead[0]["error"]
    preds = {p["seq"]: p for p in run.of("predictions", "prediction/v2")}
    assert sorted(preds) == [q for q in range(300) if q != 100]
    assert all(math.isfinite(p["loss"]) for p in preds.values())
    # the model never learned it: it predicts the later events as well as before
    late = [preds[q]["loss"] for q in range(250, 300)]
    assert sum(late) / len(late) < 0.05, late
    assert h.metrics.get("history_scans") <= 1  # no rebuild per message
    assert run_in_process(s, recorded).predictions == run.predictions()


def test_the_join_does_not_learn_an_event_whose_prediction_or_loss_is_not_finite():
    from river import linear_model

    join = LabelJoin(PrequentialModel(linear_model.LinearRegression(), output="value", loss="squared"), ["a"])
    for q in range(20):
        assert join.on_features(q, {"a": q / 10}, q / 5, ts=float(q)).error is None
    version = join.model_version
    res = join.on_features(20, {"a": 1e200}, 1.0, ts=20.0)
    assert res.error is not None and res.prediction is None and join.model_version == version
    # waiting for its label: predicted (finite), then its label's loss overflows: it keeps waiting
    res = join.on_features(21, {"a": 1e160}, None, ts=21.0)
    assert res.error is None and math.isfinite(res.prediction.y_pred)
    res = join.on_label(21, 1.0)
    assert res.error is not None and join.model_version == version and join.waiting == 1
