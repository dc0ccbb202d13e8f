"""Local attributions as change series: each feature's mean absolute attribution per report.

:class:`LocalSeries` adds ``|phi_f|`` of each explained prediction's features to a block of
increments and, every ``emit_every`` predictions, reports one
:class:`~streamxai.core.stream.ExplanationValue` per feature of explainer ``"local"``: the mean
``|phi_f|`` over those predictions, with their block.

>>> series = LocalSeries(["a", "b"], emit_every=2)
>>> series.add({"a": 0.5, "b": -0.25})
[]
>>> [(v.explainer, v.feature, v.value, v.n_explained, v.block) for v in series.add({"a": -0.25, "b": 0.25})]
[('local', 'a', 0.375, 2, Block(n=2, mean=0.375, m2=0.03125)), ('local', 'b', 0.25, 2, Block(n=2, mean=0.25, m2=0.0))]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..base import Component, check_positive_int
from ..increments import IncrementTracker
from ..stream import ExplanationValue

__all__ = ["LOCAL", "LocalSeries"]

#: the explainer name of the series in explanation values, the drift feed and change events
LOCAL = "local"


class LocalSeries(Component):
    """Each feature's mean absolute local attribution over every ``emit_every`` explained
    predictions, each carrying a value for every one of ``feature_names``."""

    def __init__(self, feature_names: Sequence[str], emit_every: int = 1):
        self.feature_names = list(feature_names)
        self.emit_every = check_positive_int(emit_every, "emit_every", " (explained predictions between two reports)")
        self._reset()

    def _reset(self) -> None:
        self._increments = IncrementTracker(self.feature_names)
        self.n_explained = 0

    def add(self, values: Mapping[str, float]) -> list[ExplanationValue]:
        """Fold in one prediction's attributions (a value for every feature); the report of the
        window it completes (one value per feature), else nothing."""
        names = self.feature_names
        self._increments.add_all(names, [abs(float(values[f])) for f in names])
        self.n_explained += 1
        if self.n_explained % self.emit_every:
            return []
        n = self.n_explained
        return [ExplanationValue(LOCAL, f, b.mean, n, None, b, None, None, n)
                for f, b in self._increments.take().items()]
