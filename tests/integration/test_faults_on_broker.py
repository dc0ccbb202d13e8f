"""Adversarial input through a real broker and worker: the worker stays up, valid events get the in-process
core's values, each bad input is one dead letter within the broker's limit, nothing is counted twice."""

from __future__ import annotations

import base64
import hashlib

import orjson
import pytest
from helpers.damage import DAMAGES, damaged
from helpers.pipeline_runs import collect, collect_all, committed, make_settings, wait_for_commit, worker_metrics
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_raw
from streamxai.kafka.watermarks import watermarks
from streamxai.local.demo_stream import agrawal_events
from streamxai.plan import stream_explainer
from streamxai.schemas import dumps
from streamxai.worker import spawn_worker, stop_worker


@pytest.fixture
def worker(tmp_path):
    procs = []

    def start(s):
        procs.append(spawn_worker(s, log_file=str(tmp_path / "worker.log"), loglevel="warning"))

    yield start
    for p in procs:
        assert p.poll() is None, "the worker died"
        stop_worker(p)
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


def _expected_explanations(s, events_by_stream):
    """``(stream_id, seq, feature) -> value`` of every explanation the in-process core publishes."""
    want = {}
    for sid, evs in events_by_stream.items():
        se = stream_explainer(s, sid)
        for e in evs:
            values = se.process_one(e.x, e.y)
            if se.n_seen % s.emit_every == 0:
                want.update({(sid, e.seq, v.feature): v.value for v in values})
    return want


def test_worker_survives_every_kind_of_bad_input(bootstrap, tmp_path, worker):
    s = make_settings(bootstrap, str(tmp_path / "state"), explain_groups=1, explainers=["ipfi"],
                      max_message_bytes=64 * 1024, max_label_delay=20)
    good = {sid: list(agrawal_events(sid, 60, seed=i)) for i, sid in enumerate(("f1", "f.2"))}
    x0 = dict(good["f1"][0].x)

    def ev(**o):
        return orjson.dumps({"schema": "feature_event/v1", "stream_id": "f1", "seq": 30, "ts": 0.0,
                             "x": x0, "y": 1, **o})

    huge = ev(x={**x0, "car": "c" * 900_000})  # Kafka takes it; its dead letter must be cut
    bad = [
        (b"f1", b"{\"schema\": \"feature_event/v1\", \"stre", "malformed"),
        (b"f1", b"", "malformed"),
        (b"f1", None, "malformed"),
        (b"f1", b"\xff\xfe{}", "malformed"),
        (b"f1", huge, "oversized"),
        (b"f1", ev(seq=10**18), "seq_gap"),
        (b"f1", ev(seq=2**63), "schema"),
        (b"f1", ev(seq=-1), "schema"),
        (b"f1", ev(ts=None), "bad_value"),
        (b"f1", ev(x=None), "schema"),
        (b"f1", ev(x={**x0, "salary": "NaN"}), "bad_value"),
        (b"f1", ev().replace(b'"ts":0.0', b'"ts":1e999'), "malformed"),
        (b"f1", ev(stream_id="x" * 190), "schema"),
        (b"f1", ev(stream_id="bad id/1"), "schema"),
    ]
    n_bad = len(bad)
    items, pending = [], list(bad)
    for i in range(60):
        items += [(b"f1", dumps(good["f1"][i])), (b"f.2", dumps(good["f.2"][i]))]
        if i % 4 == 3 and pending:
            items.append(pending.pop(0)[:2])
        if i in (20, 40):  # re-sent events: dropped as duplicates, never learned twice
            items += [(b"f1", dumps(good["f1"][i - 5])), (b"f.2", dumps(good["f.2"][i - 3]))]
    assert not pending
    ensure_topics(s)
    worker(s)
    produce_raw(s, s.topic("features"), items)

    preds = collect(s, "predictions", lambda p: len(p) >= 120, timeout=180)
    assert sorted((p["stream_id"], p["seq"]) for p in preds) == sorted(
        (sid, q) for sid in good for q in range(60))
    want = _expected_explanations(s, good)
    expl = collect(s, "explanations", lambda m: len(m) >= len(want), timeout=180)
    assert {(m["stream_id"], m["seq"], m["feature"]): m["value"] for m in expl} == want
    # nothing explained twice: the read above stops at len(want) messages, so a second one after
    # them went unseen; once the explainer has committed every task its outputs are all on the topic
    wait_for_commit(s, ["explain-tasks"])
    assert committed(s, "explanations")[1] == len(want)

    dls = collect(s, "dead-letters", lambda d: len(d) >= n_bad, timeout=60)
    assert sorted(d["reason"] for d in dls) == sorted(r for _, _, r in bad)
    big = next(d for d in dls if d["reason"] == "oversized")
    assert big["truncated"] and big["original_bytes"] == len(huge)
    assert big["original_sha256"] == hashlib.sha256(huge).hexdigest()
    assert huge.startswith(base64.b64decode(big["original"]))
    counters = worker_metrics(s)["counters"]
    assert counters["predictions"] == 120 and counters["duplicates_dropped"] == 4
    # the JSON has each profile's series and their totals by reason over the profiles
    by_profile = [v for k, v in counters.items() if k.startswith("dead_letters{") and "profile=" in k]
    totals = [v for k, v in counters.items() if k.startswith("dead_letters{") and "profile=" not in k]
    assert sum(by_profile) == n_bad and sum(totals) == n_bad
    assert "send_errors" not in str(counters)

    # bad labels on the labels topic, once every event is in: each one dead letter with its
    # reason, naming its labels record; the events (labelled in line) stay as they were
    def label(seq, y=1, sid="f1"):
        return orjson.dumps({"schema": "label_event/v1", "stream_id": sid, "seq": seq, "y": y, "ts": 0.0})

    bad_labels = [(b"f1", b"{nope", "malformed"), (b"f1", label(10**9), "label_unknown_seq"),
                  (b"f1", label(55, {"a": 1}), "label_type"), (b"f1", label(50), "label_already_labelled"),
                  (b"f1", label(3), "label_expired"), (b"x", label(56), "schema"),
                  (b"f1", orjson.dumps({"schema": "label_event/v1", "stream_id": "f1", "seq": 57}), "schema")]
    produce_raw(s, s.topic("labels"), [(k, v) for k, v, _ in bad_labels])
    dls = collect(s, "dead-letters", lambda d: len(d) >= n_bad + len(bad_labels), timeout=60)
    of_labels = [d for d in dls if d["source"]["topic"] == s.topic("labels")]
    assert sorted(d["reason"] for d in of_labels) == sorted(r for _, _, r in bad_labels)
    assert {base64.b64decode(d["original"]) for d in of_labels} == {v for _, v, _ in bad_labels}
    counters = worker_metrics(s)["counters"]
    assert counters["labels_received"] == counters["labels_dead_lettered"] == len(bad_labels)
    assert counters["predictions"] == 120 and counters.get("labels_learned", 0) == 0


def test_broker_outage_mid_stream_is_two_log_lines_and_loses_nothing(tmp_path):
    """Own broker (the shared one must not stop): stopped for 15 s mid-stream, then restarted.
    The outage is one line when it starts and one when it ends, not one per failed request."""
    import signal
    import time

    from streamxai.local.broker import LocalBroker
    from streamxai.local.ports import free_ports

    port, controller_port = free_ports(2)
    broker = LocalBroker(port, controller_port, data_dir=tmp_path / "kafka", heap="384m", die_with_parent=True)
    broker.start(timeout=120)
    proc = None
    try:
        s = make_settings(broker.bootstrap, str(tmp_path / "state"), explain_groups=1, explainers=["ipfi"],
                          shutdown_timeout_s=5.0)
        events = list(agrawal_events("o", 300, seed=1))
        ensure_topics(s)
        log_file = tmp_path / "worker.log"
        proc = spawn_worker(s, log_file=str(log_file), loglevel="warning")
        produce_raw(s, s.topic("features"), [(b"o", dumps(e)) for e in events[:150]])
        collect(s, "explanations", lambda ms: any(m["seq"] >= 140 for m in ms), timeout=120)
        before = len(log_file.read_text().splitlines())
        broker.stop()
        time.sleep(15)
        broker.start(timeout=120)
        produce_raw(s, s.topic("features"), [(b"o", dumps(e)) for e in events[150:]])
        want = {(q, f): v for (_, q, f), v in _expected_explanations(s, {"o": events}).items()}
        expl = collect(s, "explanations", lambda ms: {(m["seq"], m["feature"]) for m in ms} >= set(want), timeout=180)
        assert {(m["seq"], m["feature"]): m["value"] for m in expl} == want
        deadline = time.monotonic() + 30
        while "reachable again" not in log_file.read_text() and time.monotonic() < deadline:
            time.sleep(1)
        lines = log_file.read_text().splitlines()[before:]
        assert proc.poll() is None
        outage = [ln for ln in lines if "Kafka broker" in ln]
        assert len(outage) == 2 and "unreachable" in outage[0] and "reachable again" in outage[1], lines
        # besides those two, only Faust's own note that a commit overran its interval may remain
        assert len(lines) <= 6, "\n".join(lines)
        assert "Traceback" not in "\n".join(lines)
        # stopped while the broker is down: the consumer's fetch, waiting out its retry back-off,
        # is cancelled by aiokafka's close, and the cancellation must not escape the consumer
        # thread (a traceback in the log, the client left open)
        before = len(log_file.read_text().splitlines())
        broker.stop()
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(s.shutdown_timeout_s + 30)  # a bound on the wait, not a measurement
        text = "\n".join(log_file.read_text(errors="replace").splitlines()[before:])
        assert rc in (0, 1) and "Traceback" not in text, text[-3000:]
    finally:
        if proc is not None:
            stop_worker(proc)
        broker.stop()


def test_shedding_decisions_survive_a_sigkill(bootstrap, tmp_path):
    """A worker SIGKILLed mid-burst while shedding replays with the recorded decisions: its explained count does not jump."""
    import signal

    from streamxai.local.ports import free_port

    s = make_settings(bootstrap, str(tmp_path / "state"), explain_groups=1, explainers=["ipfi"],
                      max_lag_s=0.05, checkpoint_every=0, emit_every=5)
    events = list(agrawal_events("sh", 1500, seed=4))
    ensure_topics(s)
    first = spawn_worker(s, log_file=str(tmp_path / "a.log"), loglevel="warning")
    procs = [first]
    try:
        produce_raw(s, s.topic("features"), [(b"sh", dumps(e)) for e in events[:1000]])
        collect(s, "explanations", lambda ms: any(m["seq"] >= 300 for m in ms), timeout=180)
        # a commit mid-burst (an explain-tasks record carries up to 32 tasks)
        wait_for_commit(s, ["explain-tasks"], at_least=5)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        again = s.replace(web_port=free_port())
        procs.append(spawn_worker(again, log_file=str(tmp_path / "b.log"), loglevel="warning"))
        produce_raw(s, s.topic("features"), [(b"sh", dumps(e)) for e in events[1000:]])
        # the decision on the last event is recorded once the explainer has seen every task
        collect(s, "explain-decisions", lambda d: any(x["seq"] == 1499 for x in d), timeout=240)
        counters = worker_metrics(again)["counters"]
        assert counters.get("replayed_tasks", 0) > 0 and counters.get("shed_events", 0) > 0, counters
        expl = collect_all(s, "explanations")
    finally:
        for p in procs:
            if p.poll() is None:
                stop_worker(p)
    by_key: dict[tuple, set] = {}
    for m in expl:
        by_key.setdefault((m["seq"], m["feature"]), set()).add((m["value"], m["n_explained"]))
    # an explanation published twice (before and after the kill) has the same value and count
    assert all(len(v) == 1 for v in by_key.values()), {k: v for k, v in by_key.items() if len(v) > 1}
    counts = [next(iter(by_key[k]))[1] for k in sorted(by_key) if k[1] == "salary"]
    # and the group published every emit_every-th explained event: no jump at the restart. (The
    # first count is emit_every - 1 if the stream's first event was explained: it only fills
    # iPFI's storage; emit_every if it was shed, which depends on how soon the explainer got it.)
    assert counts[0] in (s.emit_every - 1, s.emit_every), counts
    assert counts == list(range(counts[0], counts[0] + s.emit_every * len(counts), s.emit_every))
    assert counts[-1] < 1500  # it did shed
    for name in ("a.log", "b.log"):
        assert "Traceback" not in (tmp_path / name).read_text(errors="replace")


def test_a_dead_letter_limit_over_the_topics_limit_stops_the_worker(bootstrap, tmp_path):
    import time

    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
    from streamxai.kafka.config import confluent_config
    from streamxai.schemas import ConfigError

    s = make_settings(bootstrap, str(tmp_path / "state"))
    ensure_topics(s)  # the defaults fit Kafka's default limit
    admin = AdminClient(confluent_config(s))
    entry = ConfigEntry("max.message.bytes", "200000", incremental_operation=AlterConfigOpType.SET)
    res = ConfigResource(ConfigResource.Type.TOPIC, s.topic("dead-letters"), incremental_configs=[entry])
    admin.incremental_alter_configs([res])[res].result(timeout=30)
    plain = ConfigResource(ConfigResource.Type.TOPIC, s.topic("dead-letters"))
    for _ in range(100):  # the broker applies the change a moment after acknowledging it
        if admin.describe_configs([plain])[plain].result(timeout=30)["max.message.bytes"].value == "200000":
            break
        time.sleep(0.1)
    with pytest.raises(ConfigError, match=r"accepts messages up to 200000 bytes .* at most 198976"):
        ensure_topics(s)
    ensure_topics(s.replace(max_dead_letter_bytes=198_976))


# --- a damaged state_dir ---------------------------------------------------------------------------

def _damage_checkpoint_topic(s, bootstrap):
    """Overwrite every checkpoint record on the topic with a damaged copy (the next damage per
    record); returns the damages used per kind."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from streamxai.kafka.checkpoint_topic import CHECKPOINT_TOPIC

    topic = s.topic(CHECKPOINT_TOPIC)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "damage", "enable.auto.commit": False})
    newest = {}
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: watermarks(c, topic, p, timeout=10)[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        todo = {p for p, end in ends.items() if end > 0}
        for _ in range(200):  # bounded: a few thousand records at most
            if not todo:
                break
            for msg in c.consume(500, 0.5):
                if not msg.error():
                    newest[msg.key()] = (msg.partition(), msg.value())
                    if msg.offset() >= ends[msg.partition()] - 1:
                        todo.discard(msg.partition())
        assert not todo, "could not read the checkpoint topic"
    finally:
        c.close()
    p = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 64 * 1024 * 1024})
    used: dict[str, set] = {}
    for i, (rk, (part, value)) in enumerate(sorted(newest.items())):
        how = DAMAGES[i % len(DAMAGES)]
        used.setdefault(rk.split(b"/")[0].decode(), set()).add(how)
        p.produce(topic, key=rk, value=damaged(value, how), partition=part)
    assert p.flush(30) == 0
    return used


def _damage_files(state_dir):
    used: dict[str, set] = {}
    for kind_dir in sorted((state_dir / "checkpoints").iterdir()):
        for i, path in enumerate(sorted(kind_dir.iterdir())):
            how = DAMAGES[i % len(DAMAGES)]
            used.setdefault(kind_dir.name, set()).add(how)
            path.write_bytes(damaged(path.read_bytes(), how))
    return used


@pytest.mark.parametrize("store", ["local", "kafka"])
def test_a_damaged_state_dir_is_set_aside_and_rebuilt_by_replay(bootstrap, tmp_path, store):
    """Every checkpoint damaged between two runs (on disk or on the topic) and every other state_dir file
    overwritten: the key file and checkpoints are set aside, the states rebuilt by replay to the core's values."""
    import os

    from streamxai.local.ports import free_port
    from streamxai.settings import Secret

    state = tmp_path / "state"
    s = make_settings(bootstrap, str(state), explain_groups=1, explainers=["ipfi"], checkpoint_every=15,
                      checkpoint_store=store, checkpoint_key=Secret("k" * 32 if store == "kafka" else ""))
    streams = {f"d{i}": list(agrawal_events(f"d{i}", 90, seed=20 + i)) for i in range(4)}
    want = _expected_explanations(s, streams)
    ensure_topics(s)

    def produce(lo, hi):
        produce_raw(s, s.topic("features"), [(sid.encode(), dumps(e)) for i in range(lo, hi)
                                             for sid, evs in streams.items() for e in evs[i:i + 1]])

    def explained(upto):
        return lambda ms: {(m["stream_id"], m["seq"], m["feature"]) for m in ms} >= {
            k for k in want if k[1] < upto}

    first = spawn_worker(s, log_file=str(tmp_path / "a.log"), loglevel="warning")
    try:
        produce(0, 70)
        collect(s, "explanations", explained(70), timeout=180)
        # the change agent trails the explanations: every stage takes all of it (and checkpoints
        # what it takes) before the stop, so each kind has as many checkpoints to damage
        wait_for_commit(s, ["explain-tasks", "drift-feed"])
    finally:
        stop_worker(first)
    if store == "local":
        used = _damage_files(state)
        others = [p for p in state.rglob("*") if p.is_file() and (state / "checkpoints") not in p.parents]
        assert state / "checkpoint.key" in others
        for path in others:
            path.write_bytes(os.urandom(max(path.stat().st_size, 1)))
        garbage = (state / "checkpoint.key").read_bytes()
        again = s.replace(web_port=free_port())
    else:
        used = _damage_checkpoint_topic(s, bootstrap)
        again = s.replace(web_port=free_port(), state_dir=str(tmp_path / "another-host"))
    assert set(used) == {"model", "explain", "change"} and all(len(d) == len(DAMAGES) for d in used.values()), used
    second = spawn_worker(again, log_file=str(tmp_path / "b.log"), loglevel="warning")
    try:
        produce(70, 90)
        expl = collect(s, "explanations", explained(90), timeout=180)
        every_event = {(sid, i) for sid in streams for i in range(90)}
        predicted = collect(s, "predictions", lambda ms: {(m["stream_id"], m["seq"]) for m in ms} >= every_event,
                            timeout=60)
        counters = worker_metrics(again)["counters"]
    finally:
        stop_worker(second)
    got = {(m["stream_id"], m["seq"], m["feature"]): m["value"] for m in expl}
    assert {k: got[k] for k in want} == want  # rebuilt by replay: the in-process core's values
    assert {(m["stream_id"], m["seq"]) for m in predicted} >= every_event  # the next events predicted too
    assert counters.get("checkpoints_restored", 0) == 0 and counters.get("replayed_events", 0) > 0, counters
    log = (tmp_path / "b.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
    refused = [ln for ln in log.splitlines() if "refusing checkpoint" in ln]
    assert refused and all("set aside" in ln and "rebuilt by replay" in ln for ln in refused), log[-3000:]
    assert len(refused) == len(set(refused))  # one line per checkpoint
    if store == "local":
        aside = {p.parent.name for p in (state / "checkpoints").rglob("*.refused")}
        assert aside == {"model", "explain", "change"}
        assert (state / "checkpoint.key.refused").read_bytes() == garbage  # set aside, not deleted
        new_key = (state / "checkpoint.key").read_bytes()
        assert len(new_key) == 64 and new_key.decode() not in log  # a key is never shown
        replaced = [ln for ln in log.splitlines() if "checkpoint key file" in ln]
        assert len(replaced) == 1 and "set aside" in replaced[0] and "new key" in replaced[0], log[-3000:]
        assert counters.get("checkpoint_keys_replaced") == 1, counters
    else:
        assert counters.get("checkpoint_keys_replaced", 0) == 0, counters


# --- a worker whose topics are deleted ------------------------------------------------------------

def test_a_worker_whose_topics_are_deleted_stops_and_sigterm_is_bounded(tmp_path):
    """Without topic auto-creation, topics deleted mid-flow stop the worker with one error line naming them,
    and a SIGTERM stops it within shutdown_timeout_s even when its sends can never complete."""
    import signal

    from confluent_kafka.admin import AdminClient
    from streamxai.local.broker import LocalBroker
    from streamxai.local.ports import free_ports

    port, controller_port = free_ports(2)
    broker = LocalBroker(port, controller_port, data_dir=tmp_path / "kafka", heap="384m", die_with_parent=True,
                         auto_create_topics=False)
    broker.start(timeout=120)
    procs = []
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for run in ("stops", "sigterm"):
            s = make_settings(broker.bootstrap, str(tmp_path / run), explain_groups=1, explainers=["ipfi"],
                              shutdown_timeout_s=5.0)
            ensure_topics(s)
            log_file = tmp_path / f"{run}.log"
            proc = spawn_worker(s, log_file=str(log_file), loglevel="warning")
            procs.append(proc)
            produce_raw(s, s.topic("features"), [(b"t", dumps(e)) for e in agrawal_events("t", 2000, seed=5)])
            collect(s, "predictions", lambda m: len(m) >= 20, timeout=120)
            ours = [t for t in admin.list_topics(timeout=10).topics if t.startswith(s.topic_prefix)]
            for fut in admin.delete_topics(ours, operation_timeout=30).values():
                fut.result(timeout=30)
            if run == "sigterm":
                proc.send_signal(signal.SIGTERM)
                rc = proc.wait(s.shutdown_timeout_s + 15)  # a bound on the wait, not a measurement
            else:
                rc = proc.wait(120)  # stops by itself (the topic check runs every 10 s)
            text = log_file.read_text(errors="replace")
            assert "Traceback" not in text, text[-3000:]
            if run == "stops":
                assert rc == 2, text[-3000:]
                gone = [ln for ln in text.splitlines() if "were deleted" in ln]
                assert len(gone) == 1 and s.topic("features") in gone[0] and "stopping" in gone[0], text[-3000:]
                assert "did not stop within" not in text  # the one line says it all
                assert text.count("not found in cluster metadata") <= 10, "the client's metadata errors are not collapsed"
            else:
                assert rc in (0, 1), text[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        broker.stop()


def test_a_worker_whose_faust_service_crashes_at_start_exits_with_an_error(bootstrap, tmp_path):
    # Faust's web server cannot bind (the port taken after the worker's own check): the worker exits non-zero,
    # so a supervisor does not take it for a clean stop
    import os
    import socket
    import subprocess
    import sys

    from streamxai.worker import settings_env

    s = make_settings(bootstrap, str(tmp_path / "state"), features=["a", "b"])
    script = ("import os, sys\nimport streamxai.worker as w\nfrom streamxai.settings import load_settings\n"
              "s = load_settings(env=os.environ)\nw.check_web_port = lambda s: None\n"
              "sys.exit(w.run_worker(s, ('model', 'explain', 'change'), 'warning'))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}
    env.update(settings_env(s))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", s.web_port))
        taken.listen()
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120)
    out = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    assert "address already in use" in out, out[-3000:]
    assert done.returncode == 2 and "the worker stopped on the error above" in out, out[-3000:]
