"""Build a stream's model from settings: an import path, keyword arguments and a seed.

Every worker builds the same model from the same spec, so replicas fed the same events
in the same order stay identical (tests/unit/test_replicas.py proves it for the models
we ship examples for).

>>> m = build_model("river.linear_model.LogisticRegression", {})
>>> type(m).__name__
'LogisticRegression'
>>> build_model("river.nope.Model", {})
Traceback (most recent call last):
...
schemas.errors.ConfigError: model 'river.nope.Model' cannot be imported: No module named 'river.nope'; give a full import path such as river.forest.ARFClassifier
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any

from schemas import ConfigError

__all__ = ["build_model", "model_factory"]


def _resolve(path: str) -> Any:
    module, _, name = path.rpartition(".")
    if not module:
        raise ConfigError(f"model {path!r} is not an import path such as river.forest.ARFClassifier")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ConfigError(
            f"model {path!r} cannot be imported: {e}; give a full import path such as "
            "river.forest.ARFClassifier"
        ) from None


def build_model(path: str, params: dict[str, Any], seed: int | None = None) -> Any:
    """``path(**params)``, with ``seed=seed`` added when the constructor takes a seed."""
    cls = _resolve(path)
    kwargs = dict(params)
    if seed is not None and "seed" not in kwargs:
        try:
            if "seed" in inspect.signature(cls).parameters:
                kwargs["seed"] = seed
        except (TypeError, ValueError):
            pass
    try:
        model = cls(**kwargs)
    except TypeError as e:
        raise ConfigError(f"model {path} rejected its parameters {sorted(kwargs)}: {e}") from None
    if not hasattr(model, "learn_one"):
        raise ConfigError(f"model {path} has no learn_one; streamxai explains online (river) models")
    return model


def model_factory(path: str, params: dict[str, Any], seed: int | None = None) -> functools.partial:
    """A picklable zero-argument callable that builds a fresh model; checked once now."""
    build_model(path, params, seed)
    return functools.partial(build_model, path, dict(params), seed)
