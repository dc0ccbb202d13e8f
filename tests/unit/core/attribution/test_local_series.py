"""The local change series: each report is every feature's mean absolute attribution over the
window's predictions, with the block of those values, checked against the attributions one by one."""

from __future__ import annotations

import numpy as np
import pytest
from river import tree
from streamxai.core.attribution import LocalShapley
from streamxai.core.attribution.series import LOCAL, LocalSeries
from streamxai.local.demo_stream import agrawal_events
from streamxai.settings import AGRAWAL_FEATURES


def test_reports_hold_the_mean_absolute_attribution_of_their_window():
    features = list(AGRAWAL_FEATURES)
    model = tree.HoeffdingTreeClassifier(grace_period=50)
    local, series = LocalShapley(model, features, storage_size=30, seed=2), LocalSeries(features, emit_every=7)
    window, reports, last = [], 0, []
    for ev in agrawal_events("s", 300, seed=6):
        values = local.explain_one(ev.x)
        window.append([values[f] for f in features])
        report = series.add(values)
        local.learn_one(ev.x)
        model.learn_one(ev.x, ev.y)
        if len(window) < 7:
            assert report == []
            continue
        phi = np.abs(np.array(window))
        assert [v.feature for v in report] == features and {v.explainer for v in report} == {LOCAL}
        for v, col in zip(report, phi.T, strict=True):
            assert v.value == pytest.approx(col.mean(), rel=1e-12, abs=1e-15) and v.value == v.block.mean
            assert v.block.n == 7 and v.block.m2 == pytest.approx(((col - col.mean()) ** 2).sum(), rel=1e-9, abs=1e-15)
            assert v.n_explained == series.n_explained
        window, reports, last = [], reports + 1, report
    assert reports == 300 // 7
    assert series.n_explained == 300 and local.method == "tree"
    assert max(v.value for v in last) > 0  # the tree has split by the end
