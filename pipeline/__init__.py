"""streamxai: live, model-agnostic explanations of online river models, in a notebook or on Kafka.

Here the importance of each feature of a Hoeffding tree learning river's phishing stream, each
event explained before the model learns it:

>>> from river import datasets, tree
>>> import streamxai
>>> model = tree.HoeffdingTreeClassifier()
>>> ipfi = streamxai.IPFI(model, "zero_one", ["popup_window", "https", "long_url", "age_of_domain",
...     "ip_in_url", "is_popular", "empty_server_form_handler", "request_from_other_domain",
...     "anchor_from_other_domain"], alpha=0.01, seed=1)
>>> for x, y in datasets.Phishing():
...     importance = ipfi.explain_one(x, y)
...     model.learn_one(x, y)
>>> top = max(importance, key=importance.get)
>>> top, round(importance[top], 2), ipfi.n_explained
('empty_server_form_handler', 0.32, 1249)

:class:`LocalShapley` explains one prediction, :class:`StreamExplainer` runs several
explainers over one stream's model and :class:`StreamChangeDetector` watches their values for
change, as the Kafka workers do. The names load on first use, so ``import streamxai`` stays
cheap for the command line and the workers.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS = {
    "IPFI": "streamxai.core.explainers",
    "ISAGE": "streamxai.core.explainers",
    "IPDP": "streamxai.core.explainers",
    "LocalShapley": "streamxai.core.attribution",
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
