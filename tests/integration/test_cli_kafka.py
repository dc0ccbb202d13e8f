"""The produce and tail commands against a real broker: duplicates, JSON lines, waiting, unknown topics."""

from __future__ import annotations

import json
import uuid

from streamxai.cli import main


def _common(bootstrap: str, prefix: str) -> list[str]:
    return ["--bootstrap", bootstrap, "--set", f"topic_prefix={prefix}", "--set", "features=[\"a\", \"b\"]",
            "--set", "partitions=2"]


def _file_sent(bootstrap: str, tmp_path) -> tuple[list[str], str, str]:
    """Events 0..19 of stream s1 produced from a CSV on new topics: the common options, the
    file and the topic prefix."""
    prefix = f"cli-{uuid.uuid4().hex[:8]}."
    common = _common(bootstrap, prefix)
    f = tmp_path / "d.csv"
    f.write_text("a,b,label\n" + "".join(f"{i / 10},{i % 3},{i % 2}\n" for i in range(20)))
    assert main(["produce", str(f), "--stream-id", "s1", *common]) == 0
    return common, str(f), prefix


def test_produce_twice_warns_and_resume_continues_the_stream(bootstrap, tmp_path, capsys):
    common, f, _ = _file_sent(bootstrap, tmp_path)
    assert "produced 20 events of stream 's1' (seq 0..19)" in capsys.readouterr().out
    # the same file again: these seqs exist, the worker would drop them all
    assert main(["produce", str(f), "--stream-id", "s1", *common]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already has events up to seq 19" in err and "--resume" in err
    assert main(["produce", str(f), "--stream-id", "s1", "--resume", *common]) == 0
    assert "(seq 20..39)" in capsys.readouterr().out
    assert main(["produce", str(f), "--stream-id", "s2", *common]) == 0  # a new stream id is fine
    capsys.readouterr()
    # tail prints one JSON object per line, readable by jq; --from-beginning and --idle end it
    assert main(["tail", "features", "--from-beginning", "--idle", "3", *common]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(e["seq"] for e in events if e["stream_id"] == "s1") == list(range(40))
    assert sorted(e["seq"] for e in events if e["stream_id"] == "s2") == list(range(20))
    assert main(["tail", "features", "--from-beginning", "--max", "3", *common]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert {e["schema"] for e in events} == {"feature_event/v1"} and all(isinstance(e["y"], int) for e in events)


def test_jsonl_with_bad_lines_sends_the_good_ones_and_exits_non_zero(bootstrap, tmp_path, capsys):
    prefix = f"cli-{uuid.uuid4().hex[:8]}."
    common = _common(bootstrap, prefix)
    f = tmp_path / "d.jsonl"
    f.write_text('{"a": 1, "b": 2, "y": 1}\nnot json\n{"a": NaN, "b": 2, "y": 0}\n{"a": 3, "b": 4, "y": 0}\n')
    assert main(["produce", str(f), *common]) == 1
    out, err = capsys.readouterr()
    assert "produced 2 events" in out
    assert f"{f}:2: skipped: not valid JSON" in err and f"{f}:3: skipped:" in err
    assert err.strip().endswith("2 valid event(s); 2 bad line(s) skipped (reported above)")
    assert main(["tail", "features", "--from-beginning", "--idle", "3", "--meta", *common]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["value"]["x"]["a"] for r in rows] == [1, 3] and rows[0]["topic"] == f"{prefix}features"
    assert all(type(r["value"]["x"]["a"]) is int for r in rows)  # JSON integers stay integers


def test_tail_waits_on_an_empty_topic_and_rejects_unknown_ones(bootstrap, capsys):
    prefix = f"cli-{uuid.uuid4().hex[:8]}."
    common = _common(bootstrap, prefix)
    # the demo's events carry agrawal's features, not a and b (refused, or every event a dead letter)
    assert main(["produce", "control", "--n", "5", *common]) == 2
    assert main(["produce", "control", "--n", "5", *common, "--set", "features=[]"]) == 0
    capsys.readouterr()
    assert main(["tail", "drift-events", "--idle", "3", *common]) == 0
    out, err = capsys.readouterr()
    assert out == "" and f"waiting for new messages on {prefix}drift-events" in err
    assert main(["tail", "nonsense", *common]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown topic 'nonsense'" in err and "explanations" in err
    assert f"{prefix}features" in err  # the existing full names are listed too


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] not in ("Z", "X")  # a zombie has exited
    except OSError:
        return False


def test_a_demo_stopped_with_sigterm_stops_its_workers_and_dashboard(bootstrap, tmp_path):
    """A demo stopped by SIGTERM stops its workers, dashboard and broker as after Ctrl-C, and exits 130."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from confluent_kafka.admin import AdminClient
    from streamxai.local.ports import free_port

    proc = subprocess.Popen(
        [sys.executable, "-m", "streamxai.cli", "demo", "--n", "100000", "--rate", "200", "--bootstrap", bootstrap,
         "--dashboard-port", str(free_port("127.0.0.1"))],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started, children = [], []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(line.startswith("dashboard:") for line in started):
            line = proc.stdout.readline()
            if not line:
                break
            started.append(line)
        assert any(line.startswith("dashboard:") for line in started), "".join(started)
        prefix = next(line for line in started if "worker(s) started" in line).split("topics ")[1].strip().rstrip("*")
        children = _children(proc.pid)
        assert len(children) >= 2, children  # the worker and the dashboard
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 130, out
        until = time.monotonic() + 30
        while any(_alive(c) for c in children) and time.monotonic() < until:
            time.sleep(0.2)
        assert not [c for c in children if _alive(c)]
        assert "removed the demo's" in out and prefix.startswith("streamxai.demo-")
        topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
        assert not [t for t in topics if t.startswith(prefix)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for c in children:  # still ours (the pid of one that ended may have been given to another process)
            if _alive(c) and "streamxai.cli" in _cmdline(c):
                os.kill(c, signal.SIGKILL)


def test_resume_numbers_after_the_last_seq_a_worker_accepts(bootstrap, tmp_path, capsys):
    # one message with a seq far beyond the stream (a dead letter, reason seq_gap) made --resume
    # number the whole file after it, so the worker dead-lettered every event of it as well
    from streamxai.kafka.io import produce_events
    from streamxai.schemas import FeatureEvent
    from streamxai.settings import load_settings

    common, f, prefix = _file_sent(bootstrap, tmp_path)
    s = load_settings(env={}, bootstrap_servers=bootstrap, topic_prefix=prefix, features=["a", "b"], partitions=2)
    produce_events(s, [FeatureEvent("s1", 10**9, 1.0, {"a": 1.0, "b": 2.0}, 1)])
    capsys.readouterr()
    assert main(["produce", str(f), "--stream-id", "s1", "--resume", *common]) == 0
    assert "(seq 20..39)" in capsys.readouterr().out


def test_resume_and_the_duplicate_check_find_a_stream_behind_another_streams_events(bootstrap, tmp_path, capsys):
    # a stream whose partition has since taken 12,000 events of another stream is not new: `--resume` does not
    # number its events from 0 again, and a second `produce` of the file is refused
    from streamxai.commands import last_seq
    from streamxai.kafka.io import produce_events
    from streamxai.schemas import FeatureEvent
    from streamxai.settings import load_settings

    prefix = f"cli-{uuid.uuid4().hex[:8]}."
    common = ["--bootstrap", bootstrap, "--set", f"topic_prefix={prefix}", "--set", "features=[\"a\", \"b\"]",
              "--set", "partitions=1"]
    f = tmp_path / "d.csv"
    f.write_text("a,b,label\n" + "".join(f"{i / 10},{i % 3},{i % 2}\n" for i in range(20)))
    assert main(["produce", str(f), "--stream-id", "s1", *common]) == 0
    s = load_settings(env={}, bootstrap_servers=bootstrap, topic_prefix=prefix, features=["a", "b"], partitions=1)
    produce_events(s, (FeatureEvent("other", q, 1.0, {"a": 1.0, "b": 2.0}, 1) for q in range(9000)))
    assert last_seq(s, "s1") == 19 and last_seq(s, "other") == 8999 and last_seq(s, "nobody") is None
    capsys.readouterr()
    assert main(["produce", str(f), "--stream-id", "s1", *common]) == 2
    assert "already has events up to seq 19" in capsys.readouterr().err
    assert main(["produce", str(f), "--stream-id", "s1", "--resume", *common]) == 0
    assert "(seq 20..39)" in capsys.readouterr().out


def test_a_file_of_feature_events_is_checked_for_the_earlier_seqs_of_the_streams_its_lines_name(
        bootstrap, tmp_path, capsys):
    # the check looks for earlier seqs of the streams the file's events name (s1), not of the stream 'file'
    common, csv_file, _ = _file_sent(bootstrap, tmp_path)  # s1 has seqs 0..19
    capsys.readouterr()
    f = tmp_path / "events.jsonl"

    def write(s1_seqs, s3_seqs=()):
        f.write_text("".join(json.dumps({"schema": "feature_event/v1", "stream_id": sid, "seq": q, "ts": 1.0,
                                         "x": {"a": 0.5, "b": 1}, "y": 1}) + "\n"
                             for sid, seqs in (("s3", s3_seqs), ("s1", s1_seqs)) for q in seqs))

    write(range(15, 25), range(5))
    assert main(["produce", str(f), *common]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stream 's1' already has events up to seq 19" in err, err
    assert "from seq 15" in err and "--force" in err and "'s3'" not in err, err
    write(range(20, 25), range(5))  # each stream's events continue where it ends: sent
    assert main(["produce", str(f), *common]) == 0
    assert "produced 10 events" in capsys.readouterr().out
    write(range(25, 30), range(3, 8))  # s3 now has 0..4
    assert main(["produce", str(f), *common]) == 2
    err = capsys.readouterr().err
    assert "stream 's3' already has events up to seq 4" in err and "'s1'" not in err, err
    assert main(["produce", str(f), "--force", *common]) == 0
    capsys.readouterr()
    # a CSV's rows are still checked against --stream-id
    assert main(["produce", csv_file, "--stream-id", "s1", *common]) == 2
    assert "already has events up to seq 29" in capsys.readouterr().err
