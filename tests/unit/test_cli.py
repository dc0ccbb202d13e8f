"""The command line: settings reach the commands, help lists every variable, errors are clear."""

import argparse
import math

import pytest
from streamxai.cli import _explicit_settings, _parser, main
from streamxai.ingest import FileReport, file_events
from streamxai.local.demo import demo_overrides
from streamxai.schemas import ConfigError
from streamxai.settings import Settings, load_settings


def test_config_prints_effective_settings_without_secrets(capsys, monkeypatch):
    monkeypatch.setenv("STREAMXAI_SASL_PASSWORD", "pa55word")
    monkeypatch.setenv("STREAMXAI_EXPLAIN_GROUPS", "3")
    assert main(["config", "--set", "alpha=0.01", "--bootstrap", "k1:9092"]) == 0
    out = capsys.readouterr().out
    assert "alpha = 0.01" in out and "explain_groups = 3" in out and "bootstrap_servers = \"k1:9092\"" in out
    assert "pa55word" not in out


def test_help_lists_every_setting_with_its_variable(capsys):
    with pytest.raises(SystemExit):
        main(["worker", "--help"])
    out = capsys.readouterr().out
    for name in Settings.__dataclass_fields__:
        assert f"STREAMXAI_{name.upper()}" in out


def test_bad_setting_is_an_error_not_a_traceback(capsys):
    assert main(["config", "--set", "explainers=shap"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("streamxai: error: setting explainers has unknown names ['shap']")


# --- user errors are one line; every option explains itself -------------------------------------

def _one_line_error(capsys, *start: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("streamxai: error: "), err
    for s in start:
        assert s in err, err
    return err


def test_every_option_of_every_command_has_help():
    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [f"{name} {'/'.join(a.option_strings) or a.dest}"
               for name, p in sub.choices.items() for a in p._actions
               if not isinstance(a, argparse._HelpAction) and not a.help]
    assert missing == []


def test_produce_a_missing_file_is_one_line_and_needs_no_broker(capsys):
    # the bootstrap points nowhere: the file is checked before any connection
    assert main(["produce", "nosuchfile.csv", "--set", "features=a", "--bootstrap", "127.0.0.1:1"]) == 2
    _one_line_error(capsys, "nosuchfile.csv does not exist")


def test_worker_with_a_model_that_cannot_be_imported_does_not_start(capsys):
    assert main(["worker", "--set", "model=river.nonexistent.Model", "--set", "features=a,b",
                 "--bootstrap", "127.0.0.1:1"]) == 2
    _one_line_error(capsys, "river.nonexistent.Model", "cannot be imported")


def test_a_model_of_a_module_of_ones_own_that_cannot_be_imported_says_how_to_make_it_importable(capsys):
    # mymodels.py beside the settings file is not on the worker's path: the error says to set PYTHONPATH
    assert main(["worker", "--set", "model=streamxai_trial_models.lr_onehot", "--set", "features=a,b",
                 "--bootstrap", "127.0.0.1:1"]) == 2
    err = _one_line_error(capsys, "'streamxai_trial_models.lr_onehot' cannot be imported: No module named "
                          "'streamxai_trial_models'", "PYTHONPATH")
    assert "river.forest.ARFClassifier" not in err, err


def test_a_quoted_number_in_toml_is_an_error_naming_the_type(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text('alpha = "0.01"\n')
    assert main(["config", "--settings", str(f)]) == 2
    _one_line_error(capsys, "alpha", "string", "expected a number")
    f.write_text("partitions = 2.5\n")
    assert main(["config", "--settings", str(f)]) == 2
    _one_line_error(capsys, "partitions", "expected an integer")
    f.write_text('alpha = 0.01\npartitions = 2\nfeatures = ["a"]\nmodel_params = {grace_period = 5}\n'
                 'sasl_password = "x"\ntarget_class = "yes"\n')
    assert main(["config", "--settings", str(f)]) == 0


# --- file readers ------------------------------------------------------------------------------------

def test_csv_classification_reads_the_label_column_named_by_the_settings_as_integers(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("a,b,label\n0.5,1,1\n0.25,2,0\n")
    evs = list(file_events(f, "s", ["a", "b"], clock=lambda: 123.0))
    assert [(e.x, e.y, e.ts, e.seq) for e in evs] == [({"a": 0.5, "b": 1.0}, 1, 123.0, 0),
                                                    ({"a": 0.25, "b": 2.0}, 0, 123.0, 1)]
    assert all(type(e.y) is int for e in evs)


def test_csv_regression_reads_float_targets_and_a_ts_column(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("a,when,number\n0.5,1700000000.5,3.25\n")
    (ev,) = file_events(f, "s", ["a"], task="regression", ts_column="when")
    assert (ev.y, ev.ts) == (3.25, 1700000000.5)


def test_produce_reads_the_label_column_the_setting_target_names_and_the_option_overrides_it(tmp_path, capsys):
    """``target`` names the label column of a file (the task is the setting ``task``): a file
    without it is refused before any Kafka connection, naming the column; ``--target`` wins."""
    f = tmp_path / "d.csv"
    f.write_text("a,label,cls\n0.5,1,0\n")
    base = ["produce", str(f), "--set", "features=a", "--bootstrap", "127.0.0.1:1"]
    assert main([*base, "--set", "target=klass"]) == 2
    assert "has no target column 'klass'; its columns are ['a', 'label', 'cls']" in capsys.readouterr().err
    assert main([*base, "--set", "target=klass", "--target", "nope"]) == 2
    assert "has no target column 'nope'" in capsys.readouterr().err
    (ev,) = file_events(f, "s", ["a"], "cls")
    assert ev.y == 0  # the named column, not the default `label`
    assert load_settings(env={"STREAMXAI_TARGET": "cls"}).target == "cls"
    assert load_settings().target == "" and load_settings().task == "classification"


def test_csv_without_the_target_or_a_feature_column_is_an_error(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("a,b,y2\n0.5,1,1\n")
    with pytest.raises(ConfigError, match=r"no target column \('label', 'y' or 'target'\); its columns are"):
        list(file_events(f, "s", ["a", "b"]))
    with pytest.raises(ConfigError, match="no target column 'cls'"):
        list(file_events(f, "s", ["a", "b"], "cls"))
    with pytest.raises(ConfigError, match=r"no column\(s\) \['c'\]"):
        list(file_events(f, "s", ["a", "c"], "y2"))


def test_jsonl_bad_lines_are_reported_with_line_numbers_and_the_rest_is_read(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join([
        '{"a": 1.0, "b": 2.0, "y": 1}',
        '{"a": 1.0, "b": ',  # truncated
        '{"a": NaN, "b": 2.0, "y": 0}',
        '{"a": 1.0, "y": 0}',  # missing b
        '[1, 2]',
        '{"a": 1.0, "b": 2.0, "y": 1.5}',  # not a class label
        '{"a": 3.0, "b": 4.0, "y": 0}',
    ]) + "\n")
    report = FileReport()
    evs = list(file_events(f, "s", ["a", "b"], report=report, clock=lambda: 5.0))
    assert [(e.seq, e.x["a"]) for e in evs] == [(0, 1.0), (1, 3.0)]
    assert [line for line, _ in report.bad] == [2, 3, 4, 5, 6]
    reasons = dict(report.bad)
    assert "not valid JSON" in reasons[2] and "NaN" in reasons[3] and "['b']" in reasons[4]
    assert report.summary(f).endswith("2 valid event(s); 5 bad line(s) skipped (reported above)")
    assert not any(math.isnan(v) for e in evs for v in e.x.values())


def test_a_file_bad_on_every_line_reports_twenty_lines_and_counts_the_rest(tmp_path, capsys):
    # a file of another profile's stream prints and keeps a bounded number of lines, naming the missing target
    from streamxai.commands import _reporting

    f = tmp_path / "reg.jsonl"
    f.write_text("".join(f'{{"x0": {i}.5, "number": 1.0}}\n' for i in range(3000)) + '{"a": 1.0, "b": 2.0, "y": 1}\n')
    report = FileReport()
    evs = list(_reporting(file_events(f, "s", ["a", "b"], report=report, clock=lambda: 5.0), str(f), report))
    err = capsys.readouterr().err.splitlines()
    assert len(evs) == 1 and report.n_bad == 3000 and len(report.bad) == len(err) == 20
    assert err[0] == (f"{f}:1: skipped: unexpected field(s) ['number', 'x0'] (features are ['a', 'b']; "
                      "no target field ('label', 'y' or 'target'), name it with --target)")
    assert report.summary(f).endswith("1 valid event(s); 3000 bad line(s) skipped (the first 20 reported above)")


# --- the demo respects every source of settings ----------------------------------------------------

def test_demo_keeps_settings_from_file_environment_and_command_line(tmp_path, monkeypatch):
    f = tmp_path / "s.toml"
    f.write_text("alpha = 0.02\n")
    monkeypatch.setenv("STREAMXAI_CHANGE_WARMUP", "5")
    args = _parser().parse_args(["demo", "--settings", str(f), "--set", "topic_prefix=mine."])
    explicit = _explicit_settings(args)
    assert {"alpha", "change_warmup", "topic_prefix"} <= explicit
    monkeypatch.delenv("STREAMXAI_CHANGE_WARMUP")
    f.write_text("")
    monkeypatch.setenv("STREAMXAI_ALPHA", "0.02")
    assert demo_overrides("r1", 3000, _explicit_settings(args))[1] == {"change_warmup": 500, "change_episode_gap": 250}
    monkeypatch.delenv("STREAMXAI_ALPHA")
    f.write_text("alpha = 0.02\n")
    names, scaled = demo_overrides("r1", 3000, explicit)
    assert scaled == {"change_episode_gap": 250}  # the only scaled setting no source gave
    assert "topic_prefix" not in names and names["state_dir"] == ".streamxai/demo-r1"
    names, scaled = demo_overrides("r1", 3000, _explicit_settings(_parser().parse_args(["demo"])))
    assert scaled == {"alpha": 0.03, "change_warmup": 500, "change_episode_gap": 250}


def test_a_short_demo_closes_each_episode_before_the_next_drift():
    # `demo --n 3000` shows episodes: its gap is short enough for them to close within the run
    from streamxai.local.demo import demo_settings

    for n in (3000, 6000, 9000):
        segment = n // 3
        gap = demo_settings(n).get("change_episode_gap", Settings().change_episode_gap)
        assert gap <= segment // 4, (n, gap)


def test_broker_command_passes_every_option_of_the_broker_tool(capsys, tmp_path):
    from streamxai.local.ports import free_ports

    port, cport = free_ports(2)
    users = tmp_path / "users.toml"
    users.write_text('admin = "a-pw"\n')
    # status of a broker that is not running: exit 3, with the options it was given
    code = main(["broker", "status", "--port", str(port), "--controller-port", str(cport),
                 "--data-dir", str(tmp_path / "k"), "--heap", "256m", "--sasl-users", str(users)])
    assert code == 3
    assert str(tmp_path / "k") in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["broker", "start", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: streamxai broker")
    for option in ("--port", "--controller-port", "--data-dir", "--log-file", "--heap", "--timeout", "--sasl-users"):
        assert option in out


def test_broker_errors_are_one_line_like_every_other_commands(capsys, tmp_path):
    # `streamxai broker` errors begin with "streamxai: error:" and say what was wrong, where, and what to do
    missing = tmp_path / "no-users.toml"
    assert main(["broker", "status", "--sasl-users", str(missing)]) == 2
    _one_line_error(capsys, f"SASL users file {missing} does not exist", "--sasl-users")
    bad = tmp_path / "users.toml"
    bad.write_text('someone = "pw"\n')
    assert main(["broker", "status", "--sasl-users", str(bad)]) == 2
    _one_line_error(capsys, f"SASL users file {bad}", "admin")
    assert main(["broker", "status", "--port", "9092", "--controller-port", "9092"]) == 2
    _one_line_error(capsys, "port and controller_port must differ", "--controller-port")


def test_produce_labels_reads_the_target_of_the_streams_profile(tmp_path, monkeypatch, capsys):
    # a regression profile's target is `number`: `produce FILE --labels` sends the file's labels by it
    settings = tmp_path / "two.toml"
    settings.write_text('[streams."reg-*"]\nfeatures = ["x0", "x1"]\ntask = "regression"\noutput = "value"\n'
                        'loss = "squared"\nmodel = "river.linear_model.LinearRegression"\nmodel_params = {}\n'
                        'explainers = ["ipfi"]\n')
    data = tmp_path / "reg.csv"
    data.write_text("x0,x1,number\n0.5,1.5,2.25\n-1,2,3\n")
    sent: list = []
    monkeypatch.setattr("streamxai.kafka.config.ensure_topics", lambda s: None)
    monkeypatch.setattr("streamxai.kafka.io.produce_events",
                        lambda s, events, rate=None: len([sent.append(ev) for ev in events]))
    assert main(["produce", str(data), "--labels", "--stream-id", "reg-7", "--settings", str(settings)]) == 0, \
        capsys.readouterr().err
    assert [(ev.seq, ev.y) for ev in sent] == [(0, 2.25), (1, 3.0)]
    assert all(isinstance(ev.y, float) for ev in sent)


@pytest.mark.parametrize("argv, said", [
    (["worker", "--set", "features=a,b", "--set", "web_port={port}"], ("web_port {port}", "STREAMXAI_WEB_PORT")),
    (["dashboard", "--port", "{port}"], ("127.0.0.1:{port}", "--port")),  # before any Kafka connection
], ids=["worker", "dashboard"])
def test_a_command_whose_port_is_taken_does_not_start(capsys, argv, said):
    """A worker on a taken web_port, or a dashboard on a taken --port: one line and exit 2."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([a.format(port=port) for a in argv] + ["--bootstrap", "127.0.0.1:1"]) == 2
    _one_line_error(capsys, said[0].format(port=port), "in use", said[1])


def test_a_dashboard_on_an_address_of_another_host_does_not_start(capsys):
    assert main(["dashboard", "--host", "192.0.2.1", "--port", "8050", "--bootstrap", "127.0.0.1:1"]) == 2
    _one_line_error(capsys, "192.0.2.1:8050", "--host")


@pytest.mark.parametrize("argv, option", [
    (["dashboard", "--port", "99999"], "--port"),      # not OverflowError from the socket
    (["broker", "start", "--port", "70000"], "--port"),
    (["demo", "--dashboard-port", "-1"], "--dashboard-port"),
    (["demo", "--workers", "0"], "--workers"),         # not a demo without workers waiting for its timeout
    (["demo", "--n", "-5"], "--n"),                    # not an error about change_warmup, a setting not given
    (["demo", "--timeout", "0"], "--timeout"),
    (["demo", "--label-delay", "-3"], "--label-delay"),
    (["produce", "demo", "--rate", "-1"], "--rate"),   # not 30,000 events as fast as it can
    (["produce", "demo", "--n", "0"], "--n"),
    (["tail", "features", "--max", "-1"], "--max"),    # followed the topic for ever
    (["tail", "features", "--idle", "-3"], "--idle"),  # stopped at once, printing nothing, exit 0
    (["plot", "s", "--idle", "-1"], "--idle"),
])
def test_a_number_out_of_range_is_an_argument_error_naming_the_option(argv, option, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and "Traceback" not in err, err


def test_plot_without_a_broker_is_one_line(capsys):
    # no broker (or refused credentials) is one line and exit 2, checked before the topic lookup
    assert main(["plot", "s", "--set", "features=a", "--bootstrap", "127.0.0.1:1"]) == 2
    _one_line_error(capsys, "no Kafka broker answered at 127.0.0.1:1", "--bootstrap")


def test_produce_says_which_streams_and_seqs_it_sent(tmp_path, monkeypatch, capsys):
    # a JSONL file's feature and label events keep their own stream_id and seq, which produce names
    data = tmp_path / "events.jsonl"
    data.write_text("".join(
        f'{{"schema": "feature_event/v1", "stream_id": "{sid}", "seq": {q}, "ts": 0, "x": {{"a": 1.0}}, "y": 1}}\n'
        for sid, q in (("reg-8", 5), ("reg-8", 9), ("reg-9", 0))))
    monkeypatch.setattr("streamxai.kafka.config.ensure_topics", lambda s: None)
    monkeypatch.setattr("streamxai.commands.last_seqs", lambda s, sids: {})
    monkeypatch.setattr("streamxai.kafka.io.produce_events", lambda s, events, rate=None: sum(1 for _ in events))
    assert main(["produce", str(data), "--set", "features=a"]) == 0
    out = capsys.readouterr().out
    assert "produced 3 events of 2 streams: 'reg-8' (seq 5..9), 'reg-9' (seq 0..0) to streamxai.features" in out, out
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"schema": "label_event/v1", "stream_id": "reg-7", "seq": 3, "y": 1, "ts": 1.0}\n')
    assert main(["produce", str(labels), "--labels", "--set", "features=a"]) == 0
    assert "produced 1 labels of stream 'reg-7' (seq 3..3) to streamxai.labels" in capsys.readouterr().out


@pytest.mark.parametrize("roles, fragment", [
    ("model,explian", "unknown role 'explian'"),  # a traceback (exit 1) after the topics were created
    (",", "no role"),                             # a worker with no agents, running for ever
])
def test_worker_roles_are_checked_before_anything_starts(roles, fragment, capsys):
    with pytest.raises(SystemExit) as info:
        main(["worker", "--roles", roles, "--set", "features=a", "--bootstrap", "127.0.0.1:1"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --roles" in err and fragment in err and "model, explain, change" in err, err


def test_worker_roles_are_parsed_into_a_tuple():
    from streamxai import app, cli

    assert cli.ROLES == app.ROLES  # the command line's copy, kept to parse without importing Faust
    assert _parser().parse_args(["worker", "--roles", " change , model"]).roles == ("change", "model")
    assert _parser().parse_args(["worker"]).roles == ("model", "explain", "change")


@pytest.mark.parametrize("stream_id, says", [
    ("reg-1", "falls under stream profile \"reg-*\", whose features are ['x0', 'x1']"),
    ("other-1", "matches no stream profile ('agr-*', 'reg-*') and the top-level settings give no features"),
    ("agr 1", "stream_id 'agr 1' must be 1 to 128 characters"),
])
def test_produce_demo_to_a_stream_of_other_features_is_refused_before_kafka(tmp_path, capsys, stream_id, says):
    # `produce demo --stream-id reg-2` under two profiles is refused (agrawal events to the regression's profile)
    f = tmp_path / "two.toml"
    f.write_text('[streams."agr-*"]\nfeatures = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", '
                 '"hyears", "loan"]\n[streams."reg-*"]\nfeatures = ["x0", "x1"]\n')
    base = ["produce", "demo", "--n", "5", "--settings", str(f), "--bootstrap", "127.0.0.1:1"]
    assert main(base + ["--stream-id", stream_id]) == 2
    err = capsys.readouterr().err
    assert says in err and "no Kafka broker" not in err and len(err.strip().splitlines()) == 1


def test_tail_without_a_broker_is_one_line(capsys):
    # the broker error comes alone, before any "waiting for new messages" line
    from streamxai.local.ports import free_port

    assert main(["tail", "features", "--bootstrap", f"127.0.0.1:{free_port()}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Kafka broker answered" in err and "waiting" not in err, err


@pytest.mark.parametrize("source", ["demo", "control"])
def test_produce_demo_without_labels_is_refused_not_ignored(source, capsys):
    # `produce demo --without-labels` is refused with what to do instead (later labels would be dead letters)
    assert main(["produce", source, "--n", "5", "--without-labels", "--bootstrap", "127.0.0.1:1"]) == 2
    _one_line_error(capsys, "--without-labels", "streamxai demo --label-delay N")


_TWO_PROFILES = ('[streams."agr-*"]\nfeatures = ["a"]\ncategorical = ["a"]\n'
                 '[streams."reg-*"]\nfeatures = ["x0"]\ntask = "regression"\noutput = "value"\nloss = "squared"\n'
                 'model = "river.linear_model.LinearRegression"\nmodel_params = {}\nexplainers = ["ipfi"]\n')


def test_produce_jsonl_events_and_labels_take_the_target_of_each_lines_own_stream(tmp_path, monkeypatch, capsys):
    # a JSONL file's labels are checked against their own stream's profile target, not that of --stream-id:
    # a regression's label 3.7 is sent, a class label "x" of its stream refused
    settings = tmp_path / "two.toml"
    settings.write_text(_TWO_PROFILES)
    sent: list = []
    monkeypatch.setattr("streamxai.kafka.config.ensure_topics", lambda s: None)
    monkeypatch.setattr("streamxai.commands.last_seqs", lambda s, sids: {})
    monkeypatch.setattr("streamxai.kafka.io.produce_events",
                        lambda s, events, rate=None: len([sent.append(ev) for ev in events]))
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"schema": "label_event/v1", "stream_id": "reg-4", "seq": 7, "ts": 1.0, "y": 3.7}\n'
                      '{"schema": "label_event/v1", "stream_id": "agr-4", "seq": 7, "ts": 1.0, "y": "x"}\n'
                      '{"schema": "label_event/v1", "stream_id": "reg-4", "seq": 8, "ts": 1.0, "y": "x"}\n'
                      '{"schema": "label_event/v1", "stream_id": "other-4", "seq": 8, "ts": 1.0, "y": 1}\n')
    assert main(["produce", str(labels), "--labels", "--settings", str(settings)]) == 1
    assert [(ev.stream_id, ev.y) for ev in sent] == [("reg-4", 3.7), ("agr-4", "x")]
    err = capsys.readouterr().err
    assert "labels.jsonl:3: skipped:" in err and "labels.jsonl:4: skipped: stream 'other-4' matches no stream profile" in err
    sent.clear()
    events = tmp_path / "events.jsonl"
    events.write_text('{"schema": "feature_event/v1", "stream_id": "reg-6", "seq": 0, "ts": 1.0, "x": {"x0": 1.0}, '
                      '"y": 3.7}\n'
                      '{"schema": "feature_event/v1", "stream_id": "agr-6", "seq": 0, "ts": 1.0, "x": {"a": 2.0}, '
                      '"y": 1}\n')
    assert main(["produce", str(events), "--settings", str(settings)]) == 0, capsys.readouterr().err
    assert [(ev.stream_id, ev.x, ev.y) for ev in sent] == [("reg-6", {"x0": 1.0}, 3.7), ("agr-6", {"a": 2.0}, 1)]
    # a stream no profile matches (and no top-level features) is a bad line, as the workers would dead-letter it
    events.write_text('{"schema": "feature_event/v1", "stream_id": "other-6", "seq": 0, "ts": 1.0, "x": {"a": 2.0}}\n')
    assert main(["produce", str(events), "--settings", str(settings)]) == 1
    assert "events.jsonl:1: skipped: stream 'other-6' matches no stream profile" in capsys.readouterr().err


def test_produce_a_file_with_label_delay_sends_each_label_n_events_after_its_features(tmp_path, monkeypatch, capsys):
    # `produce FILE --label-delay N` sends a labelled file's labels N events later
    data = tmp_path / "d.csv"
    data.write_text("a,label,t\n" + "".join(f"{q}.5,{'' if q == 3 else q % 2},{100 + q}\n" for q in range(5)))
    sent = []
    monkeypatch.setattr("streamxai.kafka.config.ensure_topics", lambda s: None)
    monkeypatch.setattr("streamxai.commands.last_seqs", lambda s, sids: {})
    monkeypatch.setattr("streamxai.kafka.io.produce_events", lambda s, events, rate=None: len(sent.extend(events) or sent))
    assert main(["produce", str(data), "--set", "features=a", "--ts-column", "t", "--label-delay", "2"]) == 0
    got = [(type(m).__name__, m.seq, m.y, m.ts) for m in sent]
    assert got == [("FeatureEvent", 0, None, 100.0), ("FeatureEvent", 1, None, 101.0), ("FeatureEvent", 2, None, 102.0),
                   ("LabelEvent", 0, 0, 102.0), ("FeatureEvent", 3, None, 103.0), ("LabelEvent", 1, 1, 103.0),
                   ("FeatureEvent", 4, None, 104.0), ("LabelEvent", 2, 0, 104.0),  # seq 3 has no label: none sent
                   ("LabelEvent", 4, 0, 104.0)], got
    assert [m.x for m in sent if type(m).__name__ == "FeatureEvent"] == [{"a": q + 0.5} for q in range(5)]
    out = capsys.readouterr().out
    assert "produced 5 events of stream 'file' (seq 0..4) to streamxai.features, and 4 labels 2 events later to " \
           "streamxai.labels" in out, out


@pytest.mark.parametrize("other", ["--labels", "--without-labels"])
def test_produce_label_delay_with_labels_or_without_labels_is_refused(tmp_path, other, capsys):
    data = tmp_path / "d.csv"
    data.write_text("a,label\n1,0\n")
    assert main(["produce", str(data), "--set", "features=a", "--label-delay", "2", other,
                 "--bootstrap", "127.0.0.1:1"]) == 2
    _one_line_error(capsys, "--label-delay", other)


@pytest.mark.parametrize("how", ["file", "environment", "command line"])
def test_model_params_of_another_model_stop_the_worker_at_start_saying_which_where_and_what_to_do(
        tmp_path, monkeypatch, capsys, how):
    # model_params the model does not take are refused saying where they were set, which are not taken,
    # and what the model takes
    f = tmp_path / "s.toml"
    params = '{"grace_period": 50, "l2": 0.1}'
    f.write_text('features = ["a"]\nmodel = "river.linear_model.LogisticRegression"\n'
                 + ("model_params = {grace_period = 50, l2 = 0.1}\n" if how == "file" else ""))
    args = ["worker", "--settings", str(f), "--bootstrap", "127.0.0.1:1"]
    if how == "environment":
        monkeypatch.setenv("STREAMXAI_MODEL_PARAMS", params)
    if how == "command line":
        args += ["--set", f"model_params={params}"]
    assert main(args) == 2
    err = _one_line_error(capsys, "model river.linear_model.LogisticRegression takes no parameter 'grace_period' of "
                                  "model_params")
    where = {"file": "the settings file", "environment": "$STREAMXAI_MODEL_PARAMS", "command line": "--set"}[how]
    assert f"model_params from {where}" in err, err
    assert "leave model_params out" in err and "its own defaults" in err, err
    assert "it takes " in err and "l2" in err.partition("it takes ")[2] and "optimizer" in err, err  # what it takes
