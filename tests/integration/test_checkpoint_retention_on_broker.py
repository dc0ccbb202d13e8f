"""A SIGKILL on a fast stream: every stage restores a checkpoint a commit covers and replays only what was
not committed, though each key writes several checkpoints between two commits."""

from __future__ import annotations

import signal

import pytest
from helpers.pipeline_runs import (
    collect,
    explanation_values,
    make_settings,
    reference_values,
    until,
    wait_for_commit,
    wait_for_members,
    worker_metrics,
)
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.demo_stream import agrawal_events
from streamxai.local.ports import free_port
from streamxai.settings import Secret
from streamxai.worker import spawn_worker, stop_worker

N_EVENTS = 1000
FIRST = 200  # committed by every stage before the rest comes; the worker is killed while busy with the rest
TAIL = 100  # sent after the restart, so that every stage has messages then however far it got before the kill

#: what each stage counts as replayed
REPLAYED = {"model": "replayed_events", "explain": "replayed_tasks", "change": "replayed_explanations"}


@pytest.mark.parametrize("store", ["local", "kafka"])
def test_a_fast_stream_restores_a_checkpoint_in_every_stage_after_a_sigkill(bootstrap, tmp_path, store):
    # checkpoints every 10 messages of a key: the model's state writes one every 10 events, an
    # explainer group's every 10 tasks, the change state's every 2 events (27 explanations per 5)
    s = make_settings(bootstrap, str(tmp_path / "state"), checkpoint_every=10, checkpoint_store=store,
                      checkpoint_key=Secret("k" * 32) if store == "kafka" else Secret(""))
    events = list(agrawal_events("fast", N_EVENTS, seed=8))
    expected = reference_values(s, events)
    ensure_topics(s)
    procs = [spawn_worker(s, log_file=str(tmp_path / "worker-0.log"), loglevel="warning")]
    try:
        wait_for_members(s, 1)  # the group's coordinator answers (for wait_for_commit)
        produce_events(s, events[:FIRST])
        wait_for_commit(s, ["features", "arrivals", "explain-tasks", "drift-feed"], timeout=90)
        produce_events(s, events[FIRST:-TAIL])  # the rest at once
        # killed as soon as its model stage has read 100 events of the rest: the model stage
        # reads all of it within a fraction of a second, and the explain and change stages
        # follow it, each writing checkpoints that no commit covers yet
        seen: dict = {}

        def reading_the_rest() -> bool:
            try:
                seen.update(worker_metrics(s, timeout=2)["counters"])
            except OSError:  # its web server is not up yet
                return False
            return seen.get("events_in", 0) >= FIRST + 100

        until(reading_the_rest, 60, "the worker to read 100 events of the rest", every=0.01,
              last=lambda: seen.get("events_in"))
        procs[0].send_signal(signal.SIGKILL)  # no shutdown checkpoints, no final commit
        procs[0].wait(10)
        restarted = s.replace(web_port=free_port())
        procs.append(spawn_worker(restarted, log_file=str(tmp_path / "worker-1.log"), loglevel="warning"))
        produce_events(s, events[-TAIL:])
        msgs = collect(s, "explanations", lambda ms: len(explanation_values(ms)) >= len(expected), timeout=120)
        assert explanation_values(msgs) == expected  # restored and replayed: every value exact

        rebuilding: dict = {}

        def every_stage_rebuilt() -> dict | None:
            try:
                counters = worker_metrics(restarted)["counters"]
            except OSError:  # its web server is not up yet
                return None
            rebuilding.update((k, v) for k, v in counters.items() if k.startswith(("checkpoints_", "replayed_")))
            built = [f"checkpoints_restored{{stage={stage}}}" in counters or counters.get(replayed, 0) > 0
                     for stage, replayed in REPLAYED.items()]
            return dict(rebuilding) if all(built) else None

        counters = until(every_stage_rebuilt, 60, "each stage to rebuild its states", last=lambda: rebuilding)
        for stage in REPLAYED:  # from a checkpoint: one was kept that a commit covers
            assert counters.get(f"checkpoints_restored{{stage={stage}}}", 0) >= 1, (stage, counters)
        assert counters.get("checkpoints_restored{stage=explain}", 0) >= 2, counters  # both groups
        # at most about what was not committed was replayed: never a key's whole history, which
        # is at least the FIRST events the worker had committed before the kill
        assert counters.get("replayed_events", 0) < FIRST, counters
        assert counters.get("replayed_tasks", 0) < 2 * FIRST, counters
        assert counters.get("replayed_explanations", 0) < FIRST * 27 // s.emit_every, counters
    finally:
        for p in procs:
            stop_worker(p)
    for i in range(len(procs)):
        log = (tmp_path / f"worker-{i}.log").read_text(errors="replace")
        assert "Traceback" not in log, f"worker {i} logged a traceback:\n{log[-3000:]}"
