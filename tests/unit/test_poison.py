"""Inputs that make a stage raise must cost one dead letter each, never a rebuild of the
stream's state per message (a denial of service: a rebuild runs inside the worker's batch,
and one stream's bad traffic stalled every stream of the worker), and must leave the state
the in-process reference builds.

Found by acting as an attacker: a label far outside the stream's scale (y = 1e100 for a
regression) has a finite loss (1e200), but its square overflows in the loss summaries the
explainers report with their values (``model_loss.m2``): each such label made the next
report of its explainer group fail to serialise, the group was rebuilt from its history,
and a label like it every ten events rebuilt the group every ten tasks."""

from __future__ import annotations

import random

from helpers.arrivals import Run, record_arrivals, run_handlers
from helpers.partition_log import PartitionLog

from pipeline.handlers import ExplainHandler, ModelHandler
from pipeline.reference import run_in_process
from pipeline.settings import Settings
from schemas import FeatureEvent


def _settings(**over) -> Settings:
    base = dict(features=["a", "b"], target="number", output="value", loss="squared",
                model="river.linear_model.LinearRegression", model_params={}, explainers=["ipfi", "isage", "ipdp"],
                drift_explainers=["ipfi"], emit_every=10, storage_size=20, partitions=1)
    base.update(over)
    return Settings(**base)


def _events(n: int, bad: dict[int, dict], streams=("s", "t")) -> list[FeatureEvent]:
    """``n`` events of each stream (interleaved); those of stream ``s`` at the seqs of ``bad``
    with its fields (``x`` entries or ``y``) replaced."""
    r = random.Random(3)
    out = []
    for q in range(n):
        a, b = r.gauss(0, 1), r.gauss(0, 1)
        for sid in streams:
            x, y = {"a": a, "b": b}, 3 * a - 2 * b
            if sid == "s" and q in bad:
                x.update({k: v for k, v in bad[q].items() if k != "y"})
                y = bad[q].get("y", y)
            out.append(FeatureEvent(sid, q, float(q), x, y))
    return out


def _run(s: Settings, events: list[FeatureEvent]):
    log, run = PartitionLog(), Run()
    recorded = record_arrivals(log, events)
    model = ModelHandler(s, history=log)  # rebuilds replay the handler's own history, as a worker's do
    explain = ExplainHandler(s, history=run.tasks)
    run_handlers(s, log, model=lambda off: model, explain=lambda p, off: explain, run=run)
    return run, model, explain, run_in_process(s, recorded, changes=False)


def test_a_label_far_outside_the_streams_scale_is_one_dead_letter_and_rebuilds_nothing():
    bad = {q: {"y": 1e100} for q in range(50, 200, 10)}  # loss 1e200 is finite, its square is not
    s = _settings()
    run, model, explain, ref = _run(s, _events(200, bad))
    dead = run.of("dead-letters")
    assert [(d["stage"], d["reason"], d["source"]["offset"]) for d in dead] == \
        [("model", "model_error", q) for q in range(100, 400, 20)], dead[:3]  # the features record of each (s, t alternate)
    assert "too large" in dead[0]["error"], dead[0]["error"]
    assert explain.metrics.get("replayed_tasks") == 0 and model.metrics.get("replayed_events") == 0
    assert ref.predictions == run.predictions()
    assert ref.explanations == run.explanation_values()
