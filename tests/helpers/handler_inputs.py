"""Inputs for the handler tests (no Kafka): settings small enough for quick runs and
``explanation/v2`` payloads built from plain numbers.

>>> s = drift_settings()
>>> s.explainers, s.explain_groups, s.drift_warmup
(['ipfi'], 3, 0)
>>> raw = explanation_v2("s", "ipfi", "age", 9, 0.1, (10, 0.1, 0.0), 10)
>>> b'"block":{"n":10,"mean":0.1,"m2":0.0}' in raw
True
"""

from __future__ import annotations

from pipeline.settings import Settings
from schemas import dumps_obj

__all__ = ["settings", "drift_settings", "explanation_v2"]


def settings(**over) -> Settings:
    """A Hoeffding tree explained in 3 groups over 3 partitions, with small storages and grids."""
    base = dict(model="river.tree.HoeffdingTreeClassifier", model_params={"grace_period": 50}, alpha=0.02,
                emit_every=5, explain_groups=3, storage_size=30, grid_size=4, partitions=3)
    base.update(over)
    return Settings(**base)


def drift_settings(**over) -> Settings:
    """:func:`settings` for the drift handler: iPFI only, watched from the first event."""
    return settings(explainers=["ipfi"], drift_warmup=0, drift_episode_gap=500, **over)


def explanation_v2(stream_id, explainer, feature, seq, value, block, n_explained, loss=None, curve=None) -> bytes:
    """An explanation/v2 payload (block and model_loss as ``(n, mean, m2)``)."""

    def mom(b):
        return None if b is None else {"n": b[0], "mean": b[1], "m2": b[2]}

    return dumps_obj({"schema": "explanation/v2", "stream_id": stream_id, "explainer": explainer, "feature": feature,
                      "value": value, "seq": seq, "n_explained": n_explained, "n_seen": seq + 1,
                      "model_version": seq, "curve": curve, "stderr": None, "block": mom(block),
                      "model_loss": mom(loss)})
