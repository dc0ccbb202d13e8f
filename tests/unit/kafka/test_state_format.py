"""Checkpoints of another code version: a state format in the seal, and a restored state that fails is
rebuilt from the whole history once, not for every message."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import pickle
from collections import deque
from pathlib import Path

import orjson
import pytest
from helpers.handler_inputs import one_group_settings
from helpers.partition_log import PartitionLog
from streamxai.core.stream import StreamExplainer
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler, Source
from streamxai.kafka import checkpoint_seal
from streamxai.kafka.checkpoint_seal import STATE_FORMAT
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.local.demo_stream import agrawal_events, labels_later
from streamxai.schemas import dumps

SECRET = b"0123456789abcdef"


def _settings(**over):
    return one_group_settings(**{"explainers": ["ipfi", "ipdp"], "checkpoint_every": 25, **over})


def _tasks(s, n=120, seed=4):
    """The explain tasks of ``n`` events of stream ``e``, as one partition's log."""
    log = PartitionLog()
    mh = ModelHandler(s)
    for off, ev in enumerate(agrawal_events("e", n, seed=seed)):
        for o in mh.on_message(dumps(ev), b"e", Source("features", 0, off)):
            if o.topic == "explain-tasks":
                log.append("explain-tasks", 0, o.key, o.value)
    return log


def _run(h, log, offsets):
    out = {}
    for off in offsets:
        key, value = log.items("explain-tasks", 0)[off]
        src = Source("explain-tasks", 0, off)
        h.needs_recovery(key, src)
        for o in h.on_message(value, key, src):
            if o.topic != "drift-feed":  # the same explanations again, for the change agent
                out.setdefault(o.topic, []).append(orjson.loads(o.value))
    return out


def _explanations_from(whole, seq):
    return [m for m in whole["explanations"] if m["seq"] >= seq]


@pytest.mark.slow
def test_a_checkpoint_of_another_state_format_is_set_aside_and_rebuilt_by_replay(tmp_path, caplog, monkeypatch):
    s = _settings()
    log = _tasks(s)
    whole = _run(ExplainHandler(s), log, range(120))
    store = FileCheckpointStore(tmp_path, every=25, secret=SECRET)
    _run(ExplainHandler(s, checkpoints=store), log, range(80))  # checkpoints after tasks 24, 49 and 74
    monkeypatch.setattr(checkpoint_seal, "STATE_FORMAT", STATE_FORMAT + 1)  # the next version of the code
    resumed = ExplainHandler(s, history=log.history, checkpoints=store)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        again = _run(resumed, log, range(61, 120))
    assert again["explanations"] == _explanations_from(whole, 61)
    assert resumed.metrics.get("checkpoints_restored") == 0
    assert resumed.metrics.get("replayed_tasks") == 61  # the whole history: nothing restored
    refusals = [r.getMessage() for r in caplog.records if "refusing checkpoint" in r.getMessage()]
    assert len(refusals) == 2, refusals  # both kept checkpoints of the key, one line each
    assert all(f"state format {STATE_FORMAT}" in r and f"reads format {STATE_FORMAT + 1}" in r for r in refusals)
    assert len(list((tmp_path / "explain").glob("*.refused"))) == 2  # renamed: never read again


def _legacy_blob(kind: str, key: bytes, state, topic: str, partition: int, offset: int) -> bytes:
    """A checkpoint as the version before state formats sealed it: no format in its header."""
    header = orjson.dumps({"kind": kind, "key_sha256": hashlib.sha256(key).hexdigest(),
                           "topic": topic, "partition": partition, "offset": offset})
    payload = pickle.dumps(state, protocol=5)
    tag = hmac.new(SECRET, header + b"\n" + payload, hashlib.sha256).hexdigest().encode()
    return b"streamxai-checkpoint/v2\n" + tag + b"\n" + header + b"\n" + payload


def test_a_checkpoint_sealed_before_state_formats_reads_as_format_1(tmp_path):
    seal = checkpoint_seal.CheckpointSeal(SECRET)
    blob = _legacy_blob("model", b"s", {"n": 3}, "arrivals", 0, 7)
    if STATE_FORMAT == 1:
        assert seal.open(blob, "model", b"s", "arrivals", 0) == ({"n": 3}, 7)
    else:
        with pytest.raises(checkpoint_seal.RefusedCheckpoint, match="state format 1"):
            seal.open(blob, "model", b"s", "arrivals", 0)


def test_the_seal_names_the_river_release_and_refuses_another(tmp_path, monkeypatch):
    seal = checkpoint_seal.CheckpointSeal(SECRET)
    blob = seal.seal("model", b"s", {"n": 1}, Source("arrivals", 0, 3))
    assert seal.open(blob, "model", b"s", "arrivals", 0) == ({"n": 1}, 3)
    monkeypatch.setattr(checkpoint_seal, "_river_release", lambda: "0.0.1")
    with pytest.raises(checkpoint_seal.RefusedCheckpoint, match="river 0.0.1"):
        seal.open(blob, "model", b"s", "arrivals", 0)


def test_a_restored_state_that_fails_is_rebuilt_from_the_whole_history_once(tmp_path, caplog):
    """An explainer group whose restored older state fails is rebuilt from the whole history once, not per task."""
    s = _settings()
    log = _tasks(s)
    whole = _run(ExplainHandler(s), log, range(120))
    store = FileCheckpointStore(tmp_path, every=25, secret=SECRET)
    h = ExplainHandler(s, checkpoints=store)
    _run(h, log, range(80))
    for kept in (store.load("explain", b"e/0", "explain-tasks", 0, before_offset=off) for off in (60, 80)):
        st, offset = kept
        del st.explainer._seen  # what an older version's state lacks: every step raises
        store.save("explain", b"e/0", st, Source("explain-tasks", 0, offset))
    resumed = ExplainHandler(s, history=log.history, checkpoints=store)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        again = _run(resumed, log, range(61, 120))
    assert "dead-letters" not in again
    assert again["explanations"] == _explanations_from(whole, 61)
    assert resumed.metrics.get("checkpoints_restored") == 1
    assert resumed.metrics.get("replayed_tasks") == 61  # then the whole history, once
    assert "fails after it was restored" in caplog.text
    assert len(list((tmp_path / "explain").glob("*.refused"))) == 2  # set aside, never restored again


def test_a_state_that_fails_on_every_message_is_not_rebuilt_for_every_message(monkeypatch, caplog):
    s = _settings()
    log = _tasks(s, n=200)
    h = ExplainHandler(s, history=log.history)
    _run(h, log, range(40))
    rebuilds = []
    real_rebuild = h._rebuild

    def counted(*a, **kw):
        rebuilds.append(a)
        return real_rebuild(*a, **kw)

    monkeypatch.setattr(h, "_rebuild", counted)
    real_step = StreamExplainer.step

    def broken(self, *a, **kw):
        raise RuntimeError("a bug in this version")

    monkeypatch.setattr(StreamExplainer, "step", broken)
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        out = _run(h, log, range(40, 140))
    letters = out["dead-letters"]
    assert len(letters) == 100 and "explanations" not in out  # every task accounted for
    assert len(rebuilds) <= 8, len(rebuilds)  # not one whole-history replay per task
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "fails on every message" in errors[0], errors  # one line says what to do
    assert {m["reason"] for m in letters} == {"explain_error", "state_error"}
    monkeypatch.setattr(StreamExplainer, "step", real_step)  # the bug goes away (e.g. a model that recovers)
    out = _run(h, log, range(140, 200))
    assert "explanations" in out  # the group is rebuilt again at its next try and explains


# --- the classes of checkpointed state, recorded per state format -----------------------------
SHAPES = Path(__file__).resolve().parents[2] / "helpers" / "state_shapes.json"


def _shapes(*roots) -> dict[str, list[str]]:
    """``{module.class: attributes}`` of every streamxai object reachable from ``roots`` (through
    attributes and containers; river's and numpy's objects are not entered)."""
    found: dict[str, set[str]] = {}
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        o = stack.pop()
        if id(o) in seen or o is None or isinstance(o, (str, bytes, int, float, bool)):
            continue
        seen.add(id(o))
        if isinstance(o, dict):
            stack += [*o.keys(), *o.values()]
            continue
        if isinstance(o, (list, tuple, set, frozenset, deque)):
            stack += list(o)
            continue
        t = type(o)
        if not t.__module__.startswith("streamxai."):
            continue
        attrs = set(vars(o)) if hasattr(o, "__dict__") else set()
        attrs |= {a for c in t.__mro__ for a in getattr(c, "__slots__", ()) if hasattr(o, a)}
        found.setdefault(f"{t.__module__}.{t.__qualname__}", set()).update(attrs)
        stack += [getattr(o, a) for a in attrs]
    return {k: sorted(v) for k, v in sorted(found.items())}


def _states() -> dict[str, list]:
    """The states a worker checkpoints, read back: labels later (some never) and inline with a drift, all three
    explainers, a categorical feature."""
    from helpers.arrivals import record_arrivals, run_handlers

    s = _settings(explainers=["ipfi", "isage", "ipdp"], categorical=["elevel"], change_warmup=0, change_min_samples=20,
                  change_episode_gap=100, emit_every=5)
    later = labels_later(agrawal_events("later", 150, seed=2), delay=20, unlabelled={5, 60})
    inline = agrawal_events("inline", 300, drift_at=150, f_before=0, seed=3)
    log = PartitionLog()
    record_arrivals(log, [*later, *inline])
    handlers = ModelHandler(s), ExplainHandler(s), ChangeHandler(s)
    run_handlers(s, log, model=lambda off: handlers[0], explain=lambda p, off: handlers[1],
                 change=lambda off: handlers[2])
    assert handlers[2].metrics.get("change_events") > 0  # the change state holds changes
    return {h.STAGE: [pickle.loads(pickle.dumps(st, protocol=5)) for st in h.states.values()] for h in handlers}


@pytest.mark.slow
def test_the_checkpointed_state_classes_are_those_recorded_for_this_state_format():
    """The checkpointed classes' attributes are those recorded for STATE_FORMAT (pipeline/kafka/checkpoint_seal.py)."""
    now = {stage: _shapes(*states) for stage, states in _states().items()}
    recorded = orjson.loads(SHAPES.read_bytes()) if SHAPES.exists() else {}
    if os.environ.get("STREAMXAI_RECORD_STATE_SHAPES"):
        recorded[str(STATE_FORMAT)] = now
        SHAPES.write_bytes(orjson.dumps(recorded, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    want = recorded.get(str(STATE_FORMAT))
    assert want == now, (
        f"the classes of checkpointed state differ from those recorded for STATE_FORMAT {STATE_FORMAT} "
        f"({SHAPES.name}). If a checkpoint of the version before still restores and runs (a new attribute "
        "with a class-level default or a __setstate__ that fills it in, tested), record the new shapes under "
        "the same format; if not (a class gone, an attribute renamed or needed), raise STATE_FORMAT first, so "
        "older checkpoints are set aside and replayed. Record with STREAMXAI_RECORD_STATE_SHAPES=1 "
        f"pytest {Path(__file__).name} -k checkpointed_state_classes. Differences: "
        + "; ".join(f"{stage}: {sorted(set(map(str, now[stage].items())) ^ set(map(str, (want or {}).get(stage, {}).items())))}"
                    for stage in now))
