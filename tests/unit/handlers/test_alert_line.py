"""The worker's line for a change episode: each series once in the episode's order, its first change's seq and
where the new regime began, as the message tells them."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from helpers.arrivals import record_arrivals, run_handlers
from helpers.handler_inputs import delayed_settings
from helpers.partition_log import PartitionLog
from helpers.streams import threshold_events
from streamxai.handlers.alert_line import episode_line
from streamxai.local.demo_stream import labels_later
from streamxai.schemas import ChangeEpisode


@pytest.fixture(scope="module")
def logged_run():
    """A stream whose labels come 12 events late (so positions and seqs differ), with its log."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("streamxai")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        log = PartitionLog()
        record_arrivals(log, labels_later(threshold_events("a", 400, drift_at=200, seed=1), 12))
        run = run_handlers(delayed_settings(), log)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return run, [r for r in records if "change episode" in r.getMessage()]


def test_the_line_tells_the_first_change_and_the_new_regime_as_seqs_of_events(logged_run):
    run, lines = logged_run
    firsts = {ep["first_position"]: ep for ep in reversed(run.of("change-episodes"))}  # each episode's first message
    assert firsts and len(lines) == len(firsts)
    for ep, rec in zip(sorted(firsts.values(), key=lambda e: e["first_position"]), lines, strict=True):
        assert ep["first_seq"] != ep["first_position"]  # labels later: a position is no seq
        text = rec.getMessage()
        assert f"first change detected at seq {ep['first_seq']}" in text
        assert f"new regime began at seq {ep['cut_seq']}" in text
        assert str(ep["cut_position"]) not in text.split(";")[0]
        assert rec.levelno == (logging.WARNING if ep["alert"] else logging.INFO)


def _episode(logged_run) -> ChangeEpisode:
    run, _ = logged_run
    m = run.of("change-episodes")[0]
    fields = {f.name for f in dataclasses.fields(ChangeEpisode)}
    return ChangeEpisode(**{k: v for k, v in m.items() if k in fields})


def test_each_series_is_named_once_in_the_episodes_order(logged_run):
    ep = _episode(logged_run)
    change = ep.changes[0]
    named = [("ipdp", "nswprice"), ("ipdp", "period"), ("ipdp", "nswprice"), ("ipdp", "nswdemand"),
             ("ipdp", "nswprice"), ("ipfi", "period")]
    ep = dataclasses.replace(ep, changes=[{**change, "explainer": e, "feature": f} for e, f in named])
    text = episode_line(ep)
    assert "ipdp/nswprice, ipdp/period, ipdp/nswdemand, ipfi/period" in text
    assert text.count("ipdp/nswprice") == 1
    assert "4 series" in text


def test_a_cut_no_longer_known_is_said_so(logged_run):
    ep = dataclasses.replace(_episode(logged_run), cut_seq=None)
    text = episode_line(ep)
    assert "new regime began at seq" not in text and "None" not in text
