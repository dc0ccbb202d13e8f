"""Stream profiles give streams their own features, model and explainers; bad tables stop the worker with one
line; an unmatched or mismatched stream is a dead letter saying why."""

from __future__ import annotations

import tomllib

import orjson
import pytest
from helpers.handler_inputs import run_handlers
from helpers.streams import LINEAR_FEATURES, linear_events
from streamxai.cli import main
from streamxai.handlers import ChangeHandler, ModelHandler, Source
from streamxai.local.demo_stream import agrawal_events
from streamxai.plan import check_streams, stream_explainer
from streamxai.schemas import ConfigError, FeatureEvent, dumps
from streamxai.settings import AGRAWAL_FEATURES, PER_STREAM, Settings, is_per_stream, load_settings

REG = list(LINEAR_FEATURES)

TWO_PROFILES = f"""
change_warmup = 50

[streams."agr-*"]
features = {list(AGRAWAL_FEATURES)!r}
model = "river.tree.HoeffdingTreeClassifier"
model_params = {{grace_period = 50}}
explainers = ["ipfi", "ipdp"]
grid_size = 3

[streams."reg-*"]
features = {REG!r}
task = "regression"
output = "value"
loss = "squared"
model = "river.linear_model.LinearRegression"
model_params = {{}}
explainers = ["ipfi", "isage"]
alpha = 0.05
emit_every = 4

[streams."*"]
alpha = 0.5
""".replace("'", '"')


@pytest.fixture
def two(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(TWO_PROFILES)
    return f


# --- settings -------------------------------------------------------------------------------------

def test_first_matching_profile_wins_and_others_get_the_top_level(two):
    s = load_settings(two)
    agr, reg = s.for_stream("agr-1"), s.for_stream("reg-1")
    assert (agr.features, agr.model, agr.explainers) == (list(AGRAWAL_FEATURES), "river.tree.HoeffdingTreeClassifier",
                                                         ["ipfi", "ipdp"])
    assert (reg.features, reg.task, reg.model, reg.alpha) == (REG, "regression", "river.linear_model.LinearRegression", 0.05)
    assert s.for_stream("other").alpha == 0.5 and s.for_stream("other").features == []  # "*" matches the rest
    assert s.profile("reg-1") == "reg-*" and s.profile("agr-1") == "agr-*" and s.profile("z") == "*"
    assert agr.change_warmup == reg.change_warmup == 50  # not in the tables: the top level
    assert s.for_stream("agr-1") is s.for_stream("agr-2")  # one settings object per profile
    no_star = Settings(streams={"reg-*": {"features": REG}})
    assert no_star.for_stream("nothing") is no_star


def test_a_profile_value_beats_the_top_level_from_every_source(two, monkeypatch):
    # alpha: top level from the file, environment and command line; reg-* sets its own
    s = load_settings(two, env={"STREAMXAI_ALPHA": "0.02", "STREAMXAI_GRID_SIZE": "7"}, alpha="0.03")
    reg = s.for_stream("reg-1")
    assert (s.alpha, reg.alpha, reg.grid_size) == (0.03, 0.05, 7)
    assert [reg.source(k) for k in ("alpha", "grid_size", "change_warmup", "loss", "storage_size")] == [
        'profile "reg-*"', "environment", "file", 'profile "reg-*"', "default"]
    assert s.source("alpha") == "command line"
    # the profiles come from one source, like any setting: the environment's replace the file's
    s = load_settings(two, env={"STREAMXAI_STREAMS": '{"reg-*": {"features": ["q"]}}'})
    assert list(s.streams) == ["reg-*"] and s.for_stream("reg-1").features == ["q"]
    assert s.for_stream("reg-1").source("features") == 'profile "reg-*"' and s.source("streams") == "environment"
    assert "features" in s.for_stream("reg-1").explicit()


def test_the_per_stream_rule_covers_the_stream_settings_and_nothing_deployment_wide():
    names = set(Settings.__dataclass_fields__)
    assert PER_STREAM <= names
    stream_settings = {"features", "categorical", "target", "model", "model_params", "output", "loss", "explainers", "alpha",
             "storage_size", "grid_size", "sample_rate", "emit_every", "max_label_delay", "label_timeout_s",
             "target_class", "model_seed"}
    assert all(is_per_stream(n) for n in stream_settings | {n for n in names if n.startswith(("isage_", "drift_"))})
    deployment = {"bootstrap_servers", "sasl_password", "topic_prefix", "app_id", "partitions", "replication_factor",
                  "min_insync_replicas",
                  "explain_groups", "web_port", "web_host", "state_dir", "checkpoint_key", "checkpoint_store",
                  "checkpoint_every", "session_timeout_s", "max_message_bytes", "max_lag_s", "streams"}
    assert not any(is_per_stream(n) for n in deployment)
    assert Settings().max_label_delay == 100_000 and Settings().label_timeout_s == 0.0
    s = Settings(streams={"a": {"max_label_delay": 5, "label_timeout_s": 2}})
    assert (s.for_stream("a").max_label_delay, s.for_stream("a").label_timeout_s) == (5, 2.0)


@pytest.mark.parametrize("table, fragment", [
    ('[streams."fraud *"]\nalpha = 0.1', '[streams."fraud *"]: glob \'fraud *\' may use only'),
    ('[streams."a[b"]\nalpha = 0.1', '[streams."a[b"]: glob'),
    ('[streams."r-*"]\nalpah = 0.1', '[streams."r-*"]: unknown setting \'alpah\''),
    ('[streams."r-*"]\npartitions = 2', '[streams."r-*"]: partitions is deployment-wide'),
    ('[streams."r-*"]\nexplain_groups = 2', '[streams."r-*"]: explain_groups is deployment-wide'),
    ('[streams."r-*"]\nalpha = "0.1"', '[streams."r-*"]: setting alpha in this table is a string (\'0.1\'); expected a number'),
    ('[streams."r-*"]\nalpha = 2.0', '[streams."r-*"]: setting alpha=2.0 must be in (0, 1]'),
    ('[streams."r-*"]\nfeatures = ["a"]\ncategorical = ["b"]', '[streams."r-*"]: setting features/categorical/task'),
    ('[streams."r-*"]\ntask = "regression"', '[streams."r-*"]: setting task = "regression" does not fit model river.tree.HoeffdingAdaptiveTreeClassifier (a classifier, the default model), output = "label" (a class label)'),
    ('streams = {"r-*" = 3}', '[streams."r-*"] must be a table of settings, not an integer'),
])
def test_a_bad_profile_is_one_line_naming_the_file_table_and_key(tmp_path, capsys, table, fragment):
    f = tmp_path / "bad.toml"
    f.write_text(f'features = ["a", "b"]\n{table}\n')
    with pytest.raises(ConfigError) as info:
        load_settings(f)
    assert str(info.value).startswith(f"settings file {f}: [streams.") and fragment in str(info.value), info.value
    assert main(["worker", "--settings", str(f), "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("streamxai: error: ") and fragment in err, err


@pytest.mark.parametrize("table, fragment", [
    ('features = ["a"]\nmodel = "river.nope.Model"', '[streams."r-*"] model: model \'river.nope.Model\' cannot be imported'),
    ('features = ["a"]\nmodel = "river.linear_model.LinearRegression"\nmodel_params = {depth = 3}\ntask = "regression"\n'
     'output = "value"\nloss = "squared"', '[streams."r-*"] model: model river.linear_model.LinearRegression takes no parameter \'depth\''),
    ('alpha = 0.1', '[streams."r-*"] features: none in the table and none at the top level'),
    ('features = ["a"]\nloss = "hinge"', '[streams."r-*"] explainers:'),
])
def test_a_profile_whose_model_or_features_cannot_work_stops_the_worker_at_start(tmp_path, capsys, table, fragment):
    f = tmp_path / "bad.toml"
    f.write_text(f'[streams."ok-*"]\nfeatures = ["a"]\n\n[streams."r-*"]\n{table}\n')
    assert main(["worker", "--settings", str(f), "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err


def test_a_worker_needs_features_at_the_top_level_or_in_its_profiles(capsys):
    assert main(["worker", "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs the features" in err and "features = " in err and "[streams." in err
    # top level without features, every profile with them: fine (the checks pass, no broker asked yet)
    check_streams(Settings(streams={"a-*": {"features": ["a"]}, "b-*": {"features": ["b"]}}))
    with pytest.raises(ConfigError, match='streams."b-\\*"\\] features: none'):
        check_streams(Settings(streams={"a-*": {"features": ["a"]}, "b-*": {"alpha": 0.1}}))


def test_config_stream_prints_its_effective_settings_and_their_sources(two, capsys, tmp_path):
    assert main(["config", "--settings", str(two), "--stream", "reg-7", "--set", "grid_size=6"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "# effective settings of stream 'reg-7': profile \"reg-*\" on top of the top-level settings"
    assert 'model = "river.linear_model.LinearRegression"  # profile "reg-*"' in lines
    assert "grid_size = 6  # command line" in lines and "change_warmup = 50  # file" in lines
    assert "storage_size = 100  # default" in lines and "streams" not in tomllib.loads(out)
    flat = tmp_path / "flat.toml"  # pasted into a file of its own: that stream's settings, without profiles
    flat.write_text(out)
    assert load_settings(flat) == load_settings(two, grid_size="6").for_stream("reg-7")
    assert main(["config", "--settings", str(two), "--stream", "zz"]) == 0
    assert capsys.readouterr().out.startswith("# effective settings of stream 'zz': profile \"*\"")


def test_config_round_trips_the_profiles_in_file_order(two, capsys, tmp_path):
    assert main(["config", "--settings", str(two)]) == 0
    out = capsys.readouterr().out
    assert list(tomllib.loads(out)["streams"]) == ["agr-*", "reg-*", "*"]
    back = tmp_path / "back.toml"
    back.write_text(out)
    assert load_settings(back) == load_settings(two)


# --- handlers: two profiles side by side --------------------------------------------------------------

def _reference(s, events):
    got, ses = {}, {}
    for ev in events:
        ps = s.for_stream(ev.stream_id)
        se = ses.setdefault(ev.stream_id, stream_explainer(ps, ev.stream_id))
        for v in se.process_one(ev.x, ev.y):
            if se.n_seen % ps.emit_every == 0:
                got[(ev.stream_id, ev.seq, v.explainer, v.feature)] = v.value
    return got


def test_two_profiles_on_one_worker_each_explained_with_its_own_features_model_and_explainers(two):
    s = load_settings(two, explain_groups="2", partitions="2")
    agr = list(agrawal_events("agr-1", 120, seed=1))
    reg = list(linear_events("reg-1", 120, seed=2))
    wrong = [FeatureEvent("agr-bad", 0, 0.0, {"x0": 1.0, "salary": 2.0}, 1)]
    unmatched = Settings(streams={"agr-*": {"features": list(AGRAWAL_FEATURES)}})  # no "*" profile, no top level
    out = run_handlers(s, [e for pair in zip(agr, reg, strict=True) for e in pair] + wrong)
    expl = out["explanations"]
    by_stream = {sid: {(m["explainer"], m["feature"]) for m in expl if m["stream_id"] == sid} for sid in ("agr-1", "reg-1")}
    assert by_stream["agr-1"] == {(e, f) for e in ("ipfi", "ipdp") for f in AGRAWAL_FEATURES}
    assert by_stream["reg-1"] == {(e, f) for e in ("ipfi", "isage") for f in REG}
    # value for value what the in-process core gives with each profile's settings
    got = {(m["stream_id"], m["seq"], m["explainer"], m["feature"]): m["value"] for m in expl}
    assert got == _reference(s, agr + reg)
    assert {p["stream_id"] for p in out["predictions"]} == {"agr-1", "reg-1"}
    assert all(isinstance(p["y_pred"], float) for p in out["predictions"] if p["stream_id"] == "reg-1")
    # the regression model learns 3 x0 + x1: iPFI ranks x0 first
    last = {m["feature"]: m["value"] for m in expl if m["stream_id"] == "reg-1" and m["explainer"] == "ipfi"
            and m["seq"] == max(q["seq"] for q in expl if q["stream_id"] == "reg-1")}
    assert max(last, key=last.get) == "x0", last
    (dl,) = out["dead-letters"]
    assert dl["reason"] == "features"
    assert "missing features ['commission', 'age', 'elevel'," in dl["error"] and "unexpected features ['x0']" in dl["error"]
    assert 'the features of stream profile "agr-*" are' in dl["error"]
    # a stream that matches no profile, where the top level has no features
    out = run_handlers(unmatched, [FeatureEvent("other-1", 0, 0.0, {"a": 1.0}, 1)])
    (dl,) = out["dead-letters"]
    assert dl["reason"] == "no_profile" and dl["stage"] == "model"
    assert "stream 'other-1' matches no stream profile (\"agr-*\")" in dl["error"]


def test_each_stream_gets_its_profiles_sample_rate_and_change_detection():
    s = Settings(features=["a"], streams={"half-*": {"sample_rate": 0.5, "change_explainers": ["ipfi"],
                                                     "change_min_effect": 0.7}})
    mh = ModelHandler(s)
    sent = {"half-1": 0, "all-1": 0}
    for sid in sent:
        for seq in range(400):
            outs = mh.on_message(dumps(FeatureEvent(sid, seq, 0.0, {"a": 0.5}, 1)), sid.encode(), Source("f", 0, seq))
            sent[sid] += sum(orjson.loads(o.value)["explain"] for o in outs if o.topic == "explain-tasks")
    assert sent["all-1"] == 400 and 150 < sent["half-1"] < 250  # Bernoulli(0.5) over 400: sd 10
    dh = ChangeHandler(s)
    det = dh._fresh("half-1").detector, dh._fresh("all-1").detector
    assert [d.min_effect for d in det] == [0.7, 0.1]


def test_the_alert_series_of_every_profile_exist_from_the_start():
    # a profile that alerts on "learning" episodes: its series exists at 0 before the first one,
    # so an alert rule on it sees the first increase (found when merging per-stream alert kinds)
    dh = ChangeHandler(Settings(features=["a"], streams={"l-*": {"change_alert_kinds": ["learning"]}}))
    counters = dh.metrics.snapshot()["counters"]
    assert counters["change_episodes{alert=true,kind=learning,profile=l-*}"] == 0
    assert counters["change_episodes{alert=false,kind=learning,profile=(top level)}"] == 0
    assert counters["change_episodes{alert=true,kind=degradation,profile=(top level)}"] == 0
    assert counters["change_events{profile=l-*}"] == counters["change_events{profile=(top level)}"] == 0


@pytest.mark.parametrize("model, params, task", [
    ("river.linear_model.LinearRegression", "{}", "regression"),
    ("river.linear_model.LogisticRegression", "{}", "classification"),
    ("river.tree.HoeffdingTreeRegressor", "{}", "regression"),  # its default leaf model is linear
])
def test_a_model_that_cannot_take_a_categorical_string_stops_the_worker_at_start(tmp_path, capsys, model, params,
                                                                                  task):
    # such a profile stops the worker at start, rather than make every event a model_error dead letter
    out = 'output = "value"\nloss = "squared"\n' if task == "regression" else ""
    f = tmp_path / "cat.toml"
    f.write_text(f'[streams."ok-*"]\nfeatures = ["a"]\n\n[streams."r-*"]\nfeatures = ["a", "c"]\ncategorical = ["c"]\n'
                 f'model = "{model}"\nmodel_params = {params}\ntask = "{task}"\n{out}')
    assert main(["worker", "--settings", str(f), "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f'[streams."r-*"] model: {model} cannot take' in err, err
    assert "categorical feature 'c'" in err and "OneHotEncoder" in err, err


@pytest.mark.parametrize("model, params, task", [
    ("river.tree.HoeffdingTreeClassifier", {}, "classification"),
    ("river.tree.HoeffdingAdaptiveTreeClassifier", {"grace_period": 50}, "classification"),
    ("river.forest.ARFClassifier", {"n_models": 3}, "classification"),
    ("river.tree.HoeffdingTreeRegressor", {"leaf_prediction": "mean"}, "regression"),
    ("tests.helpers.onehot_models.OneHotLogisticRegression", {}, "classification"),
    ("river.linear_model.LinearRegression", {}, "regression"),  # no categorical feature: nothing to refuse
])
def test_models_that_take_categorical_strings_are_not_refused(model, params, task):
    cat = [] if model.endswith("LinearRegression") else ["c"]
    s = Settings(streams={"r-*": {"features": ["a", "c"], "categorical": cat, "model": model, "model_params": params,
                                  "task": task, "output": "value" if task == "regression" else "label",
                                  "loss": "squared" if task == "regression" else "zero_one"}})
    check_streams(s)


# --- a model given without model_params -----------------------------------------------------------

LR = "river.linear_model.LogisticRegression"


def test_a_model_given_alone_gets_the_params_it_takes(tmp_path, monkeypatch):
    # model = LogisticRegression alone is taken: the default tree's grace_period is not applied to it
    f = tmp_path / "lr.toml"
    f.write_text(f'features = ["a", "b"]\nmodel = "{LR}"\n')
    s = load_settings(f)
    assert s.model_params == {} and s.source("model_params") == "default"
    check_streams(s)
    monkeypatch.setenv("STREAMXAI_MODEL", LR)
    assert load_settings(env={"STREAMXAI_MODEL": LR}, features="a").model_params == {}
    assert Settings(model=LR, features=["a"]).model_params == {}
    assert Settings(features=["a"]).replace(model=LR).model_params == {}
    # a model that takes grace_period keeps the default's
    assert Settings(model="river.tree.HoeffdingTreeClassifier").model_params == {"grace_period": 50}
    assert Settings().model_params == {"grace_period": 50}
    # a profile that names a model alone: the same rule, for its model
    s = Settings(features=["a"], streams={"l-*": {"model": LR}, "t-*": {"model": "river.forest.ARFClassifier"}})
    assert s.for_stream("l-1").model_params == {} and s.for_stream("t-1").model_params == {"grace_period": 50}
    check_streams(s)


def test_a_model_given_alone_keeps_its_own_params_through_replace_and_a_spawned_worker():
    # replace() and a spawned worker's environment keep the computed default as a default: a linear
    # model named alone takes no tree's grace_period
    from streamxai.worker import settings_env

    s = Settings(features=["a"], streams={"l-*": {"model": LR}})
    t = s.replace(web_port=1234)
    assert t.model_params == {"grace_period": 50} and t.for_stream("l-1").model_params == {}
    assert t.replace(model=LR).model_params == {}
    child = load_settings(env=settings_env(t))
    assert child.model_params == {"grace_period": 50} and child.for_stream("l-1").model_params == {}
    check_streams(child)
    # params given stay given, through both
    given = Settings(features=["a"], model_params={"grace_period": 9}, streams={"t-*": {"alpha": 0.1}})
    assert load_settings(env=settings_env(given.replace(web_port=1))).for_stream("t-1").model_params == \
        {"grace_period": 9}


def test_model_params_given_are_kept_and_a_profile_inherits_them(tmp_path, capsys):
    f = tmp_path / "both.toml"
    f.write_text(f'features = ["a"]\nmodel = "{LR}"\nmodel_params = {{l2 = 0.5}}\n'
                 '[streams."t-*"]\nmodel = "river.tree.HoeffdingTreeClassifier"\nmodel_params = {grace_period = 7}\n'
                 '[streams."l-*"]\nalpha = 0.1\n')
    s = load_settings(f)
    assert s.model_params == {"l2": 0.5} and s.for_stream("l-1").model_params == {"l2": 0.5}
    assert s.for_stream("t-1").model_params == {"grace_period": 7}
    # top-level params a profile's other model cannot take: the error says where to set its own
    f.write_text('features = ["a"]\nmodel_params = {grace_period = 100}\n'
                 f'[streams."l-*"]\nmodel = "{LR}"\n')
    assert main(["worker", "--settings", str(f), "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f'[streams."l-*"] model: model {LR} takes no parameter \'grace_period\'' in err, err
    assert "model_params from the top level" in err and 'set model_params in [streams."l-*"]' in err, err
