"""Arrivals in batches (one arrivals record per stream per intake take): the model handler gives the same
outputs as for single messages, a bad message is its own dead letter, and a restart around a batch
neither loses nor double counts a message."""

from __future__ import annotations

import orjson
import pytest
from helpers.arrivals import Run, batched, record_arrivals, run_handlers
from helpers.handler_inputs import delayed_settings
from helpers.partition_log import PartitionLog
from helpers.streams import threshold_events
from streamxai.handlers import ExplainHandler, ModelHandler
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.local.demo_stream import labels_later
from streamxai.schemas import FeatureEvent, SchemaMismatch, Source, dumps, pack_arrivals, unpack_arrivals
from streamxai.schemas.arrivals import BATCH_FORM

ARRIVALS = ("arrivals", 0)


def two_streams(n=150):
    """Streams a and b interleaved, labels 8 and 4 events late, one never labelled."""
    a = labels_later(threshold_events("a", n, seed=1), 8, unlabelled={7})
    b = labels_later(threshold_events("b", n, seed=2), 4)
    out = []
    for i in range(max(len(a), len(b))):
        out += a[i:i + 1] + b[i:i + 1]
    return out


def outcomes(run: Run) -> dict:
    return {(m["stream_id"], m["seq"]): (m["outcome"], m["loss"]) for m in run.of("predictions", "label_outcome/v1")}


def test_batched_arrivals_give_what_one_message_per_record_gives():
    s = delayed_settings()
    single = PartitionLog()
    record_arrivals(single, two_streams())
    packed = batched(single, 9)
    # 9 records of two interleaved streams: two arrivals records per window
    assert len(packed.parts[ARRIVALS]) < len(single.parts[ARRIVALS]) / 4
    one, many = run_handlers(s, single), run_handlers(s, packed)
    # and the model handler sends each batch's tasks of a group as one record
    n_tasks = len(many.of("explain-tasks"))
    assert n_tasks == len(one.of("explain-tasks")) and sum(map(len, many.tasks.parts.values())) < n_tasks / 3
    assert many.predictions() == one.predictions() and len(one.predictions()) == 300
    assert many.explanation_values() == one.explanation_values() and one.explanation_values()
    assert outcomes(many) == outcomes(one) and len(outcomes(one)) == 300


def test_a_bad_message_in_a_batch_is_its_own_dead_letter_and_the_others_are_taken():
    s = delayed_settings()
    events = [FeatureEvent("s", q, float(q), {"a": q / 10, "b": 1.0, "c": 0.0}, y=q % 2) for q in range(4)]
    raws = [dumps(e) for e in events]
    raws[2] = b'{"schema": "feature_event/v2", "stream_id": "s", "seq": 2'  # cut short
    value, headers = pack_arrivals([(Source("streamxai.features", 1, 40 + q), r) for q, r in enumerate(raws)])
    h = ModelHandler(s)
    outs = h.on_message(value, b"s", Source("streamxai.arrivals", 0, 5, headers=headers))
    preds = [orjson.loads(o.value) for o in outs if o.topic == "predictions"]
    dead = [orjson.loads(o.value) for o in outs if o.topic == "dead-letters"]
    assert [p["seq"] for p in preds if p["schema"] == "prediction/v2"] == [0, 1, 3]
    assert len(dead) == 1 and dead[0]["source"] == {"topic": "streamxai.features", "partition": 1, "offset": 42}
    assert h.metrics.get("events_in") == 4


def test_a_batch_that_does_not_frame_is_one_dead_letter():
    h = ModelHandler(delayed_settings())
    src = Source("streamxai.arrivals", 0, 5, headers=((BATCH_FORM, b"batch/1"),))
    with pytest.raises(SchemaMismatch, match="does not frame at byte 0"):
        unpack_arrivals(b"f 0 7 99\n{}", src)
    (out,) = h.on_message(b"f 0 7 99\n{}", b"s", src)
    assert out.topic == "dead-letters" and orjson.loads(out.value)["source"]["offset"] == 5
    (out,) = h.on_message(b"{}", b"s", Source("streamxai.arrivals", 0, 6, headers=((BATCH_FORM, b"batch/9"),)))
    assert "upgrade this worker" in orjson.loads(out.value)["error"]


@pytest.mark.parametrize("resume", ["at_the_batch", "after_the_batch"])
def test_a_restart_around_a_batch_neither_loses_nor_double_counts(tmp_path, resume):
    """A SIGKILLed model handler after the batch at offset ``cut`` (with ``at_the_batch`` uncommitted, so it
    comes again); checkpoints fall due mid-batch but are written once the whole record is taken."""
    s = delayed_settings(checkpoint_every=10, explainers=["ipfi"], change_explainers=["ipfi"])
    single = PartitionLog()
    record_arrivals(single, two_streams())
    packed = batched(single, 9)
    whole = run_handlers(s, packed)
    n = len(packed.parts[ARRIVALS])
    cut = n // 2 + 1
    store = FileCheckpointStore(tmp_path, every=10, secret=b"k" * 32)
    first, second = ModelHandler(s, checkpoints=store), ModelHandler(s, history=packed, checkpoints=store)
    resumed = Run()

    def feed(h: ModelHandler, off: int) -> list:
        key, value, _, _ = packed.parts[ARRIVALS][off]
        src = packed.source("arrivals", 0, off)
        h.needs_recovery(key, src)
        return h.on_message(value, key, src)

    for off in range(cut + 1):
        outs = feed(first, off)
        if off < cut or resume == "after_the_batch":
            for out in outs:
                resumed.add(out.topic, out.value, out.headers)
    for off in range(cut if resume == "at_the_batch" else cut + 1, n):
        for out in feed(second, off):
            resumed.add(out.topic, out.value, out.headers)
    assert second.metrics.get("checkpoints_restored") >= 1 and second.metrics.get("replayed_events") > 0
    assert resumed.predictions() == whole.predictions() and len(whole.predictions()) == 300
    assert outcomes(resumed) == outcomes(whole)
    # each message taken once: as many predictions as events, and each label's outcome once
    assert len(resumed.of("predictions", "prediction/v2")) == 300
    assert len(resumed.of("predictions", "label_outcome/v1")) == len(outcomes(whole))


def test_a_state_dropped_in_the_middle_of_a_batch_is_rebuilt_with_the_batch_messages_before(monkeypatch):
    """A state dropped mid-batch is rebuilt from the history and the batch's earlier messages: the same outputs."""
    s = delayed_settings(explainers=["ipfi"], change_explainers=["ipfi"])
    single = PartitionLog()
    record_arrivals(single, two_streams(n=80))
    packed = batched(single, 30)  # stream a: about 15 messages per record, seq 40 amid them
    process = ModelHandler._process

    def failing_once(self, a, st, raw, key, src):
        if isinstance(a.event, FeatureEvent) and (a.stream_id, a.event.seq) == ("a", 40) and not self.failed:
            self.failed = True
            raise RuntimeError("once")
        return process(self, a, st, raw, key, src)

    monkeypatch.setattr(ModelHandler, "_process", failing_once)
    runs = []
    for log in (single, packed):
        h = ModelHandler(s, history=log)
        h.failed = False
        runs.append(run_handlers(s, log, model=lambda off, h=h: h))
        assert h.failed and h.metrics.get("replayed_events") > 40
    one, many = runs
    assert many.predictions() == one.predictions() and len(one.predictions()) == 159
    assert outcomes(many) == outcomes(one)


def test_an_explain_handler_restarted_amid_batches_of_tasks_gives_the_uninterrupted_values(tmp_path):
    """An explain handler restarted amid batched tasks restores its newest checkpoint, replays, and publishes
    the uninterrupted values."""
    s = delayed_settings(checkpoint_every=10, explain_groups=2)
    single = PartitionLog()
    record_arrivals(single, two_streams())
    packed = batched(single, 9)
    whole = run_handlers(s, packed)
    store = FileCheckpointStore(tmp_path, every=10, secret=b"k" * 32)
    first = ExplainHandler(s, checkpoints=store)
    resumed = Run()
    second = ExplainHandler(s, history=resumed.tasks, checkpoints=store)
    half = {p: len(v) // 2 for p, v in whole.tasks.parts.items()}
    run_handlers(s, packed, explain=lambda p, off: first if off < half[("explain-tasks", p)] else second,
                 run=resumed)
    assert resumed.explanation_values() == whole.explanation_values() and whole.explanation_values()
    assert second.metrics.get("checkpoints_restored") >= 1 and second.metrics.get("replayed_tasks") > 0


def test_a_restart_right_after_a_batch_that_made_a_checkpoint_due_restores_it_and_replays_nothing(tmp_path):
    """A worker killed after a batch whose record carried a checkpoint resumes at the next record: it restores
    that checkpoint, replays nothing, and the rest gives the uninterrupted outputs."""
    s = delayed_settings(checkpoint_every=10, explainers=["ipfi"], change_explainers=["ipfi"])
    single = PartitionLog()
    record_arrivals(single, labels_later(threshold_events("a", 120, seed=1), 8))
    packed = batched(single, 9)  # one stream: each record a batch of 9 of its messages
    whole = run_handlers(s, packed)
    n = len(packed.parts[ARRIVALS])
    store = FileCheckpointStore(tmp_path, every=10, secret=b"k" * 32)
    first = ModelHandler(s, checkpoints=store)

    def feed(h: ModelHandler, off: int, run: Run) -> None:
        key, value, _, _ = packed.parts[ARRIVALS][off]
        src = packed.source("arrivals", 0, off)
        h.needs_recovery(key, src)
        for out in h.on_message(value, key, src):
            run.add(out.topic, out.value, out.headers)

    written_at, predicted = [], {}  # records whose taking wrote a checkpoint; predictions by record
    for off in range(n // 2):
        done, run = first.metrics.get("checkpoints_written"), Run()
        feed(first, off, run)
        predicted[off] = set(run.predictions())
        if first.metrics.get("checkpoints_written") > done:
            written_at.append(off)
    # killed after the commit of the newest checkpoint's record (the later records' outputs lost)
    cut = written_at[-1]
    assert 0 < cut < n // 2, written_at
    second = ModelHandler(s, history=packed, checkpoints=store)
    resumed = Run()
    for off in range(cut + 1, n):
        feed(second, off, resumed)
    assert second.metrics.get("checkpoints_restored{stage=model}") == 1
    assert second.metrics.get("replayed_events") == 0  # its checkpoint is at the record before the resume point
    # exact all the same: the uninterrupted run's predictions of the events after the checkpoint
    earlier = set().union(*(predicted[off] for off in range(cut + 1)))
    after = {k: v for k, v in whole.predictions().items() if k not in earlier}
    assert after and resumed.predictions() == after
