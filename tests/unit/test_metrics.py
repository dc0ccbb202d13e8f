"""Metrics: the handlers' inc/gauge API mapped to Prometheus families; consumer lag."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from streamxai.metrics import COUNTERS, Metrics


def _families(m: Metrics) -> dict[str, dict[tuple, float]]:
    return {f.name: {tuple(sorted(s.labels.items())): s.value for s in f.samples}
            for f in text_string_to_metric_families(m.exposition().decode())}


def test_names_and_labels_become_families_and_json_keeps_its_keys():
    m = Metrics()
    m.inc("dead_letters", reason="malformed")
    m.inc("dead_letters", 2, reason="bad_value")
    m.inc("messages_in", topic="t.features")
    m.gauge("consumer_lag", 7, topic="t.features", partition=0)
    m.gauge("streams", 3)
    fams = _families(m)
    assert fams["streamxai_dead_letters"] == {(("reason", "bad_value"),): 2.0, (("reason", "malformed"),): 1.0}
    assert fams["streamxai_consumer_lag"] == {(("partition", "0"), ("topic", "t.features")): 7.0}
    assert fams["streamxai_streams"] == {(): 3.0}
    # counters nobody incremented yet are there at 0, so rate() and alerts have a series from the start
    assert fams["streamxai_shed_events"] == {(): 0.0} and "dead_letters" in COUNTERS
    assert m.snapshot()["counters"]["dead_letters{reason=bad_value}"] == 2


def test_a_name_used_with_different_label_sets_stays_one_valid_family():
    m = Metrics()
    m.inc("custom")
    m.inc("custom", kind="x")
    assert _families(m)["streamxai_custom"] == {(("kind", ""),): 1.0, (("kind", "x"),): 1.0}


def test_consumer_lag_per_partition_and_explanation_lag_in_events():
    m = Metrics()
    m.processed("t.features", 0, 99)  # next offset 100
    m.processed("t.explain-tasks", 1, 10)
    m.processed("t.explain-tasks", 2, 4)
    m.set_lag({("t.features", 0): 100, ("t.explain-tasks", 1): 15, ("t.explain-tasks", 2): 5,
               ("t.explain-tasks", 3): 9, ("t.features", 1): None}, tasks_topic="t.explain-tasks")
    g = m.snapshot()["gauges"]
    assert g["consumer_lag{partition=0,topic=t.features}"] == 0
    assert g["consumer_lag{partition=1,topic=t.explain-tasks}"] == 4
    assert "consumer_lag{partition=3,topic=t.explain-tasks}" not in g  # nothing processed there yet: unknown
    assert g["explanation_lag_events"] == 4


def test_checkpoint_age_appears_once_one_was_written():
    m = Metrics()
    assert "checkpoint_age_seconds" not in m.snapshot()["gauges"]
    m.inc("checkpoints_written")
    assert 0 <= m.snapshot()["gauges"]["checkpoint_age_seconds"] < 5


def test_every_metric_the_code_reports_has_help_text():
    import re
    from pathlib import Path

    from streamxai.metrics import HELP

    root = Path(__file__).resolve().parents[2]
    used = set()
    for path in [*root.glob("pipeline/**/*.py"), *root.glob("agents/*.py")]:
        used |= set(re.findall(r"\.(?:inc|gauge)\(\s*\"([a-z_]+)\"", path.read_text()))
    assert used and used <= set(HELP), sorted(used - set(HELP))


def test_the_counters_an_operator_pages_on_are_labelled_by_profile_not_by_stream():
    import asyncio

    from streamxai.agents._forward import Outbox
    from streamxai.handlers import ModelHandler, Out, Source
    from streamxai.metrics import NO_STREAM, PROFILED, TOP_LEVEL
    from streamxai.schemas import FeatureEvent, dumps
    from streamxai.settings import Settings

    s = Settings(features=["a"], explainers=["ipfi"], streams={"half-*": {"sample_rate": 0.5}})
    m = Metrics()
    mh = ModelHandler(s, metrics=m)
    for sid in ("half-1", "half-2", "all-1"):
        for seq in range(50):
            mh.on_message(dumps(FeatureEvent(sid, seq, 0.0, {"a": 0.5}, 1)), sid.encode(), Source("f", 0, seq))

    class Producer:
        async def send(self, topic, key, value, partition, timestamp, headers):
            fut = asyncio.get_running_loop().create_future()
            fut.set_result(None)
            return fut

    async def dead_letters():
        box = Outbox(Producer(), s, m)
        for key in (b"half-1", b"half-2/0", b"all-1", b"not a stream"):
            await box.send(Out("dead-letters", key, b"{}", reason="bad_value"), Source("f", 0, 1))
        await asyncio.sleep(0)

    asyncio.run(dead_letters())
    fams = _families(m)
    sampled = fams["streamxai_sampled_out"]
    assert set(sampled) == {(("profile", "half-*"),), (("profile", TOP_LEVEL),)}  # two profiles, not three streams
    assert 30 < sampled[(("profile", "half-*"),)] < 70 and sampled[(("profile", TOP_LEVEL),)] == 0  # 100 at 0.5: sd 5
    assert fams["streamxai_dead_letters"] == {(("profile", "half-*"), ("reason", "bad_value")): 2.0,
                                              (("profile", TOP_LEVEL), ("reason", "bad_value")): 1.0,
                                              (("profile", NO_STREAM), ("reason", "bad_value")): 1.0}
    assert m.get("sampled_out") == sampled[(("profile", "half-*"),)]  # get sums a name's series
    # and the JSON keeps the keys of before, summed over the profiles, next to each profile's
    counters = m.snapshot()["counters"]
    assert counters["dead_letters{reason=bad_value}"] == 4 and counters["sampled_out"] == m.get("sampled_out")
    assert counters["dead_letters{profile=half-*,reason=bad_value}"] == 2
    assert set(PROFILED) <= set(COUNTERS)


def test_a_counter_of_a_profile_not_counted_yet_is_one_series_at_zero_not_two():
    m = Metrics()
    m.inc("events_explained", 0, profile="a-*")
    assert _families(m)["streamxai_events_explained"] == {(("profile", "a-*"),): 0.0}


def test_a_series_key_looked_up_again_is_the_one_built_whatever_the_label_order():
    import streamxai.metrics as metrics_module

    m = Metrics()
    m.inc("messages_in", topic="t.features")
    m.inc("messages_in", 2, topic="t.features")  # remembered: the same series
    m.inc("custom", a=1, b="x")
    m.inc("custom", b="x", a=1)  # another keyword order, the same series
    m.inc("custom", a=[1, 2])  # a value that cannot be hashed is still counted
    m.inc("custom", a=[1, 2])
    counters = m.snapshot()["counters"]
    assert counters["messages_in{topic=t.features}"] == 3
    assert counters["custom{a=1,b=x}"] == 2 and counters["custom{a=[1, 2]}"] == 2
    # what it remembers is bounded, whatever the labels carry
    for i in range(metrics_module._MAX_KEYS + 10):
        m.inc("many", k=str(i))
    assert len(m._keys) <= metrics_module._MAX_KEYS
    assert m.get("many") == metrics_module._MAX_KEYS + 10
    m.inc("many", k="0")
    assert m.get("many{k=0}") == 2


def test_labels_equal_in_python_but_written_differently_stay_two_series():
    # 1, 1.0 and True are one dict key in Python; their series are not
    m = Metrics()
    m.inc("custom", flag=1)
    m.inc("custom", flag=True)
    m.inc("custom", flag=1.0)
    counters = m.snapshot()["counters"]
    assert counters["custom{flag=1}"] == 1 and counters["custom{flag=True}"] == 1 and counters["custom{flag=1.0}"] == 1


def test_the_lag_gauges_fall_to_zero_once_everything_is_taken_up():
    """After a drained backlog every lag gauge reads 0 (an empty partition too); an unassigned partition has none."""
    m = Metrics()
    m.processed("t.explain-tasks", 1, 10)
    m.gauge("explanation_lag_seconds", 42.0)  # the last task was 42 s old when it was taken up
    m.set_lag({("t.explain-tasks", 1): 30, ("t.features", 2): 7}, tasks_topic="t.explain-tasks")
    m.processed("t.features", 2, 6)
    assert m.snapshot()["gauges"]["explanation_lag_seconds"] == 42.0  # tasks still wait: the age stands
    m.processed("t.explain-tasks", 1, 29)  # drained
    m.set_lag({("t.explain-tasks", 1): 30, ("t.explain-tasks", 0): 0, ("t.features", 3): 0},
              tasks_topic="t.explain-tasks")
    g = m.snapshot()["gauges"]
    lags = {k: v for k, v in g.items() if "lag" in k}
    assert lags == {"consumer_lag{partition=1,topic=t.explain-tasks}": 0,
                    "consumer_lag{partition=0,topic=t.explain-tasks}": 0,
                    "consumer_lag{partition=3,topic=t.features}": 0,
                    "explanation_lag_events": 0, "explanation_lag_seconds": 0}
