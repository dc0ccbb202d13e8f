"""Faust's check of stalled partitions ("Stream has not started/stopped processing") never reports a worker
processing a steady backlog, through Faust's streams or the bulk path; the worker runs the check every
second with a 10 s timeout and reports each check of a partition with records waiting."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from helpers.pipeline_runs import collect, make_settings
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_raw
from streamxai.local.demo_stream import agrawal_events
from streamxai.schemas import dumps
from streamxai.worker import settings_env

#: run in the worker's process (``python -c``): Faust's event-path check every 1 s (2.5 commit
#: intervals) with a 10 s timeout, fetches of at most 8 KiB a partition (so that a backlog stays on
#: the broker, where the check sees it), stream buffers of 16 records (a partition's first record
#: waits behind them, well within the timeout), and a line on stdout for each partition the check
#: finds with records waiting (its highwater past the fetch position)
_CHECKED_WORKER = """
import sys
import faust
from aiokafka import TopicPartition
from faust.transport.drivers import aiokafka as driver

app_init = faust.App.__init__

def short_checks(self, *args, **kwargs):
    app_init(self, *args, **{**kwargs, "stream_processing_timeout": 10.0, "broker_commit_interval": 0.4,
                             "consumer_max_fetch_size": 8192, "stream_buffer_maxsize": 16})

faust.App.__init__ = short_checks
verify = driver.AIOKafkaConsumerThread.verify_event_path

def reported(self, now, tp):
    assignment = self._ensure_consumer()._fetcher._subscriptions.subscription.assignment
    state = assignment.state_value(TopicPartition(tp.topic, tp.partition)) if assignment else None
    if state is not None and state.highwater is not None and state.position is not None \\
            and state.highwater > state.position:
        print(f"checked {now - self.time_started:.1f} s after the start, with records waiting:", tp.topic, flush=True)
    return verify(self, now, tp)

driver.AIOKafkaConsumerThread.verify_event_path = reported
from streamxai.cli import main
sys.exit(main(["worker", "--loglevel", "warning"]))
"""


#: the stages whose partitions Faust's streams take
BACKLOGGED = {"arrivals", "explain-tasks", "drift-feed"}
#: a check at or past this many seconds after the start can report a stall (the worker's
#: stream_processing_timeout in _CHECKED_WORKER)
TIMEOUT_S = 10.0


def _backlog_checks(log: str) -> set[str]:
    """The internal topics (short names) a check past the timeout found records waiting on."""
    return {line.rsplit(".", 1)[-1] for line in log.splitlines()
            if line.startswith("checked ") and float(line.split()[1]) >= TIMEOUT_S}


def test_a_worker_processing_a_backlog_is_not_reported_as_stalled(bootstrap, tmp_path):
    s = make_settings(bootstrap, str(tmp_path / "state"), explain_groups=1, emit_every=5, checkpoint_every=0)
    # three streams, first and then chunks of each until a check past the timeout saw a backlog
    # on a stage Faust's streams take (bounded: at most ``most`` events of each)
    most, first, chunk = 9000, 150, 300
    streams = [list(agrawal_events(f"k{i}", most, seed=i)) for i in range(3)]
    ensure_topics(s)

    def send(events: list) -> None:
        produce_raw(s, s.topic("features"), [(e.stream_id.encode(), dumps(e)) for e in events])

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STREAMXAI_")}, **settings_env(s)}
    log_path = tmp_path / "worker.log"
    with open(log_path, "ab") as log:
        worker = subprocess.Popen([sys.executable, "-c", _CHECKED_WORKER], env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # every partition's stream takes its first records before the backlog comes: at the start,
        # a partition's first record may wait behind the others' for longer than the short timeout
        send([e for events in streams for e in events[:first]])
        collect(s, "explanations", lambda ms: len({m["stream_id"] for m in ms}) == 3, timeout=120)
        # a chunk a second: more than the worker takes in one, so the backlog lasts on every stage
        sent = first
        while sent < most and not _backlog_checks(log_path.read_text(errors="replace")) & BACKLOGGED:
            send([e for events in streams for e in events[sent:sent + chunk]])
            sent += chunk
            time.sleep(1.0)
        n = 3 * sent
        preds = collect(s, "predictions", lambda ms: len({(m["stream_id"], m["seq"]) for m in ms}) >= n, timeout=180)
    finally:
        worker.terminate()
        worker.wait(30)
    log = log_path.read_text(errors="replace")
    assert len({(p["stream_id"], p["seq"]) for p in preds}) == n, log[-3000:]
    # the precondition: a check past the timeout found records waiting on a partition of a stream
    # (the intake's, taken in bulk, drain in a few fetches; tests/unit/kafka/test_bulk_fetch.py
    # covers them)
    checked = _backlog_checks(log)
    assert checked & BACKLOGGED, f"no check found a backlog on {checked}; nothing tested\n{log[-3000:]}"
    stalled = [line for line in log.splitlines() if "Stream has not started processing" in line
               or "Stream stopped processing" in line]
    assert not stalled, "\n".join(stalled[:10])
