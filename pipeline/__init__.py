"""streamxai: live, model-agnostic explanations of online river models, in a notebook or on Kafka.
The names here load on first use, so ``import streamxai`` stays cheap for the command line and
the workers, which import the modules they need (``streamxai.core``, ``streamxai.kafka``, ...).

>>> import streamxai
>>> streamxai.IPFI.__name__, streamxai.StreamExplainer.__module__
('IPFI', 'streamxai.core.stream')
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS = {
    "IPFI": "streamxai.core.explainers",
    "ISAGE": "streamxai.core.explainers",
    "IPDP": "streamxai.core.explainers",
    "ModelFunction": "streamxai.core.model",
    "ExplainerSpec": "streamxai.core.stream",
    "StreamExplainer": "streamxai.core.stream",
    "StreamChangeDetector": "streamxai.core.change",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'streamxai' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
