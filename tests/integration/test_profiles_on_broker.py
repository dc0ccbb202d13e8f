"""Two stream profiles on one worker through a real broker (``two_profiles_run``, once per session): each
stream as the handlers give it in process; mismatched streams are dead letters saying why; metrics,
``tail`` and ``plot`` read both."""

from __future__ import annotations

import base64
import json
import re

import orjson
from helpers.streams import LINEAR_FEATURES
from prometheus_client.parser import text_string_to_metric_families
from streamxai.cli import main
from streamxai.metrics import TOP_LEVEL
from streamxai.settings import AGRAWAL_FEATURES

FEATURES = {"agr-1": set(AGRAWAL_FEATURES), "reg-1": set(LINEAR_FEATURES)}


def _values(msgs):
    return {(m["stream_id"], m["seq"], m["explainer"], m["feature"]): m["value"] for m in msgs}


def _changes(msgs):
    return {(c["stream_id"], c["seq"], c["explainer"], c["feature"]): (c["cut_seq"], c["level_before"], c["level_after"])
            for c in msgs}


def test_two_profiles_side_by_side_each_explained_with_its_own_features_and_change_events(two_profiles_run):
    r = two_profiles_run
    got, want = r.got, r.want
    series = {sid: {(m["explainer"], m["feature"]) for m in got["explanations"] if m["stream_id"] == sid}
              for sid in FEATURES}
    assert series["agr-1"] == {(e, f) for e in ("ipfi", "ipdp") for f in AGRAWAL_FEATURES}
    assert series["reg-1"] == {(e, f) for e in ("ipfi", "isage") for f in LINEAR_FEATURES}
    # through Kafka, value for value what the handlers give in process with each profile's settings
    assert _values(got["explanations"]) == _values(want["explanations"])
    preds = {sid: [p for p in got["predictions"] if p["stream_id"] == sid] for sid in FEATURES}
    assert len(preds["agr-1"]) == len(preds["reg-1"]) == r.n
    # labels (None before the tree learnt anything) and numbers
    assert {p["y_pred"] for p in preds["agr-1"]} <= {0, 1, None} and len({p["y_pred"] for p in preds["reg-1"]}) > 100
    # change events on both streams, change for change as in process, none before the drift
    assert _changes(got["drift-events"]) == _changes(want["drift-events"])
    assert {c["stream_id"] for c in got["drift-events"]} == {"agr-1", "reg-1"}
    assert min(c["seq"] for c in got["drift-events"]) >= r.drift_at
    # the first episode of each stream that names features (not the model's loss alone) names
    # those whose role the drift changed: agrawal function 0 (age) -> 2 (age and elevel);
    # 3 x0 + x1 -> 3 x2 + x3
    first = {}
    for e in sorted(got["change-episodes"], key=lambda e: e["first_seq"]):
        named = {c["feature"] for c in e["changes"] if c["explainer"] != "model"}
        if named:
            first.setdefault(e["stream_id"], named)
    assert first["agr-1"] and first["agr-1"] <= {"age", "elevel"}, first
    assert first["reg-1"] and first["reg-1"] <= {"x0", "x1", "x2", "x3"}, first


def test_streams_of_other_features_or_no_profile_are_dead_letters_that_say_why(two_profiles_run):
    r = two_profiles_run
    letters = {orjson.loads(base64.b64decode(d["original"]))["stream_id"]: d for d in r.got["dead-letters"]}
    assert set(letters) == {"agr-bad", "other-1"}
    bad, other = letters["agr-bad"], letters["other-1"]
    assert bad["reason"] == "features"
    assert "missing features ['commission', 'age', 'elevel', 'car', 'zipcode', 'hvalue', 'hyears', 'loan']" in bad["error"]
    assert "unexpected features ['x0']" in bad["error"] and 'the features of stream profile "agr-*"' in bad["error"]
    assert other["reason"] == "no_profile"
    assert "stream 'other-1' matches no stream profile (\"agr-*\", \"reg-*\")" in other["error"]
    # and the metrics count them by reason and profile, next to the events of both streams, by profile
    fams = {f.name: {tuple(sorted(s.labels.items())): s.value for s in f.samples}
            for f in text_string_to_metric_families(r.prometheus)}
    assert fams["streamxai_dead_letters"] == {(("profile", "agr-*"), ("reason", "features")): 1,
                                              (("profile", TOP_LEVEL), ("reason", "no_profile")): 1}
    assert fams["streamxai_predictions"][()] == 2 * r.n
    assert fams["streamxai_events_explained"] == {(("profile", "agr-*"),): r.n, (("profile", "reg-*"),): r.n,
                                                  (("profile", TOP_LEVEL),): 0}


def test_tail_and_plot_read_streams_of_different_features(two_profiles_run, tmp_path, capsys):
    s = two_profiles_run.settings
    common = ["--bootstrap", s.bootstrap_servers, "--set", f"topic_prefix={s.topic_prefix}"]
    assert main(["tail", "drift-events", "--from-beginning", "--idle", "3", *common]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == len(two_profiles_run.got["drift-events"])
    assert all(c["feature"] in FEATURES[c["stream_id"]] or c["series"].endswith("/model/loss") for c in lines)
    for sid, features in FEATURES.items():
        png, page = tmp_path / f"{sid}.png", tmp_path / f"{sid}.html"
        assert main(["plot", sid, "--out", str(png), "--html", str(page), "--idle", "2", *common]) == 0
        assert png.stat().st_size > 30_000
        ranked = {name for _, row in re.findall(r"<li><b>(\w+)</b>: (.*?)</li>", page.read_text())
                  for name in re.findall(r"(\w+) -?\d", row)}
        assert ranked and ranked - {"loss"} <= features, (sid, ranked)  # the model's loss, beside the features
