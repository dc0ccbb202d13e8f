"""The handlers share one skeleton (parse → dead letter → load state → drop duplicate →
process → checkpoint) and declare what they need as Protocols."""

import pytest
from helpers.handler_inputs import change_settings, explanation_msg, settings
from streamxai.handlers import ChangeHandler, CheckpointStore, ExplainHandler, Handler, ModelHandler, Source
from streamxai.handlers.common import MessageHandler
from streamxai.handlers.recovering import Recovering
from streamxai.kafka.checkpoint_topic import KafkaCheckpointStore
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.settings import Settings


def test_drift_handler_drops_its_streams_when_a_partition_comes_back(tmp_path):
    """A rebalance drops the change handler's states through the skeleton's one ``_drop_state``
    (no AttributeError on a ``series`` dict the change handler does not have)."""
    h = ChangeHandler(change_settings())
    src = Source("explanations", 0, 0)
    h.needs_recovery(b"s", src)  # the agent loop calls it for every message
    h.on_message(explanation_msg("s", "ipfi", "age", 9, 0.1, (5, 0.1, 0.0), 10), b"s", src)
    assert "s" in h.streams
    h.partitions_revoked({("explanations", 0)})
    h.needs_recovery(b"s", Source("explanations", 0, 7))  # another worker processed offsets 1..6
    assert "s" not in h.streams
    assert h.metrics.get("states_dropped_after_rebalance") == 1


@pytest.mark.parametrize("cls", [ModelHandler, ExplainHandler, ChangeHandler])
def test_every_handler_fills_in_the_skeleton(cls):
    assert issubclass(cls, MessageHandler)
    h = cls(change_settings() if cls is ChangeHandler else settings())
    assert isinstance(h, Handler)


def test_the_skeleton_cannot_be_used_without_its_steps():
    with pytest.raises(TypeError, match="abstract"):
        MessageHandler()
    with pytest.raises(TypeError, match="abstract"):
        Recovering()


def test_the_kafka_layer_provides_what_the_handlers_need(tmp_path):
    assert isinstance(FileCheckpointStore(str(tmp_path), every=2, secret=b"0123456789abcdef"), CheckpointStore)
    assert isinstance(KafkaCheckpointStore(Settings(), every=2, secret=b"0123456789abcdef"), CheckpointStore)


def test_a_group_dropped_after_an_explainer_error_is_rebuilt_off_the_event_loop(monkeypatch):
    """A group dropped after an explainer error is restored and replayed on a thread for its next task."""
    import orjson
    from helpers.partition_log import PartitionLog
    from streamxai.local.demo_stream import agrawal_events
    from streamxai.schemas import dumps

    s = settings(explain_groups=1, partitions=1)
    log, mh = PartitionLog(), ModelHandler(s)
    for off, ev in enumerate(agrawal_events("e", 30, seed=1)):
        for out in mh.on_message(dumps(ev), b"e", Source("features", 0, off)):
            if out.topic == "explain-tasks":
                log.append("explain-tasks", 0, out.key, out.value)
    tasks = log.items("explain-tasks", 0)
    h = ExplainHandler(s, history=log.history)
    for off in range(20):
        key, value = tasks[off]
        h.needs_recovery(key, Source("explain-tasks", 0, off))
        h.on_message(value, key, Source("explain-tasks", 0, off))
    key, value = tasks[20]

    def raises(self, *a, **kw):  # the replica raises on it: the group may be half-updated
        raise RuntimeError("an explainer error")

    from streamxai.core.stream import StreamExplainer

    monkeypatch.setattr(StreamExplainer, "step", raises)
    outs = h.on_message(value, key, Source("explain-tasks", 0, 20))
    assert [orjson.loads(o.value)["reason"] for o in outs] == ["explain_error"]
    assert ("e", 0) not in h.groups
    assert h.needs_recovery(key, Source("explain-tasks", 0, 21))  # rebuilt off the event loop


def _model_handler_log(caplog, events, *, restart_at=None, checkpoints=None):
    """The streamxai log lines of a model handler over ``events`` (a fresh one from ``restart_at``)."""
    from helpers.partition_log import PartitionLog
    from streamxai.schemas import dumps

    s = settings(partitions=1)
    log = PartitionLog()
    for ev in events:
        log.append("features", 0, ev.stream_id.encode(), dumps(ev))
    caplog.set_level("INFO", logger="streamxai")
    h = ModelHandler(s, history=log.history, checkpoints=checkpoints)
    for off, ev in enumerate(events):
        if off == restart_at:
            h = ModelHandler(s, history=log.history, checkpoints=checkpoints)
        h.needs_recovery(ev.stream_id.encode(), Source("features", 0, off))
        h.on_message(dumps(ev), ev.stream_id.encode(), Source("features", 0, off))
    return [r.getMessage() for r in caplog.records if r.name.startswith("streamxai")]


def test_a_rebuilt_states_log_line_names_its_key_as_text(caplog):
    """The rebuild line names the key as text, not as a bytes repr (``rebuilt model state
    b'reg-7' from 0 earlier messages of streamxai.arrivals[1]@1``)."""
    from streamxai.local.demo_stream import agrawal_events

    events = [*agrawal_events("a", 3, seed=1), *agrawal_events("reg-7", 2, seed=2)]
    lines = _model_handler_log(caplog, events, restart_at=4)  # reg-7's state is rebuilt at offset 4
    rebuilt = [line for line in lines if line.startswith("rebuilt")]
    assert rebuilt and all("b'" not in line for line in lines), lines
    assert "rebuilt model state reg-7 from 1 earlier messages" in rebuilt[-1]


def test_a_stream_met_for_the_first_time_is_logged_as_new_not_rebuilt(caplog):
    """A stream first met mid-partition is opened without a "rebuilt ... from 0 earlier messages" line; a rebuild keeps it."""
    from streamxai.local.demo_stream import agrawal_events

    events = [*agrawal_events("a", 3, seed=1), *agrawal_events("reg-7", 2, seed=2)]
    lines = _model_handler_log(caplog, events)
    assert not [line for line in lines if line.startswith("rebuilt")], lines
    opened = [line for line in lines if line.startswith("opened")]
    assert len(opened) == 1 and opened[0].startswith("opened a new model state for stream reg-7"), lines
    # stream a after a restart at its fourth message: three earlier ones, a rebuild
    lines = _model_handler_log(caplog, [*agrawal_events("a", 4, seed=1)], restart_at=3)
    assert any(line.startswith("rebuilt model state a from 3 earlier messages") for line in lines), lines


@pytest.mark.parametrize("others", [0, 2])
def test_a_state_restored_from_its_checkpoint_is_logged_as_restored_not_rebuilt(tmp_path, caplog, others):
    """A state restored from a checkpoint at the resume point is logged as restored, not rebuilt."""
    from streamxai.local.demo_stream import agrawal_events

    a = list(agrawal_events("a", 4, seed=1))
    events = [*a[:3], *agrawal_events("reg-7", others, seed=2), a[3]]  # a's checkpoint after its third
    store = FileCheckpointStore(str(tmp_path), every=3, secret=b"0123456789abcdef")
    lines = _model_handler_log(caplog, events, restart_at=3 + others, checkpoints=store)
    about_a = [line for line in lines if "state a " in line]
    assert len(about_a) == 1 and about_a[0].startswith(
        "restored model state a from its checkpoint at features[0]@2, then replayed 0 later messages"), lines
