"""Counters and gauges of a worker: JSON at ``GET /streamxai/metrics``, the Prometheus text
format at ``GET /metrics``, and a log line every 30 s.

>>> m = Metrics()
>>> m.inc("events_in"); m.inc("dead_letters", reason="malformed")
>>> m.snapshot()["counters"]
{'dead_letters{reason=malformed}': 1, 'events_in': 1}
>>> text = m.exposition().decode()
>>> [line for line in text.splitlines() if line.startswith(("streamxai_dead", "streamxai_events_in"))]
['streamxai_dead_letters_total{reason="malformed"} 1.0', 'streamxai_events_in_total 1.0']

>>> m.inc("events_explained", profile="fraud-*"); m.inc("events_explained", 2, profile=TOP_LEVEL)
>>> m.get("events_explained"), m.get("events_explained{profile=fraud-*}"), m.get("dead_letters{reason=malformed}")
(3, 1, 1)
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter, OrderedDict
from typing import Any

__all__ = ["Metrics", "HELP", "COUNTERS", "LABELLED", "PROFILED", "TOP_LEVEL", "NO_STREAM", "ALERTS_KEPT",
           "profile_label", "key_profile"]

#: the counters labelled by the stream's profile
PROFILED = ("events_explained", "sampled_out", "shed_events", "input_faults", "change_events", "change_episodes",
            "dead_letters")
#: counters the snapshot also gives summed over one of their labels, under the key they had before
#: they carried it (the profiled ones over ``profile``; ``checkpoints_restored`` over ``stage``)
SUMMED_OVER = {**dict.fromkeys(PROFILED, "profile"), "checkpoints_restored": "stage"}
#: the ``profile`` of a stream no profile matches (no glob can be it: globs use stream id characters)
TOP_LEVEL = "(top level)"
#: the ``profile`` of a dead letter whose key is no stream id (or names none)
NO_STREAM = "(no stream)"

# What each name means, for the exposition's HELP lines (names not listed still appear).
HELP = {
    "events_in": "Messages read by the model agent from the arrivals topic (feature and label events, good or bad)",
    "predictions": "Predictions sent (events the model predicted on arrival)",
    "labels_received": "Label events read by the model agent (good, bad or duplicate)",
    "labels_learned": "Label events joined to their waiting event, which the model learned",
    "labels_expired": "Events that waited longer than max_label_delay or label_timeout_s for their label (never learned)",
    "labels_dead_lettered": "Label events sent to the dead-letter topic (bad schema or type, expired event, unknown seq, already labelled)",
    "duplicate_labels_dropped": "Label events the intake forwarded twice (after a restart), dropped",
    "label_delay_events_sum": "Sum over learned labels of how many events later they came (divide by labels_learned)",
    "label_delay_seconds_sum": "Sum over learned labels of how many seconds of arrival time later they came",
    "messages_in": "Messages read, by topic",
    "messages_out": "Messages sent, by topic",
    "dead_letters": "Dead letters the broker acknowledged, by reason and profile (of the stream the message's key names)",
    "send_errors": "Messages the producer refused (logged and dropped), by topic (short name)",
    "write_waits": "Times the worker's writes waited for the brokers (see writes_waiting and its log line)",
    "registry_unreachable": "Failed attempts to reach the schema registry of a registry-framed source (the record waits and is tried again)",
    "duplicates_dropped": "Feature events dropped as already processed (stream_id, seq)",
    "duplicate_tasks_dropped": "Explain tasks dropped as already processed",
    "duplicate_explanations_dropped": "Explanations the change agent had already monitored",
    "sampled_out": "Events not explained because of sample_rate, by profile",
    "shed_events": "Events not explained because they waited longer than max_lag_s, by profile",
    "tasks_seen": "Explain tasks folded into an explainer group (explained or not)",
    "events_explained": "Events explained, by profile",
    "explanations_out": "Explanation messages sent",
    "input_faults": "Data faults the watch of the streams' inputs found (stuck, shifted or scaled, swapped, reordered values of a feature, labels that stopped), by profile; the change agent pages on those of features the model relies on, and on labels that stopped",
    "local_explanations_out": "Local explanations sent (predictions explained feature by feature, local on)",
    "explanations_seen": "Explanation messages the change agent read (good, bad or duplicate)",
    "explanations_monitored": "Explanations the change agent monitored",
    "change_events": "Change events raised, by profile",
    "change_episodes": "Change episodes opened (changes of one stream that happened together), by kind, alert (true: the kind is in the profile's change_alert_kinds) and profile",
    "replayed_events": "Feature events re-run to rebuild a stream model after a restart or rebalance",
    "replayed_tasks": "Explain tasks re-run to rebuild an explainer group",
    "replayed_explanations": "Explanations re-run to rebuild a stream's change state",
    "replay_errors": "Messages that failed while being replayed",
    "state_errors": "Messages dead-lettered unprocessed because their key's state fails on every message, also rebuilt from its whole history",
    "states_guarded": "Keys whose state failed twice within 1024 of their messages, so each message is taken on a copy of the state and one that fails rolls back to it instead of a rebuild",
    "failures_rolled_back": "Messages that failed on a guarded state: dead-lettered, the state put back as it was before them, nothing rebuilt",
    "checkpoints_written": "Checkpoints written",
    "checkpoints_restored": "Checkpoints restored, by stage (model, explain, change)",
    "checkpoint_keys_replaced": "Checkpoint key files (state_dir/checkpoint.key) that could not be used, set aside and replaced by a new key (their checkpoints rebuilt by replay)",
    "history_incomplete": "States rebuilt from an incomplete history: no checkpoint covered the messages retention had deleted (the stream goes on from what remains; see the warning line)",
    "checkpoints_outdated": "Checkpoints not restored because the key's stream settings changed since (rebuilt from its history)",
    "history_scans": "Passes over a partition's history to rebuild the keys met after a restart (one serves them all)",
    "history_messages_scanned": "Messages read by those passes (grows while a pass runs: rebuild progress)",
    "states_dropped_after_rebalance": "Keys whose state was stale after their partition came back from another worker (rebuilt)",
    "states_evicted": "States dropped from memory to their checkpoint beyond max_live_streams, by stage (model, explain, change)",
    "states_restored_after_eviction": "Evicted states restored from the checkpoint they were evicted to with nothing to replay, by stage",
    "history_cache_too_big": "Partitions whose history exceeded the cache, so their keys were read one by one",
    "fast_path_fallbacks": "Model evaluation calls the fast path handed to the model itself (a part it does not recognise)",
    "recovery_seconds": "Seconds spent rebuilding state after a restart or rebalance, by stage (model, explain, "
                        "change) and step (checkpoint: finding, reading and unpickling it; replay: re-running history)",
}
# counters without labels are exposed from the start (at 0), so rates and alerts have a series
COUNTERS = tuple(HELP)
HELP.update({
    # the join of a labels source (handlers.join), only on workers that read one
    "join_labels_in": "Labels of a labels source read by the join (from the event-index topic)",
    "join_labels_joined": "Labels of a labels source sent to their event's stream",
    "join_labels_held": "Labels of a labels source that came before their event's index record, held for it",
    "join_dead_letters": "Records the join sent to the dead-letter topic (unknown event ids, bad labels)",
    "join_replayed_records": "Records of the event-index topic the join replayed to rebuild its state after a restart",
    "streams": "Streams whose model this worker holds",
    "labels_pending": "Events waiting for their label, over the streams this worker holds",
    "labels_held": "Labels that came before their event, waiting for it",
    "explainer_groups": "Explainer groups (model replicas) this worker holds",
    "change_streams": "Streams the change agent monitors",
    "consumer_lag": "Messages not yet processed, by topic and partition (high watermark - next offset)",
    "explanation_lag_events": "Explain tasks waiting in this worker's explain-tasks partitions",
    "explanation_lag_seconds": "Age of the newest explain task when it was taken up (now - sent_at); 0 once none wait",
    "checkpoint_age_seconds": "Seconds since this worker last wrote a checkpoint",
    "uptime_seconds": "Seconds since the worker started",
    "compiled_kernels": "1 when the explainers' bookkeeping runs the compiled kernels (pipeline/core/kernels.py), 0 on the pure-Python path (not built, or STREAMXAI_PURE_PYTHON=1)",
    "fast_path": "1 when a stream's model is evaluated from its internals (fast path, setting fast_path), 0 when called as a black box; by stream, for the streams this worker holds (one max_live_streams evicted has none until it is restored)",
    "alert": "1 for each of the newest alerting change episodes this worker announced (at most ALERTS_KEPT; older ones drop out), by stream_id, alert_key (one per episode, the same after any restart or replay) and kind: page once per alert_key",
    "gc_frozen_objects": "Objects made as the worker started, moved out of Python's garbage collector's passes once it was up (gc.freeze)",
    "writes_waiting": "1 while the brokers take none of the worker's outputs in flight (a partition without a leader, fewer in-sync replicas than min.insync.replicas): the worker waits and loses nothing; else 0",
    "fetch_wait_ms": "How long the broker may hold this worker's fetch requests (ms): short while its agents have room, long while they are busy (pipeline/kafka/fetch_pace.py)",
})
LABELLED = (  # counters only ever used with labels: not exposed before they fire (or exposed by their user)
    "messages_in", "messages_out", "dead_letters", "send_errors", "change_episodes", "recovery_seconds", "states_evicted",
    "states_restored_after_eviction")

_NAME_OK = re.compile(r"[^a-zA-Z0-9_]")


def profile_label(glob: str | None) -> str:
    """The ``profile`` label of a stream under profile ``glob`` (None: the top-level settings).

    >>> profile_label("fraud-*"), profile_label(None)
    ('fraud-*', '(top level)')
    """
    return TOP_LEVEL if glob is None else glob


def key_profile(settings: Any, key: bytes | None) -> str:
    """The ``profile`` label of a dead letter with Kafka key ``key``: the profile of the stream
    it names (``stream_id``, or ``stream_id/group`` for an explain task) under ``settings``.

    >>> from streamxai.settings import Settings
    >>> s = Settings(features=["a"], streams={"f-*": {}})
    >>> key_profile(s, b"f-1"), key_profile(s, b"f-1/2"), key_profile(s, b"g"), key_profile(s, b"a b"), key_profile(s, None)
    ('f-*', 'f-*', '(top level)', '(no stream)', '(no stream)')
    """
    from streamxai.schemas.features import check_stream_id

    try:
        stream_id = (key or b"").decode().split("/", 1)[0]
        check_stream_id(stream_id)
    except ValueError:  # not UTF-8, or not a stream id (SchemaMismatch is a ValueError)
        return NO_STREAM
    return profile_label(settings.profile(stream_id))


#: the alerts a worker exposes as ``streamxai_alert`` series: the newest, so the series stay bounded
ALERTS_KEPT = 256

#: the most label sets :meth:`Metrics._key` remembers (the series are bounded: topics, profiles, reasons)
_MAX_KEYS = 4096


class Metrics:
    """Handlers call :meth:`Metrics.inc` and :meth:`Metrics.gauge` with a name and optional labels;
    each name becomes the Prometheus family ``streamxai_<name>`` (counters get ``_total``). The
    counters an operator pages on (:data:`PROFILED`) carry the stream's ``profile`` (its glob,
    :data:`TOP_LEVEL` or :data:`NO_STREAM`), so the number of series stays bounded.
    :meth:`Metrics.get` sums a name's series.
    """
    def __init__(self) -> None:
        self._counters: Counter[str] = Counter()
        self._gauges: dict[str, float] = {}
        self._parts: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {}
        self._keys: dict[tuple, str] = {}  # (name, *label items) -> the series' key (:meth:`_key`)
        self._offsets: dict[tuple[str, int], int] = {}
        self._last_checkpoint: float | None = None
        self._alerts: OrderedDict[str, None] = OrderedDict()  # series keys of alert, oldest first
        self.started = time.time()
        # handlers rebuild state on a thread while the agents run: counts must not be lost
        self._lock = threading.Lock()

    def _key(self, name: str, labels: dict[str, Any]) -> str:
        if not labels:
            return name
        # a known series' key is looked up, not built again; only for text values (1, 1.0 and
        # True are one dict key but three series)
        memo: tuple | None = (name, *labels.items())
        for v in labels.values():
            if type(v) is not str:
                memo = None
                break
        else:
            try:
                return self._keys[memo]  # type: ignore[index]
            except KeyError:
                pass
        items = tuple(sorted((k, str(v)) for k, v in labels.items()))
        key = name + "{" + ",".join(f"{k}={v}" for k, v in items) + "}"
        if key not in self._parts:
            self._parts[key] = (name, items)
        if memo is not None:
            if len(self._keys) >= _MAX_KEYS:  # bounded whatever the labels carry
                self._keys.clear()
            self._keys[memo] = key
        return key

    def inc(self, name: str, n: int = 1, **labels: Any) -> None:
        key = self._key(name, labels) if labels else name
        with self._lock:
            self._counters[key] += n
        if name == "checkpoints_written":
            self._last_checkpoint = time.time()

    def gauge(self, name: str, value: float, **labels: Any) -> None:
        self._gauges[self._key(name, labels) if labels else name] = value

    def drop(self, name: str, **labels: Any) -> None:
        """Remove the gauge series ``name{labels}`` (its next :meth:`gauge` brings it back), so a
        stream's series go when the worker no longer holds it.

        >>> m = Metrics(); m.gauge("fast_path", 1, stream="s1"); m.gauge("fast_path", 0, stream="s2")
        >>> m.drop("fast_path", stream="s1"); m.drop("fast_path", stream="s9")  # (one it never had: nothing)
        >>> m.snapshot()["gauges"]
        {'fast_path{stream=s2}': 0}
        """
        key = self._key(name, labels) if labels else name
        self._gauges.pop(key, None)
        if labels and key not in self._counters:
            self._parts.pop(key, None)
            self._keys.pop((name, *labels.items()), None)

    def alert(self, stream_id: str, alert_key: str, kind: str, keep: int = ALERTS_KEPT) -> None:
        """Set ``alert{stream_id, alert_key, kind}`` to 1; keep the ``keep`` newest such series and
        drop the older ones (their alert resolves in Prometheus). Setting a key again keeps one
        series, so Alertmanager, grouping by ``alert_key``, notifies once.

        >>> m = Metrics()
        >>> for pos in (10, 20, 10, 30):
        ...     m.alert("s1", f"s1/{pos}", "degradation", keep=2)
        >>> sorted(k for k in m.snapshot()["gauges"] if k.startswith("alert"))
        ['alert{alert_key=s1/10,kind=degradation,stream_id=s1}', 'alert{alert_key=s1/30,kind=degradation,stream_id=s1}']
        """
        items = tuple(sorted({"stream_id": stream_id, "alert_key": alert_key, "kind": kind}.items()))
        key = "alert{" + ",".join(f"{k}={v}" for k, v in items) + "}"
        # built here rather than by _key: a dropped series leaves nothing behind in _parts or its memo
        self._parts[key] = ("alert", items)
        self._alerts[key] = None
        self._alerts.move_to_end(key)
        self._gauges[key] = 1
        while len(self._alerts) > keep:
            old, _ = self._alerts.popitem(last=False)
            self._gauges.pop(old, None)
            self._parts.pop(old, None)

    def get(self, name: str) -> int:
        """The count of ``name``, summed over its series whose labels include those given
        (``name{label=value,...}``; none given: all its series)."""
        family, _, given = name.partition("{")
        want = set(given.rstrip("}").split(",")) - {""}
        with self._lock:
            return sum(v for k, v in self._counters.items()
                       if (k == family and not want)
                       or (self._parts.get(k, ("",))[0] == family and want <= {f"{a}={b}" for a, b in self._parts[k][1]}))

    def processed(self, topic: str, partition: int, offset: int) -> None:
        """The agents' loop took up ``topic[partition]@offset``."""
        self._offsets[(topic, partition)] = offset

    def set_lag(self, highwaters: dict[tuple[str, int], int | None], tasks_topic: str | None = None) -> None:
        """Consumer lag per partition from the high watermarks of the assigned partitions (also
        when no record arrives, so a drained partition reads 0); the explain-tasks partitions'
        total is the explanation lag in events. A partition nothing of which is taken up yet has
        no gauge, and partitions no longer assigned lose theirs."""
        tasks_lag = 0
        for key in [k for k in list(self._gauges) if self._parts.get(k, ("",))[0] == "consumer_lag"]:
            labels = dict(self._parts[key][1])
            if (labels.get("topic"), int(labels.get("partition", -1))) not in highwaters:
                del self._gauges[key]
        for (topic, partition), hw in highwaters.items():
            if hw is None:
                continue
            done = self._offsets.get((topic, partition))
            lag = max(0, hw - (done + 1)) if done is not None else 0 if hw == 0 else None
            if lag is None:
                continue
            self.gauge("consumer_lag", lag, topic=topic, partition=partition)
            if topic == tasks_topic:
                tasks_lag += lag
        if tasks_topic is not None:
            self.gauge("explanation_lag_events", tasks_lag)
            if tasks_lag == 0 and "explanation_lag_seconds" in self._gauges:
                self.gauge("explanation_lag_seconds", 0)

    def snapshot(self, totals: bool = True) -> dict[str, Any]:
        """Counters and gauges by key (``name{label=value,...}``). With ``totals``, a counter of
        :data:`SUMMED_OVER` is also there summed over that label, under its key without it.

        >>> m = Metrics(); m.inc("shed_events", profile="a-*"); m.inc("shed_events", 2, profile="b-*")
        >>> {k: v for k, v in m.snapshot()["counters"].items() if k.startswith("shed")}
        {'shed_events': 3, 'shed_events{profile=a-*}': 1, 'shed_events{profile=b-*}': 2}
        """
        gauges = dict(self._gauges)
        if self._last_checkpoint is not None:
            gauges["checkpoint_age_seconds"] = round(time.time() - self._last_checkpoint, 3)
        with self._lock:
            counters = dict(self._counters)
        if totals:
            summed: Counter[str] = Counter()
            for key, value in counters.items():
                name, items = self._parts.get(key, (key, ()))
                over = SUMMED_OVER.get(name)
                if over and items:
                    rest = ",".join(f"{k}={v}" for k, v in items if k != over)
                    summed[f"{name}{{{rest}}}" if rest else name] += value
            counters.update(summed)
        return {
            "uptime_s": round(time.time() - self.started, 3),
            "counters": dict(sorted(counters.items())),
            "gauges": dict(sorted(gauges.items())),
        }

    def collect(self) -> list[Any]:
        """The metric families, for prometheus_client's registry."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        snap = self.snapshot(totals=False)  # Prometheus sums over a label itself
        rows = [(kind, *self._parts.get(key, (key, ())), value)
                for kind, values in (("counter", snap["counters"]), ("gauge", snap["gauges"]))
                for key, value in values.items()]
        rows.append(("gauge", "uptime_seconds", (), snap["uptime_s"]))
        present = {name for _, name, _, _ in rows}
        rows += [("counter", name, (), 0) for name in COUNTERS if name not in present and name not in LABELLED]
        labelnames: dict[tuple[str, str], list[str]] = {}
        for kind, name, items, _ in rows:  # one label set per family: the union, "" where absent
            names = labelnames.setdefault((kind, name), [])
            names.extend(k for k, _ in items if k not in names)
        fams: dict[tuple[str, str], Any] = {}
        for kind, name, items, value in rows:
            fam = fams.get((kind, name))
            if fam is None:
                cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
                fam = fams[(kind, name)] = cls("streamxai_" + _NAME_OK.sub("_", name),
                                               HELP.get(name, name.replace("_", " ")), labels=labelnames[(kind, name)])
            given = dict(items)
            fam.add_metric([given.get(k, "") for k in labelnames[(kind, name)]], float(value))
        return [fams[k] for k in sorted(fams, key=lambda k: k[1])]

    def exposition(self) -> bytes:
        """The Prometheus text format (``text/plain; version=0.0.4``)."""
        from prometheus_client import CollectorRegistry, generate_latest

        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)  # type: ignore[arg-type]
        return generate_latest(registry)
