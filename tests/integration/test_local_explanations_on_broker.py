"""``local`` on a real broker: each explained prediction gets one local explanation equal to the reference's,
summing to prediction minus base; ``local_change`` sends their means as explainer ``local``; ``tail`` and
``plot --local`` show them."""

from __future__ import annotations

import orjson
import pytest
from helpers.pipeline_runs import collect, make_settings
from streamxai.cli import main
from streamxai.core.attribution import attribute
from streamxai.core.explainers import ISAGE
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.demo_stream import agrawal_events
from streamxai.plan import stream_explainer
from streamxai.worker import spawn_worker, stop_worker


def test_a_worker_sends_each_prediction_s_local_explanation(bootstrap, tmp_path, capsys):
    s = make_settings(bootstrap, str(tmp_path / "state"), local=True, local_change=True, explain_groups=2)
    assert len(s.features) == 9
    events = list(agrawal_events("why", 200, seed=7))
    se = stream_explainer(s, "why")
    isage = next(e for e in se.explainers if isinstance(e, ISAGE))
    want = {}
    for ev in events:
        want[ev.seq] = attribute(se.current_model, ev.x, isage.removal_state.reservoir.items or [ev.x], s.features)
        se.process_one(ev.x, ev.y)
    ensure_topics(s)
    proc = spawn_worker(s, log_file=str(tmp_path / "worker.log"), loglevel="warning")
    try:
        produce_events(s, events)
        got = collect(s, "local-explanations", lambda ms: len({m["seq"] for m in ms}) >= len(events))
        n_series = len(events) // s.emit_every * len(s.features)
        series = collect(s, "explanations", lambda ms: sum(m["explainer"] == "local" for m in ms) >= n_series)
    finally:
        stop_worker(proc)
    by_seq = {m["seq"]: m for m in got}
    assert sorted(by_seq) == [ev.seq for ev in events]
    for seq, m in by_seq.items():
        assert m["model_version"] == seq and m["exact"] and m["method"] == "tree"
        assert m["values"] == want[seq].values and m["base"] == want[seq].base
        assert abs(sum(m["values"].values()) - (m["prediction"] - m["base"])) < 1e-9
    series = sorted((m["seq"], m["feature"], m["value"]) for m in series if m["explainer"] == "local")
    assert len(series) == n_series
    for seq, feature, value in series:
        window = [abs(by_seq[q]["values"][feature]) for q in range(seq - s.emit_every + 1, seq + 1)]
        assert value == pytest.approx(sum(window) / s.emit_every, rel=1e-12, abs=1e-15)
    assert "Traceback" not in (tmp_path / "worker.log").read_text(errors="replace")
    common = ["--bootstrap", bootstrap, "--set", f"topic_prefix={s.topic_prefix}"]
    _tail_shows_each_event(by_seq, common, capsys)
    _plot_draws_the_latest_or_a_chosen_event(s, by_seq, common, tmp_path, capsys)


def _tail_shows_each_event(by_seq, common, capsys):
    """One block per event: its seq and model version, the prediction, the base value, and the
    largest values by absolute value with the event's value of each feature."""
    from streamxai.local.waterfall import value_text

    capsys.readouterr()
    assert main(["tail", "local-explanations", "--from-beginning", "--idle", "1", "--top", "3", *common]) == 0
    blocks = [b for b in capsys.readouterr().out.split("\n\n") if b.strip()]
    assert len(blocks) == len(by_seq)
    for block in blocks:
        lines = block.splitlines()
        seq = int(lines[0].split("  seq ")[1].split()[0])
        m = by_seq[seq]
        assert f"model version {m['model_version']}" in lines[0]
        assert f"prediction {m['prediction']:.4f}" in lines[1] and f"base value {m['base']:.4f}" in lines[1]
        ordered = sorted(m["values"], key=lambda f: (-abs(m["values"][f]), f))
        for f, line in zip(ordered[:3], lines[3:6], strict=True):
            name, value, attribution = line.split()[:3]
            assert (name, value) == (f, value_text(m["x"][f]))
            assert float(attribution) == pytest.approx(m["values"][f], abs=5e-5)
        assert lines[6].split()[:3] == ["6", "other", "features"]
    capsys.readouterr()
    assert main(["tail", "local-explanations", "--from-beginning", "--idle", "1", "--max", "2", "--json", *common]) == 0
    first = orjson.loads(capsys.readouterr().out.splitlines()[0])
    assert first == {k: v for k, v in by_seq[first["seq"]].items() if k != "_partition"}  # the message as it is


def _plot_draws_the_latest_or_a_chosen_event(s, by_seq, common, tmp_path, capsys):
    from matplotlib import image as mpimg
    from streamxai.local.plot_local import bars, draw_waterfall, read_local
    from streamxai.local.waterfall import parse_local, waterfall

    latest = max(by_seq)
    for event, want in ((None, latest), ("120", 120)):
        local = read_local(s, "why", event, idle=1.0)
        assert local == parse_local(by_seq[want])
        drawn = bars(draw_waterfall(local))
        rows = waterfall(local)["rows"]
        assert [(b.get_x(), b.get_x() + b.get_width()) for b in drawn] == pytest.approx(
            [(r["start"], r["end"]) for r in rows], abs=1e-12)
        assert drawn[-1].get_x() == by_seq[want]["base"]
        assert drawn[0].get_x() + drawn[0].get_width() == pytest.approx(by_seq[want]["prediction"], abs=1e-9)
    capsys.readouterr()
    png = tmp_path / "why-120.png"
    assert main(["plot", "why", "--local", "--event", "120", "--out", str(png), "--idle", "1", *common]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {png} (stream why, seq 120: prediction ")
    assert mpimg.imread(png).shape[0] > 300
    assert main(["plot", "why", "--local", "--event", "nosuch", "--out", str(png), "--idle", "1", *common]) == 2
    err = capsys.readouterr().err
    assert "no local explanation of event 'nosuch'" in err and err.count("\n") == 1
