"""The soak benchmark's own parts (``tests/benchmarks/bench_soak.py``), without a broker: the
events it sends (every label accounted for, late ones exactly ``label_delay`` events late), its
flatness verdict on made-up rows, how it sums a topic's partitions on the broker's disk, and how
it asks a metrics page that does not answer again before it gives up."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_soak import soak_events, topic_bytes, verdict  # noqa: E402
from streamxai.schemas import FeatureEvent, LabelEvent  # noqa: E402

MB = 1024 * 1024


def test_half_the_streams_carry_their_labels_and_the_others_get_each_label_delay_events_later():
    sent = [0]
    msgs = list(soak_events(streams=4, per_stream=20, label_delay=3, sent=sent))
    assert sent[0] == 80
    seen: dict[str, list[int]] = {}
    for i, m in enumerate(msgs):
        if isinstance(m, FeatureEvent):
            seen.setdefault(m.stream_id, []).append(m.seq)
            late = int(m.stream_id.rsplit("-", 1)[1]) % 2 == 1
            assert (m.y is None) == late, m
        else:
            assert isinstance(m, LabelEvent)
            later = seen[m.stream_id][-1] - m.seq  # the stream's events sent since this label's event
            assert later == 3 or m.seq >= 20 - 3, (i, m)  # the last three come at the end
    assert all(seqs == list(range(20)) for seqs in seen.values())
    labels = sorted((m.stream_id, m.seq) for m in msgs if isinstance(m, LabelEvent))
    assert labels == sorted((f"soak-{s}", q) for s in (1, 3) for q in range(20))


def _args(**over) -> argparse.Namespace:
    base = dict(warmup=200_000, every=100_000, max_rss_growth=4.0, max_rate_drop=0.2)
    base.update(over)
    return argparse.Namespace(**base)


def _rows(rss_mb, cpu_rates) -> list[dict]:
    return [{"events": (i + 1) * 100_000, "rss": r * MB, "rate": c / 4, "cpu_rate": c, "checkpoint_bytes": 10 * MB,
             "checkpoint_max": 400_000, "checkpoint_files": 61, "topics": {"arrivals": (i + 1) * 30 * MB}}
            for i, (r, c) in enumerate(zip(rss_mb, cpu_rates, strict=True))]


def test_flat_rows_are_flat_and_the_topics_growth_is_reported_per_100000_events():
    rows = _rows([150, 190, 200, 201, 199, 200, 202, 200, 201, 200], [300, 250, 240, 245, 238, 242, 240, 236, 244, 241])
    ok, lines, figures = verdict(rows, _args())
    assert ok, lines
    after = rows[1:]  # from the warm-up's end on
    expected = statistics.linear_regression([r["events"] / 100_000 for r in after], [r["rss"] / MB for r in after])
    assert figures["rss_base"] == 190 and abs(figures["rss_slope"] - expected.slope) < 1e-9
    assert "arrivals 30.0 MB" in lines[-1]


def test_memory_that_keeps_growing_after_the_warm_up_is_not_flat():
    # 6 MB per 100,000 events: 60 bytes an event, a small object kept per event
    rows = _rows([150 + 6 * i for i in range(10)], [250] * 10)
    ok, lines, figures = verdict(rows, _args())
    assert not ok and lines[0].endswith("NOT FLAT")
    assert abs(figures["rss_slope"] - 6.0) < 1e-9


def test_throughput_that_falls_after_the_warm_up_is_not_flat():
    rows = _rows([200] * 10, [250, 250, 250, 250, 240, 230, 220, 200, 180, 170])
    ok, lines, _ = verdict(rows, _args())
    assert not ok and lines[1].endswith("NOT FLAT") and lines[0].endswith("-> flat")


def test_too_few_rows_after_the_warm_up_give_no_verdict():
    ok, lines, figures = verdict(_rows([200, 200, 200], [250] * 3), _args())
    assert not ok and figures == {} and "too few rows" in lines[0]


def test_a_topics_partitions_are_summed_and_other_topics_left_out(tmp_path):
    for name, size in (("p.arrivals-0", 5000), ("p.arrivals-1", 3000), ("p.explain-tasks-0", 4096), ("q.arrivals-0", 9999)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "00000000000000000000.log").write_bytes(b"x" * size)
    found = topic_bytes(tmp_path, "p.")
    assert set(found) == {"arrivals", "explain-tasks"}
    # bytes on disk: whole blocks, at least the bytes written
    assert found["arrivals"] >= 8000 and found["explain-tasks"] >= 4096


def test_memory_the_models_took_at_a_peak_between_rows_is_theirs():
    # the RSS keeps a step of 40 MB the models took at a drift and gave back before the next row
    rows = _rows([150, 160, 160, 200, 200, 200, 200, 200, 200, 200], [250] * 10)
    for i, r in enumerate(rows):
        r["models"] = 10 * MB
        r["models_peak"] = (10 if i < 3 else 50) * MB
    ok, lines, figures = verdict(rows, _args())
    assert ok, lines
    assert lines[0].startswith("flat memory: RSS less the models high-water mark") and abs(figures["rss_slope"]) < 1e-9
    assert "at most 50.0 MB in between" in lines[1]
    for r in rows:  # without the mark, the step is the worker's own
        r.pop("models_peak")
    assert not verdict(rows, _args())[0]


def test_memory_that_grows_with_the_models_alone_is_flat_and_the_models_growth_is_reported():
    # the trees grow 6 MB per 100,000 events by design; the worker's own memory stays put
    rows = _rows([150 + 6 * i for i in range(10)], [250] * 10)
    for i, r in enumerate(rows):
        r["models"] = (10 + 6 * i) * MB
    ok, lines, figures = verdict(rows, _args())
    assert ok, lines
    assert lines[0].startswith("flat memory: RSS less the models high-water mark")
    assert abs(figures["rss_slope"]) < 1e-9
    assert abs(figures["models_slope"] - 6.0) < 1e-9 and abs(figures["raw_slope"] - 6.0) < 1e-9
    assert "the models, every copy the worker holds: +6.00 MB per 100000 events" in lines[1]


def test_the_models_memory_is_each_streams_default_model_after_the_events_it_learned():
    from bench_soak import model_bytes, stream_events
    from streamxai.modelspec import build_model
    from streamxai.settings import AGRAWAL_FEATURES, Settings

    s = Settings(features=list(AGRAWAL_FEATURES))
    rows = [{"events": 60}, {"events": 120}]
    got = [now for now, _ in model_bytes(rows, streams=2, per_stream=80, label_delay=10)]
    want = []
    for per in (30, 60):  # the row's events over 2 streams; stream 1's labels are 10 events behind
        total = 0
        for i, learned in ((0, per), (1, per - 10)):
            m = build_model(s.model, s.model_params, s.model_seed)
            for ev in list(stream_events(i, 80))[:learned]:
                m.learn_one({f: ev.x[f] for f in AGRAWAL_FEATURES}, ev.y)
            total += (1 + s.explain_groups) * m._raw_memory_usage
        want.append(total)
    # river's measure counts the objects a model reaches, some of them shared with what the process
    # made before (cached strings, small ints): the same tree measures a few bytes apart
    assert all(abs(g - w) <= 1e-3 * w for g, w in zip(got, want, strict=True)), (got, want)
    assert got[0] < got[1]


def test_the_models_high_water_mark_keeps_a_peak_between_rows(monkeypatch):
    """A Hoeffding adaptive tree grows alternate subtrees at a drift and drops them later: the
    peak falls between rows, and the process keeps its memory, so the mark keeps it too."""
    import bench_soak

    class Grows:  # memory 1 per event learned, 50 extra from the 20th to the 29th event
        def __init__(self):
            self.n = 0

        def learn_one(self, x, y):
            self.n += 1

        @property
        def _raw_memory_usage(self):
            return self.n + (50 if 20 <= self.n < 30 else 0)

    monkeypatch.setattr(bench_soak, "build_model", lambda *a: Grows())
    copies = 2  # the model stage's and one explain group's
    rows = [{"events": 20}, {"events": 70}, {"events": 80}]  # over 2 streams: 10, 35, 40 events each
    got = bench_soak.model_bytes(rows, streams=2, per_stream=50, label_delay=0, step=5)
    assert [now for now, _ in got] == [copies * 2 * n for n in (10, 35, 40)]
    # the rows saw 10, 35 and 40 events learned; the 5-event steps saw 20 and 25 (50 more a stream)
    assert [peak for _, peak in got] == [copies * 2 * 10, copies * 2 * (25 + 50), copies * 2 * (25 + 50)]


def _soak_with_page(monkeypatch, answers: list, stall_limit: float):
    """A Soak whose metrics page gives ``answers`` in turn (an exception is raised), its worker
    this process (alive), no waiting between asks."""
    import bench_soak

    asks = iter(answers)

    def page(_s, timeout):
        a = next(asks)
        if isinstance(a, BaseException):
            raise a
        return a

    monkeypatch.setattr(bench_soak, "worker_metrics", page)
    monkeypatch.setattr(bench_soak.time, "sleep", lambda _s: None)
    soak = object.__new__(bench_soak.Soak)
    soak.s, soak.pid, soak.stall_limit = None, os.getpid(), stall_limit
    soak.page_wait, soak.page_unanswered = 0.0, 0
    return soak


def test_an_unanswered_metrics_page_is_asked_again_and_counted_for_the_next_row(monkeypatch):
    soak = _soak_with_page(monkeypatch, [TimeoutError("timed out"), ConnectionResetError("reset"),
                                         {"counters": {"predictions": 7}}], stall_limit=600)
    assert soak.done() == 7
    assert soak.page_unanswered == 2


def test_a_metrics_page_unanswered_past_the_stall_limit_fails_the_soak(monkeypatch):
    soak = _soak_with_page(monkeypatch, [TimeoutError("timed out")] * 3, stall_limit=0.0)
    with pytest.raises(RuntimeError, match="has not answered for 0 s"):
        soak.done()
    assert soak.page_unanswered == 1


def test_a_worker_that_exited_fails_the_soak_at_once(monkeypatch):
    soak = _soak_with_page(monkeypatch, [ConnectionRefusedError("refused")], stall_limit=600)
    soak.pid = 2 ** 22 + 1  # above Linux's pid_max: no such process
    with pytest.raises(RuntimeError, match="exited"):
        soak.done()


def test_the_results_file_gives_the_sizing_page_a_row_per_100000_events_and_the_verdict(tmp_path, monkeypatch):
    import importlib.util

    import bench_soak

    rows = _rows([150, 190, 200, 201, 199], [300, 250, 240, 245, 238])
    for r in rows:
        r["models"], r["models_peak"] = 20 * MB, 25 * MB
    args = _args(events=500_000, streams=10, label_delay=300)
    ok, _, figures = verdict(rows, args)
    monkeypatch.setattr(sys, "argv", ["tests/benchmarks/bench_soak.py"])
    bench_soak.write(str(tmp_path / "bench_soak.json"), rows, figures, args, ok)
    hooks = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "generated.py"
    spec = importlib.util.spec_from_file_location("docs_generated", hooks)
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.sizing_soak_md(tmp_path)
    assert page.startswith("Soak: one worker at default settings, 500,000 agrawal events") and "flat after 200,000" in page
    assert ("| case | worker RSS (MB) | models (every copy) (MB) | models' high-water mark (MB) | RSS less that mark (MB) "
            "| checkpoints (MB) | events per CPU second (events/cpu-s) |") in page
    assert "| 200,000 events | 190 | 20 | 25 | 165 | 10 |  |" in page  # the warm-up's end: no interval before it
    assert "| 500,000 events | 199 | 20 | 25 | 174 | 10 | 238 |" in page
    assert "300,000" in page and "100,000 events |" not in page
