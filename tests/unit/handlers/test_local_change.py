"""With ``local_change`` each feature's mean absolute local attribution per ``emit_every`` goes out as explainer
``local`` and the change detector watches it; off by default; a replayed group gathers it as it was."""

from __future__ import annotations

import orjson
import pytest
from helpers.handler_inputs import run_handlers, settings
from streamxai.handlers import ExplainHandler, ModelHandler, Source
from streamxai.local.demo_stream import agrawal_events
from streamxai.schemas import ConfigError, dumps, unpack_feed


@pytest.mark.parametrize("groups", [1, 3])
def test_each_report_is_the_mean_absolute_attribution_of_its_window_and_the_detector_takes_it(groups):
    s = settings(local=True, local_change=True, explain_groups=groups, change_warmup=0)
    events = list(agrawal_events("a", 120, seed=4))
    handlers: dict = {}
    got = run_handlers(s, events, handlers)
    local = {m["seq"]: m["values"] for m in got["local-explanations"]}
    seqs = sorted(local)
    assert seqs == [ev.seq for ev in events]
    feed = [m for m in got["drift-feed"] if m["explainer"] == "local"]
    public = [m for m in got["explanations"] if m["explainer"] == "local"]
    assert feed == public
    k = s.emit_every
    reports = seqs[k - 1::k]
    assert [m["seq"] for m in feed] == [q for q in reports for _ in s.features]
    for m in feed:
        i = reports.index(m["seq"])
        window = [abs(local[q][m["feature"]]) for q in seqs[i * k:(i + 1) * k]]
        assert m["value"] == pytest.approx(sum(window) / k, rel=1e-12, abs=1e-15)
        assert m["block"]["n"] == k and m["n_explained"] == (i + 1) * k
    assert any(m["value"] > 0 for m in feed)  # the tree uses some feature by then
    det = handlers["change"].streams["a"].detector
    assert all(det.last_seq("local", f) == reports[-1] for f in s.features)
    assert det.level("local", s.features[0]) is not None


def test_off_by_default_no_series_and_no_detector_series():
    events = list(agrawal_events("a", 60, seed=4))
    handlers: dict = {}
    got = run_handlers(settings(local=True), events, handlers)
    assert got["local-explanations"]
    assert not [m for m in got["drift-feed"] + got["explanations"] if m["explainer"] == "local"]
    assert not handlers["change"].streams["a"].detector.knows("local", "age")
    with pytest.raises(ConfigError, match="local_change=true .* needs local=true"):
        settings(local_change=True)


def test_a_group_rebuilt_by_replay_reports_the_series_of_an_uninterrupted_one():
    s = settings(local=True, local_change=True, explain_groups=1)
    events = list(agrawal_events("r", 120, seed=3))
    tasks: dict[int, list[tuple[bytes | None, bytes]]] = {}
    model = ModelHandler(s)
    for off, ev in enumerate(events):
        for o in model.on_message(dumps(ev), ev.stream_id.encode(), Source("features", 0, off)):
            if o.topic == "explain-tasks":
                tasks.setdefault(o.partition, []).append((o.key, o.value))

    def history(topic, partition, before_offset, key, from_offset=0):
        return (v for k, v in tasks.get(partition, [])[from_offset:before_offset] if k == key)

    def series(handler_for):
        out = []
        for p, msgs in sorted(tasks.items()):
            for off, (key, value) in enumerate(msgs):
                for o in handler_for(off).on_message(value, key, Source("explain-tasks", p, off)):
                    if o.topic == "drift-feed":
                        docs = unpack_feed(o.value, Source("drift-feed", 0, 0, headers=o.headers))
                        out += [m for m in map(orjson.loads, docs) if m["explainer"] == "local"]
        return out

    whole = ExplainHandler(s)
    first, second = ExplainHandler(s), ExplainHandler(s, history=history)
    want = series(lambda off: whole)
    got = series(lambda off: first if off < 62 else second)  # the first dies in the middle of a window
    assert second.metrics.get("replayed_tasks") == 62
    assert len(want) == len(s.features) * len(events) // s.emit_every
    assert got == want
