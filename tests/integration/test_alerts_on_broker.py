"""An alert pages once across a crash: a change worker SIGKILLed after sending an alert and before
committing sends it again on restart under one ``alert_key``; a deduping pager pages once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request

from confluent_kafka import KafkaException
from helpers.alerts import Pager, stepped_explanations, uncommitted_after_an_alert
from helpers.pipeline_runs import collect, collect_all, committed, make_settings, until
from streamxai.handlers import ChangeHandler
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_raw
from streamxai.local.ports import free_port
from streamxai.worker import settings_env, spawn_worker, stop_worker


def _alert_sent(s, times: int):
    """Until ``change-episodes`` holds ``times`` open messages of alerting episodes."""
    def enough(ms):
        return sum(m["alert"] and m["status"] == "open" for m in ms) >= times
    got = collect(s, "change-episodes", enough, timeout=180)
    assert enough(got), f"{times} alerts not on change-episodes in time: {got}"


def _committed(s) -> tuple[int, int]:
    """``(committed, produced)`` on ``drift-feed``, asked again while the group's coordinator moves."""
    def ask():
        try:
            return committed(s, "drift-feed")
        except KafkaException:  # NOT_COORDINATOR while the group's coordinator loads
            return None
    return until(ask, 60, f"the committed offsets of group {s.app_id}")  # type: ignore[return-value]


def _wait_for_commit(s, at_least: int | None = None) -> None:
    """Until the group has committed ``at_least`` messages of ``drift-feed`` (None: all on it)."""
    def enough():
        done, ends = _committed(s)
        return done >= (ends if at_least is None else at_least)
    until(enough, 180, f"group {s.app_id} to commit {at_least or 'everything'} on drift-feed")


def test_an_alert_sent_before_a_crash_and_again_after_it_pages_once(bootstrap, tmp_path):
    s = make_settings(bootstrap, str(tmp_path / "state"), explainers=["ipfi"], change_warmup=0,
                      change_episode_gap=500, checkpoint_every=0, emit_every=5)
    log = stepped_explanations(s.emit_every)
    records = log.items("explanations", 0)
    # where the alert opens (the offset of its explanation on the feed's one partition of stream d)
    reference = ChangeHandler(s)
    sent_at = next(off for off, (key, value) in enumerate(records)
                   if any(b'"alert_key":"' in o.value for o in reference.on_message(value, key, log.source(
                       "explanations", 0, off))))
    ensure_topics(s)
    feed = s.topic("drift-feed")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}, **settings_env(s)}
    procs = []
    try:
        with open(tmp_path / "a.log", "ab") as out:
            first = subprocess.Popen([sys.executable, "-c", uncommitted_after_an_alert()], env=env, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(first)
        produce_raw(s, feed, records[:1000])  # before the step: processed and committed
        _wait_for_commit(s, at_least=1000)
        produce_raw(s, feed, records[1000:])
        _alert_sent(s, 1)
        first.send_signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
        done, ends = _committed(s)
        assert 1000 <= done <= sent_at < ends  # the alert's explanation is not committed: it comes again

        again = s.replace(web_port=free_port())
        procs.append(spawn_worker(again, roles=("change",), log_file=str(tmp_path / "b.log"), loglevel="warning"))
        _alert_sent(s, 2)
        _wait_for_commit(s)
        with urllib.request.urlopen(f"http://127.0.0.1:{again.web_port}/metrics", timeout=10) as r:
            exposition = r.read().decode()
    finally:
        for p in procs:
            if p.poll() is None:
                stop_worker(p)

    episodes = collect_all(s, "change-episodes")
    alerts = [m for m in episodes if m["alert"]]
    assert [m["status"] for m in alerts if m["status"] == "open"] == ["open", "open"]  # on the topic twice
    assert {m["alert_key"] for m in alerts} == {f"d/{alerts[0]['first_position']}"}  # one key, no other
    opened = [{k: v for k, v in m.items() if k != "_partition"} for m in alerts if m["status"] == "open"]
    assert opened[0] == opened[1]  # equal, as after any redelivery
    pager = Pager()
    assert sum(pager.take(m) for m in episodes) == 1 and pager.pages == [alerts[0]["alert_key"]]
    series = [line for line in exposition.splitlines() if line.startswith("streamxai_alert{")]
    assert series == [f'streamxai_alert{{alert_key="{alerts[0]["alert_key"]}",kind="degradation",stream_id="d"}} 1.0']
    for name in ("a.log", "b.log"):
        assert "Traceback" not in (tmp_path / name).read_text(errors="replace")
