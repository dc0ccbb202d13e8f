"""A worker's Prometheus page on a real broker: the families the Grafana dashboard uses."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

from helpers.pipeline_runs import collect, make_settings, until, wait_for_commit
from helpers.streams import threshold_events
from prometheus_client.parser import text_string_to_metric_families
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events, produce_raw
from streamxai.metrics import LABELLED, TOP_LEVEL
from streamxai.worker import spawn_worker, stop_worker

GRAFANA = Path(__file__).resolve().parents[2] / "deploy" / "grafana-dashboard.json"


def _scrape(s) -> dict[str, list]:
    with urllib.request.urlopen(f"http://127.0.0.1:{s.web_port}/metrics", timeout=5) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_metrics_page_counts_topics_dead_letters_lag_and_checkpoints(bootstrap, tmp_path):
    s = make_settings(bootstrap, str(tmp_path / "state"), features=["a", "b", "c"], explainers=["ipfi"],
                      explain_groups=1, checkpoint_every=100)
    ensure_topics(s)
    worker = spawn_worker(s, log_file=str(tmp_path / "worker.log"), loglevel="warning")
    try:
        n = 300
        produce_events(s, threshold_events("m1", n, seed=3))
        produce_raw(s, s.topic("features"), [(b"m1", b"not json")])
        collect(s, "explanations", lambda ms: any(m["seq"] == n - 1 for m in ms))
        # the last dead letter may follow the last explanation and the lag gauges are set every 5 s: wait (bounded)
        # until everything is committed, then for a lag reading after that
        wait_for_commit(s, ["features", "arrivals", "explain-tasks"])

        def caught_up() -> dict | None:
            fams = _scrape(s)
            lags = [(smp.labels["topic"], smp.value) for smp in fams.get("streamxai_consumer_lag", [])]
            read = {t for t, _ in lags} >= {s.topic("features"), s.topic("explain-tasks")} and not any(v for _, v in lags)
            return fams if read and "streamxai_checkpoint_age_seconds" in fams else None

        fams = until(caught_up, 30, "a consumer lag reading after the stream was taken (the timer runs every 5 s)")
    finally:
        stop_worker(worker)
    by = {name: {tuple(sorted(smp.labels.items())): smp.value for smp in samples} for name, samples in fams.items()}
    assert by["streamxai_messages_in"][(("topic", s.topic("features")),)] == n + 1
    assert by["streamxai_messages_out"][(("topic", s.topic("predictions")),)] == n  # sent, counted by topic
    assert by["streamxai_dead_letters"][(("profile", TOP_LEVEL), ("reason", "malformed"))] == 1
    assert by["streamxai_events_explained"][(("profile", TOP_LEVEL),)] == n
    lags = by["streamxai_consumer_lag"]
    assert {dict(k)["topic"] for k in lags} >= {s.topic("features"), s.topic("explain-tasks")}
    assert all(v == 0 for v in lags.values())  # everything was processed before the scrape
    assert by["streamxai_explanation_lag_events"][()] == 0
    assert 0 <= by["streamxai_checkpoint_age_seconds"][()] < 120
    # every metric the Grafana dashboard queries exists on a worker
    exprs = " ".join(t["expr"] for p in json.loads(GRAFANA.read_text())["panels"] for t in p.get("targets", []))
    used = {w for w in exprs.replace("(", " ").replace("{", " ").split() if w.startswith("streamxai_")}
    exposed = set()
    for name, samples in fams.items():
        exposed |= {smp.name for smp in samples} | {name}
    # labelled counters (send errors by topic, ...) only appear once something happened; they must
    # still be names the workers know
    labelled = {f"streamxai_{n}_total" for n in LABELLED}
    assert used and used <= exposed | labelled, used - exposed
    # every label a query groups or filters by is one its metric carries (a panel grouping by a
    # label the metric lacks draws one unlabelled line, silently)
    carried = {smp.name: set(smp.labels) for samples in fams.values() for smp in samples}
    for by, name, where in re.findall(r"by \(([\w, ]+)\) \(\w+\((streamxai_\w+)\{([^}]*)\}", exprs):
        wanted = ({w.strip() for w in by.split(",")} | set(re.findall(r"(\w+)=~?\"", where))) - {"job"}
        assert wanted <= carried.get(name, wanted), (name, wanted - carried.get(name, set()))
    # an operator pages on change episodes of the alert kinds: the dashboard shows them apart
    # (not one line of all episodes, learning ones too)
    assert re.search(r"by \(profile, kind, alert\) \(rate\(streamxai_change_episodes_total", exprs), exprs
    assert re.search(r'streamxai_change_episodes_total\{job=~"\$job", profile=~"\$profile", alert="true"\}', exprs), exprs
