"""A stream whose importance moves from ``a`` to ``b`` at 700, through the model and explain handlers: its tasks,
public explanations and drift-feed records."""

from __future__ import annotations

from streamxai.handlers import ExplainHandler, ModelHandler, Source
from streamxai.schemas import dumps
from streamxai.settings import Settings

from helpers.partition_log import PartitionLog
from helpers.streams import threshold_events

FEED = "drift-feed"


def feed_settings(**over) -> Settings:
    """Settings under which that stream's change is found within 1,600 events (one explainer, one group)."""
    base = dict(features=["a", "b", "c"], explainers=["ipfi"], model="river.tree.HoeffdingAdaptiveTreeClassifier",
                model_params={"grace_period": 20}, emit_every=10, explain_groups=1, alpha=0.01, change_warmup=300,
                change_episode_gap=300)
    base.update(over)
    return Settings(**base)


def tasks_of(s: Settings, n: int = 1600) -> PartitionLog:
    """The explain tasks of the stream ``f`` (the model handler's, on explain-tasks[0])."""
    log, mh = PartitionLog(), ModelHandler(s)
    for off, ev in enumerate(threshold_events("f", n, drift_at=700, seed=11)):
        for o in mh.on_message(dumps(ev), b"f", Source("features", 0, off)):
            if o.topic == "explain-tasks":
                log.append("explain-tasks", 0, o.key, o.value, headers=o.headers)
    return log


def explain(handler: ExplainHandler, tasks: PartitionLog, offsets, feed: PartitionLog, public: list,
            cut: tuple[int, str] | None = None) -> None:
    """The explain agent over ``offsets``, appending to ``feed`` and ``public``; ``cut = (offset, where)`` kills it
    ``between`` that task's public messages and its record, or ``after`` it."""
    for off in offsets:
        src = tasks.source("explain-tasks", 0, off)
        key, value, _, _ = tasks.parts[("explain-tasks", 0)][off]
        handler.needs_recovery(key, src)
        for o in handler.on_message(value, key, src):
            if o.topic == FEED:
                if cut == (off, "between"):
                    return
                feed.append(FEED, 0, o.key, o.value, headers=o.headers)
            elif o.topic == "explanations":
                public.append(o.value)
        if cut is not None and cut[0] == off:
            return
