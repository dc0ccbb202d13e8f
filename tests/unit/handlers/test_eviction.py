"""``max_live_streams``: a handler evicting least recently used states to their checkpoints and restoring them
sends exactly what one keeping every state sends."""

from __future__ import annotations

import pytest
from helpers.arrivals import labels_later, record_arrivals, run_handlers
from helpers.partition_log import PartitionLog
from helpers.streams import threshold_events
from streamxai.handlers import ChangeHandler, ExplainHandler, ModelHandler
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.metrics import Metrics
from streamxai.schemas import ConfigError
from streamxai.settings import Settings

STREAMS = 4


def _settings(**over) -> Settings:
    return Settings(features=["a", "b", "c"], model="river.tree.HoeffdingTreeClassifier",
                    model_params={"grace_period": 20}, alpha=0.05, emit_every=5, storage_size=20, grid_size=4,
                    explain_groups=2, change_warmup=30, change_min_samples=10, **over)


def _arrivals(n_events: int = 90) -> PartitionLog:
    """Four streams, round-robin, labels two events late (events wait for them across evictions),
    the label of the first stream drifting halfway (so its change test has something to find)."""
    per_stream = [list(labels_later(threshold_events(f"s{i}", n_events, drift_at=n_events // 2 if i == 0 else None, seed=i),
                                    delay=2)) for i in range(STREAMS)]
    log = PartitionLog()
    record_arrivals(log, [m for row in zip(*per_stream, strict=True) for m in row])
    return log


def _run(s: Settings, tmp_path, metrics: Metrics, n_events: int = 90):
    store = FileCheckpointStore(tmp_path, every=s.checkpoint_every, secret=b"0123456789abcdef")
    handlers = (ModelHandler(s, metrics, checkpoints=store), ExplainHandler(s, metrics, checkpoints=store),
                ChangeHandler(s, metrics, checkpoints=store))
    model, explain, change = handlers
    run = run_handlers(s, _arrivals(n_events), model=lambda off: model, explain=lambda p, off: explain,
                       change=lambda off: change)
    return run, handlers


@pytest.mark.slow
def test_evicted_states_restore_to_the_same_outputs(tmp_path):
    every = Metrics()
    kept_run, _ = _run(_settings(checkpoint_every=10_000), tmp_path / "kept", every)
    few = Metrics()
    run, handlers = _run(_settings(checkpoint_every=10_000, max_live_streams=1), tmp_path / "few", few)
    for topic in ("predictions", "explanations", "drift-events", "change-episodes"):
        assert run.of(topic) == kept_run.of(topic), topic
    assert kept_run.of("explanations") and kept_run.of("drift-events")  # the comparison covers both
    counters = few.snapshot()["counters"]
    for h in handlers:
        assert len(h.states) <= 1
        stage = f"stage={h.STAGE}"
        evicted = sum(v for k, v in counters.items() if k.startswith("states_evicted") and stage in k)
        restored = sum(v for k, v in counters.items() if k.startswith("states_restored_after_eviction") and stage in k)
        assert evicted > 50 and restored > 50, (h.STAGE, evicted, restored)
    assert not any(k.startswith("states_evicted") for k in every.snapshot()["counters"])


def _stream_series(metrics: Metrics) -> list[str]:
    """The series of ``metrics`` labelled by stream, as the Prometheus page shows them."""
    return [line for line in metrics.exposition().decode().splitlines()
            if "stream=" in line and not line.startswith("#")]


def test_the_series_of_a_stream_go_with_its_state_and_come_back_with_it(tmp_path):
    kept = Metrics()
    _run(_settings(checkpoint_every=10_000), tmp_path / "kept", kept, n_events=20)
    assert len(_stream_series(kept)) == STREAMS  # one fast_path series a stream, all of them held
    few = Metrics()
    _, (_, explain, _) = _run(_settings(checkpoint_every=10_000, max_live_streams=1), tmp_path / "few", few,
                              n_events=20)
    assert few.get("states_evicted{stage=explain}") > STREAMS
    assert few.get("states_restored_after_eviction{stage=explain}") > STREAMS
    held = {stream_id for stream_id, _ in explain.states}
    assert len(held) == 1
    assert _stream_series(few) == [f'streamxai_fast_path{{stream="{sid}"}} 1.0' for sid in held]
    # nothing of the evicted streams' series is kept behind the page either
    assert [k for k in few._parts if "stream=" in k] == [f"fast_path{{stream={sid}}}" for sid in held]


def test_a_limit_needs_checkpoints():
    with pytest.raises(ConfigError, match="max_live_streams"):
        Settings(features=["a"], max_live_streams=10, checkpoint_every=0).validate()
    with pytest.raises(ConfigError, match="max_live_streams"):
        Settings(features=["a"], max_live_streams=-1).validate()


class _Log:
    """A partition of explanations in memory, readable per key and in one pass."""

    def __init__(self, items: list[tuple[bytes, bytes]]):
        self.items = items

    def __call__(self, topic, partition, before_offset, key, from_offset=0):
        return (v for k, v in self.items[from_offset:before_offset] if key is None or k == key)

    def scan(self, topic, partition, before_offset, from_offset=0):
        for off in range(from_offset, len(self.items) if before_offset is None else before_offset):
            yield off, *self.items[off]


def _series_log(n_streams: int = 6, n_points: int = 240, emit_every: int = 5) -> _Log:
    """One iPFI series per stream, round-robin; every third stream steps up at point 120."""
    import random

    from streamxai.schemas import Explanation, dumps

    rng, items = random.Random(3), []
    for i in range(n_points):
        seq = (i + 1) * emit_every - 1
        for j in range(n_streams):
            xs = [0.1 + (0.4 if i >= 120 and j % 3 == 0 else 0.0) + rng.gauss(0, 0.2) for _ in range(emit_every)]
            mean = sum(xs) / emit_every
            block = {"n": emit_every, "mean": mean, "m2": sum((x - mean) ** 2 for x in xs)}
            items.append((f"s{j}".encode(), dumps(Explanation(f"s{j}", "ipfi", "age", mean, seq, (i + 1) * emit_every,
                                                                seq + 1, seq, block=block))))
    return _Log(items)


def _changes(handler, log: _Log, offsets: range) -> list[tuple[str, int]]:
    import orjson
    from streamxai.handlers import Source

    got = []
    for off in offsets:
        key, value = log.items[off]
        src = Source("explanations", 0, off)
        handler.needs_recovery(key, src)
        got += [(m["series"], m["seq"]) for m in (orjson.loads(o.value) for o in handler.on_message(value, key, src)
                                                   if o.topic == "drift-events")]
    return got


@pytest.mark.slow
def test_an_evicted_state_replays_what_another_worker_processed_meanwhile(tmp_path):
    # the partition goes to another worker for a while and comes back: a state evicted before
    # cannot take the shortcut (nothing to replay) and replays the messages processed elsewhere
    s = Settings(features=["age"], explainers=["ipfi"], emit_every=5, change_warmup=10, checkpoint_every=10_000)
    log = _series_log()
    whole = _changes(ChangeHandler(s), log, range(len(log.items)))
    assert len({series for series, _ in whole}) == 2
    store = FileCheckpointStore(tmp_path, every=10_000, secret=b"0123456789abcdef")
    first = ChangeHandler(s.replace(max_live_streams=2), history=log, checkpoints=store)
    other = ChangeHandler(s, history=log, checkpoints=store)
    away, back = 6 * 100 + 2, 6 * 140 + 4  # the step at point 120 is found by the other worker
    got = _changes(first, log, range(away))
    first.partitions_revoked({("explanations", 0)})
    got += _changes(other, log, range(away, back))
    got += _changes(first, log, range(back, len(log.items)))
    assert got == whole
    assert first.metrics.get("replayed_explanations") > 0
