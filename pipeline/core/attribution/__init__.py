"""Local attributions: each feature's interventional Shapley value for one prediction.

Against the stream's recent feature values as background, the values sum to ``f(x)`` minus the
mean prediction over the background; exact for river's trees, ARF, linear and logistic
regression (:func:`attribute`), sampled with standard errors otherwise.

>>> from river import linear_model
>>> model = linear_model.LinearRegression()
>>> for i in range(50):
...     model.learn_one({"a": i % 5, "b": i % 3}, 2.0 * (i % 5))
>>> out = attribute(model, {"a": 4, "b": 0}, [{"a": 0, "b": 1}, {"a": 2, "b": 2}], ["a", "b"])
>>> out.method, round(sum(out.values.values()) + out.base - out.prediction, 12)
('linear', 0.0)
"""

from .attribute import METHODS, Attribution, attribute
from .coalitions import brute_force
from .explainer import LocalShapley
from .sampling import permutation_shapley
from .top import top_k

__all__ = ["Attribution", "LocalShapley", "attribute", "brute_force", "permutation_shapley", "top_k", "METHODS"]
