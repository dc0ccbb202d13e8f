"""Inputs for the handler tests (no Kafka): small settings and ``explanation/v4`` payloads.

>>> s = change_settings()
>>> s.explainers, s.explain_groups, s.change_warmup
(['ipfi'], 3, 0)
>>> raw = explanation_msg("s", "ipfi", "age", 9, 0.1, (10, 0.1, 0.0), 10)
>>> b'"block":{"n":10,"mean":0.1,"m2":0.0}' in raw
True"""

from __future__ import annotations

import orjson
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler, Source
from streamxai.schemas import dumps, dumps_obj, unpack_feed
from streamxai.settings import AGRAWAL_FEATURES, Settings

__all__ = ["settings", "one_group_settings", "delayed_settings", "change_settings", "explanation_msg", "run_handlers"]


def settings(**over) -> Settings:
    """A Hoeffding tree of agrawal's features explained in 3 groups over 3 partitions, with small
    storages and grids."""
    base = dict(model="river.tree.HoeffdingTreeClassifier", model_params={"grace_period": 50}, alpha=0.02,
                features=list(AGRAWAL_FEATURES), emit_every=5, explain_groups=3, storage_size=30, grid_size=4, partitions=3)
    base.update(over)
    return Settings(**base)


def one_group_settings(**over) -> Settings:
    """:func:`settings` in one explain group on one partition, iPFI alone, with smaller storages and grids."""
    return settings(**{"explain_groups": 1, "storage_size": 20, "grid_size": 3, "partitions": 1, "explainers": ["ipfi"],
                       **over})


def delayed_settings(**over) -> Settings:
    """Three features, a tree learning them within a hundred events, every explainer, and a change test on
    iPFI and iSAGE reacting within short streams (a drifting threshold stream changes 3 to 4 times)."""
    base = dict(features=["a", "b", "c"], model_params={"grace_period": 20}, alpha=0.05,
                explainers=["ipfi", "isage", "ipdp"], change_explainers=["ipfi", "isage"],
                change_warmup=0, change_min_samples=30, change_episode_gap=100,
                emit_every=5, explain_groups=1, max_label_delay=40, partitions=3)
    base.update(over)
    return settings(**base)


def change_settings(**over) -> Settings:
    """:func:`settings` for the change handler: iPFI only, watched from the first event."""
    return settings(explainers=["ipfi"], change_warmup=0, change_episode_gap=500, **over)


def explanation_msg(stream_id, explainer, feature, seq, value, block, n_explained, loss=None, curve=None) -> bytes:
    """An explanation/v4 payload (block and model_loss as ``(n, mean, m2)``; labels in line, so its
    position is its seq)."""

    def mom(b):
        return None if b is None else {"n": b[0], "mean": b[1], "m2": b[2]}

    return dumps_obj({"schema": "explanation/v4", "stream_id": stream_id, "explainer": explainer, "feature": feature,
                      "value": value, "seq": seq, "n_explained": n_explained, "n_seen": seq + 1,
                      "model_version": seq, "curve": curve, "stderr": None, "block": mom(block),
                      "model_loss": mom(loss), "var_factor": None, "position": seq})


def run_handlers(s: Settings, events: list, handlers: dict | None = None) -> dict[str, list[dict]]:
    """Feature events (or raw bytes) through one worker's three handlers in process: every message sent, decoded,
    by topic (``handlers`` gets the handlers by stage)."""
    model, explain, change = ModelHandler(s), ExplainHandler(s), ChangeHandler(s)
    if handlers is not None:
        handlers.update(model=model, explain=explain, change=change)
    out: dict[str, list[dict]] = {}

    offsets: dict[str, int] = {}

    def send(handler, raw, key, src, then=None):
        for o in handler.on_message(raw, key, src):
            at = Source(o.topic, 0, offsets.setdefault(o.topic, 0), headers=o.headers)
            offsets[o.topic] += 1
            # a drift-feed record: each explanation it carries (the same as on explanations)
            out.setdefault(o.topic, []).extend(orjson.loads(v) for v in unpack_feed(o.value, at) or [o.value])
            if then is not None and o.topic == then[0]:
                send(then[1], o.value, o.key, at, then[2:] or None)

    for off, ev in enumerate(events):
        raw = ev if isinstance(ev, bytes) else dumps(ev)
        send(model, raw, orjson.loads(raw)["stream_id"].encode(), Source("features", 0, off),
             ("explain-tasks", explain, "drift-feed", change))
    return out
