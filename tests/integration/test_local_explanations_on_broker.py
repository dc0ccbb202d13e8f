"""A worker with ``local`` on, on a real broker: every explained prediction gets one local
explanation of the model version that made it, equal to the in-process reference, summing to the
prediction minus the base value."""

from __future__ import annotations

from helpers.pipeline_runs import collect, make_settings
from streamxai.core.attribution import attribute
from streamxai.core.explainers import ISAGE
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.demo_stream import agrawal_events
from streamxai.plan import stream_explainer
from streamxai.worker import spawn_worker, stop_worker


def test_a_worker_sends_each_prediction_s_local_explanation(bootstrap, tmp_path):
    s = make_settings(bootstrap, str(tmp_path / "state"), local=True, explain_groups=2)
    events = list(agrawal_events("why", 200, seed=7))
    se = stream_explainer(s, "why")
    isage = next(e for e in se.explainers if isinstance(e, ISAGE))
    want = {}
    for ev in events:
        want[ev.seq] = attribute(se.model, ev.x, isage.removal_state.reservoir.items or [ev.x], s.features)
        se.process_one(ev.x, ev.y)
    ensure_topics(s)
    proc = spawn_worker(s, log_file=str(tmp_path / "worker.log"), loglevel="warning")
    try:
        produce_events(s, events)
        got = collect(s, "local-explanations", lambda ms: len({m["seq"] for m in ms}) >= len(events))
    finally:
        stop_worker(proc)
    by_seq = {m["seq"]: m for m in got}
    assert sorted(by_seq) == [ev.seq for ev in events]
    for seq, m in by_seq.items():
        assert m["model_version"] == seq and m["exact"] and m["method"] == "tree"
        assert m["values"] == want[seq].values and m["base"] == want[seq].base
        assert abs(sum(m["values"].values()) - (m["prediction"] - m["base"])) < 1e-9
    assert "Traceback" not in (tmp_path / "worker.log").read_text(errors="replace")
