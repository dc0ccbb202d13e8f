"""One settings object. The environment and files are read only at the entry point.

>>> s = load_settings(None, features="a,b", streams='{"reg-*": {"features": ["c"], "alpha": 0.01}}')
>>> s.for_stream("reg-1").features, s.for_stream("reg-1").alpha, s.for_stream("other").features
(['c'], 0.01, ['a', 'b'])
>>> s.for_stream("reg-1").source("alpha"), s.for_stream("reg-1").source("grid_size")
('profile "reg-*"', 'default')

>>> s = Settings(sasl_password=Secret("hunter2"))
>>> "hunter2" in repr(s), s.sasl_password.reveal()
(False, 'hunter2')
>>> load_settings(env={"STREAMXAI_EXPLAIN_GROUPS": "3"}).explain_groups
3
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from streamxai.schemas import ConfigError, FeatureSpec
from streamxai.schemas.features import TASKS

from .core.stream import EXPLAINER_NAMES
from .modelspec import DEFAULT_MODEL, check_task, default_model_params
from .profiles import ProfileMatcher, check_glob
from .sources import SourceSpec, parse_sources
from .tls_files import check_tls_files
from .toml_text import toml_key

__all__ = ["Settings", "Secret", "load_settings", "AGRAWAL_FEATURES", "SECURITY_PROTOCOLS", "SASL_MECHANISMS",
           "PER_STREAM", "PER_STREAM_PREFIXES", "is_per_stream", "env_name", "utf8_file_text", "RENAMED",
           "check_renamed"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

AGRAWAL_FEATURES = (
    "salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan",
)

#: The settings a stream profile (``[streams."<glob>"]``) may set, with those named by
#: :data:`PER_STREAM_PREFIXES`; every other setting is deployment-wide, and an error in a profile.
PER_STREAM = frozenset({
    "features", "categorical", "task", "target", "target_class", "model", "model_params", "model_seed", "output", "loss",
    "explainers", "alpha", "storage_size", "grid_size", "sample_rate", "emit_every",
    "max_label_delay", "label_timeout_s", "fast_path", "local",
})
PER_STREAM_PREFIXES = ("isage_", "change_", "local_")


#: settings under another name, by their old one: refused with one line naming the new one
RENAMED = {f"drift_{n}": f"change_{n}" for n in (
    "delta", "explainers", "min_effect", "min_samples", "window", "warmup", "episode_gap", "episode_max",
    "alert_kinds")} | {"isage_inner_samples": "isage_n_inner_samples"}  # an explainer's setting: its prefix + parameter


def check_renamed(name: str, where: str = "") -> None:
    """Refuse ``name`` if it is the old name of a setting (:data:`RENAMED`), saying the new one;
    ``where`` (the file or table it came from) begins the line.

    >>> check_renamed("drift_delta", "settings file s.toml: ")
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: settings file s.toml: setting 'drift_delta' is now 'change_delta'
    >>> check_renamed("change_delta")
    """
    if name in RENAMED:
        raise ConfigError(f"{where}setting {name!r} is now {RENAMED[name]!r}")


def _check_renamed_env(env: Mapping[str, str]) -> None:
    """Refuse an environment variable of a setting's old name, saying the new variable.

    >>> _check_renamed_env({"STREAMXAI_DRIFT_WARMUP": "10"})
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: setting 'STREAMXAI_DRIFT_WARMUP' is now 'STREAMXAI_CHANGE_WARMUP'
    """
    for old, new in RENAMED.items():
        if env_name(old) in env:
            raise ConfigError(f"setting {env_name(old)!r} is now {env_name(new)!r}")


#: the shortest retention the worker sets on its topics (internal_retention_ms), and the smallest size
_MIN_RETENTION_MS = 3600 * 1000
_MIN_RETENTION_BYTES = 1024 * 1024


def is_per_stream(name: str) -> bool:
    """Whether a stream profile may set ``name``.

    >>> is_per_stream("model"), is_per_stream("change_delta"), is_per_stream("partitions")
    (True, True, False)
    """
    return name in PER_STREAM or name.startswith(PER_STREAM_PREFIXES)


class Secret:
    """A string that shows as ``'***'`` everywhere but :meth:`reveal`."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self):  # never pickled into checkpoints with its value
        return (Secret, ("",))


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: json.loads(json.dumps(d)), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class Settings:
    # Kafka connection
    """Every field has a default, a help text and an environment variable ``STREAMXAI_<NAME>``.
    :func:`load_settings` merges, in increasing priority: defaults, a TOML file, the
    environment, explicit overrides. Secrets are :class:`Secret` values that never show their
    content in ``repr``, logs or exceptions.

    **Stream profiles.** ``streams`` (in a file: ``[streams."<glob>"]`` tables) maps globs over
    stream ids to the per-stream settings (:func:`is_per_stream`) they override;
    :meth:`Settings.for_stream` gives a stream's effective settings (the first matching profile
    on top of the top-level settings), as docs/pages/how-to/profiles.md describes.
    """
    bootstrap_servers: str = _f("127.0.0.1:9092", "Kafka bootstrap servers, host:port[,host:port]")
    security_protocol: str = _f("PLAINTEXT", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    sasl_mechanism: str = _f("PLAIN", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
    sasl_username: str = _f("", "SASL user name")
    sasl_password: Secret = _f(Secret(""), "SASL password (secret)", secret=True)
    ssl_cafile: str = _f("", "CA bundle for TLS")
    ssl_certfile: str = _f("", "client certificate for TLS")
    ssl_keyfile: str = _f("", "client private key for TLS")
    ssl_key_password: Secret = _f(Secret(""), "password of the TLS private key (secret)", secret=True)
    # Topics and app
    app_id: str = _f("streamxai", "Faust app id: consumer group and internal topic prefix")
    topic_prefix: str = _f("streamxai.", "prefix of every topic name")
    partitions: int = _f(4, "partitions of the topics the worker creates")
    replication_factor: int = _f(0, "replication factor of the topics the worker creates (0: what the cluster allows, "
                                    "3 or its number of brokers if fewer)")
    min_insync_replicas: int = _f(0, "min.insync.replicas of the topics the worker creates: how many replicas must hold "
                                     "a write before it counts (0: one less than the replication factor, at least 1)")
    web_port: int = _f(6066, "port of the worker's metrics endpoints: GET /metrics (Prometheus) and /streamxai/metrics (JSON)")
    web_host: str = _f("127.0.0.1", "address the metrics endpoint listens on")
    state_dir: str = _f(".streamxai/state", "directory for worker-local state")
    checkpoint_key: Secret = _f(Secret(""), "key authenticating checkpoints (HMAC-SHA256; secret, >= 16 characters); empty: a random key generated once into state_dir/checkpoint.key", secret=True)
    checkpoint_store: str = _f("local", "where checkpoints live: local (state_dir/checkpoints, shared by the workers of one host) or kafka (a compacted topic every worker reads; needs checkpoint_key)")
    checkpoint_every: int = _f(2000, "checkpoint each stream model, explainer group and stream change state every N of its messages (0: off)")
    max_live_streams: int = _f(0, "the most states each handler of a worker keeps in memory (stream models, explainer groups, change states, each handler its own); beyond it the least recently used is checkpointed and dropped, and restored exactly from that checkpoint on its stream's next message (needs checkpoint_every > 0). 0: no limit")
    checkpoint_on_stop: bool = _f(True, "when the worker stops, checkpoint every state changed since its last checkpoint, those of the most messages since first, so a restart replays nothing; those not written by 60% of shutdown_timeout_s (many streams on a slow disk) are replayed after a restart (off: a restart replays up to checkpoint_every messages per key)")
    session_timeout_s: float = _f(30.0, "consumer group session timeout: how soon a dead worker's partitions move")
    output_linger_ms: int = _f(50, "how long a worker's outputs (predictions, explanations, change events, dead letters) may wait to fill a batch before they are sent, in ms (0-1000); the records its own agents read next wait at most 5 ms. Longer: fewer requests, less CPU for the worker and the broker")
    shutdown_timeout_s: float = _f(15.0, "a worker asked to stop (SIGTERM) that has not stopped after this many seconds exits at once (its uncommitted messages are processed again after a restart)")
    # Retention of the topics the worker creates (docs/pages/how-to/retention.md)
    internal_retention_ms: int = _f(7 * 24 * 3600 * 1000, "retention.ms of the topics the worker creates, except the "
                                    "features and labels inputs: how long a message is kept, in ms (-1: for ever). "
                                    "A restart is exact while it keeps every message since each key's checkpoint")
    internal_retention_bytes: int = _f(-1, "retention.bytes of the topics the worker creates, except the features and "
                                           "labels inputs: the most each partition keeps, in bytes (-1: no limit)")
    # Data
    features: list = _f([], "feature names every event must carry, in model order (a worker needs them here or in "
                            "every stream profile)")
    categorical: list = _f([], "features that are categorical (strings or integers)")
    task: str = _f("classification", "task: classification (the model predicts a label) or regression (a number); "
                                      "a model, output or loss made for the other task is refused when the settings load")
    target: str = _f("", "label field of the records and CSV files `streamxai produce` reads (--target overrides it); empty: the first of label (number for regression), y and target the file has")
    max_message_bytes: int = _f(64 * 1024, "larger input messages go to the dead-letter topic")
    max_dead_letter_bytes: int = _f(512 * 1024, "dead letters (key and value) stay under this size, cutting the original to a prefix with its size and SHA-256; keep it below the broker's message.max.bytes (it also bounds the worker's produce batches, 256 KiB at most)")
    max_seq_gap: int = _f(10_000, "an event more than this beyond its stream's last accepted seq goes to the dead-letter topic (reason seq_gap); a stream's first seq must be below it")
    # Model
    model: str = _f(DEFAULT_MODEL, "import path of the river model class")
    model_params: dict = _f(None, "keyword arguments of the model (JSON object); left out: {\"grace_period\": 50} "
                                  "for a model that takes grace_period (the default tree, river's Hoeffding trees "
                                  "and forests), {} for any other")
    model_seed: int = _f(42, "seed passed to the model when its constructor takes one")
    output: str = _f("label", "model output scored on the prediction topic: label or value")
    loss: str = _f("zero_one", "loss of the prediction topic and of iPFI")
    # Explainers
    explainers: list = _f(list(EXPLAINER_NAMES), f"explainers to run: {', '.join(EXPLAINER_NAMES)}")
    target_class: Any = _f(1, "class whose probability iSAGE (cross-entropy) and iPDP explain")
    alpha: float = _f(0.001, "smoothing of every explainer (iPFI, iSAGE, iPDP papers' alpha)")
    storage_size: int = _f(100, "reservoir size of iPFI and iSAGE")
    grid_size: int = _f(10, "iPDP grid points per feature")
    isage_removal: str = _f("interventional", "iSAGE feature removal: interventional or observational")
    isage_loss: str = _f("squared", "iSAGE loss for classification: squared (Brier on the probability of target_class) or cross_entropy")
    isage_n_inner_samples: int = _f(0, "iSAGE inner samples m per coalition (0: 2 for squared/Brier, unbiased; 8 for cross_entropy, whose bias falls like 1/m)")
    explain_seed: int = _f(0, "seed of every explainer's random draws")
    explain_groups: int = _f(1, "explainer work groups per stream, one model replica each: set it to the workers one stream's explanations should spread over")
    sample_rate: float = _f(1.0, "fraction of events explained (deterministic by stream and seq)")
    max_lag_s: float = _f(0.0, "shed explanation of events older than this many seconds (0: never)")
    emit_every: int = _f(10, "publish explanations every N explained events of a group")
    local: bool = _f(False, "local attributions: each sampled prediction's exact Shapley values (sampled with a standard error for models without a known structure) on the local-explanations topic, against iSAGE's reservoir of recent values (needs isage among the explainers)")
    local_sample_rate: float = _f(1.0, "fraction of predictions explained locally when local is on (deterministic by stream and seq)")
    local_top_k: int = _f(0, "features a local explanation lists: the k largest by absolute value, with the event's value of each; the others' sum is its rest (0: every feature)")
    local_change: bool = _f(False, "the change test also watches each feature's mean absolute local attribution, one value every emit_every local explanations (explainer local on the explanations topic; needs local)")
    local_class: str = _f("predicted", "class whose probability a local explanation of a classifier explains: predicted (the class the model predicts for the event) or target_class (the stream's target_class, whatever the prediction); the message's target names it")
    fast_path: str = _f("auto", "auto: evaluate recognised river models (Hoeffding trees, ARF, linear and logistic regression) from their internals, exactly the values of calling them and several times faster; off: always call the model")
    # Labels
    max_label_delay: int = _f(100_000, "an event waiting for its label expires once its stream has this many later events (by seq); it is then counted (labels_expired) and never learned")
    label_timeout_s: float = _f(0.0, "an event waiting for its label expires after this many seconds of arrival time (the arrivals topic's record timestamps); 0: off")
    # Change detection
    change_delta: float = _f(0.01, "bound on the probability that a stream without change ever raises a change event (all its series together)")
    change_explainers: list = _f(["ipfi", "isage", "ipdp"], "explainers whose series the change test watches (all running ones if none is listed); the others' levels and curves are shown in change events either way")
    change_min_effect: float = _f(0.1, "report a change only if the levels differ by this fraction of the explainer's largest importance in the stream")
    change_min_samples: int = _f(100, "explained events each side of a cut needs before the change test uses it")
    change_window: int = _f(20_000, "explained events per series the change test looks back over")
    change_warmup: int = _f(3000, "first events of each stream the change agent does not monitor (the model learns from nothing)")
    change_episode_gap: int = _f(1000, "changes of a stream fewer than this many events apart form one change episode")
    change_episode_max: int = _f(3000, "a change episode takes changes for at most this many events after its first; a later change opens an episode (and, if it is one, an alert) of its own")
    change_alert_kinds: list = _f(["degradation", "reliance_shift", "data_fault"], "change episodes of these kinds raise an alert (alert: true on the change-episodes topic and in the metrics): learning, degradation, reliance_shift, data_fault")
    change_inputs: bool = _f(True, "watch every feature's values for data faults (stuck, shifted or scaled, swapped, reordered) and the labels for a stop, and report a fault on a feature the model relies on (or a stop of the labels) as a data_fault episode of its own")
    change_fault_share: float = _f(0.15, "a data fault pages if the model relied on the feature by at least this share of the top feature's iPFI or iSAGE (from half of change_min_effect on it is reported, not paged)")
    # Stream profiles
    streams: dict = _f({}, 'stream profiles: per-stream settings for the stream ids a glob matches; in a settings '
                           'file [streams."<glob>"] tables, first match wins (JSON {glob: {setting: value}} elsewhere)')
    # Sources
    sources: dict = _f({}, "a team's own topics, read in its own record format: one [sources.<name>] table each with "
                           "topic (the team's topic, no topic_prefix), kind (features or labels), format (json, avro, "
                           "json_schema or protobuf), protobuf_message (module:Class, protobuf only), features (field "
                           "names or dotted paths), stream_id (key, or a field path), event_id (a field path), "
                           "event_time (a field path, or timestamp), label (a field path; optional in a features "
                           "source) and profile (the [streams.\"<name>:*\"] table that explains its streams); see "
                           "the how-to page Read a team's own topics")
    schema_registry_url: str = _f("", "URL of the schema registry (Confluent-compatible) that frames the records of sources with format avro, json_schema or protobuf; several: comma-separated")
    schema_registry_username: str = _f("", "user name for the schema registry (HTTP basic auth)")
    schema_registry_password: Secret = _f(Secret(""), "password for the schema registry (secret)", secret=True)
    schema_registry_cafile: str = _f("", "CA bundle that signed an https schema registry's certificate")

    def __post_init__(self) -> None:
        self._params_defaulted = self.model_params is None  # a model given alone gets the params it takes
        if self.model_params is None:
            self.model_params = default_model_params(self.model)
        for name in ("sasl_password", "ssl_key_password", "checkpoint_key", "schema_registry_password"):
            v = getattr(self, name)
            if not isinstance(v, Secret):
                setattr(self, name, Secret(str(v)))
        self.validate()

    def validate(self) -> None:
        def bad(msg: str) -> ConfigError:
            return ConfigError(f"setting {msg}")

        if self.partitions < 1 or self.explain_groups < 1 or self.emit_every < 1:
            raise bad("partitions, explain_groups and emit_every must be >= 1")
        if self.replication_factor < 0 or self.min_insync_replicas < 0:
            raise bad("replication_factor and min_insync_replicas must be >= 0 (0: what the cluster allows)")
        if self.replication_factor and self.min_insync_replicas > self.replication_factor:
            raise bad(f"min_insync_replicas={self.min_insync_replicas} must be at most replication_factor="
                      f"{self.replication_factor}: no write could be acknowledged")
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise bad(f"security_protocol={self.security_protocol!r} must be one of {', '.join(SECURITY_PROTOCOLS)}")
        if self.security_protocol.startswith("SASL"):
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise bad(f"sasl_mechanism={self.sasl_mechanism!r} must be one of {', '.join(SASL_MECHANISMS)}")
            if not self.sasl_username or not self.sasl_password.reveal():
                raise bad(f"security_protocol={self.security_protocol} needs sasl_username and sasl_password")
        if not 1 <= self.web_port <= 65535:
            raise bad(f"web_port={self.web_port} must be a port in 1-65535 (each worker of a host its own)")
        if not self.shutdown_timeout_s > 0:
            raise bad(f"shutdown_timeout_s={self.shutdown_timeout_s} must be > 0")
        if self.max_live_streams < 0 or (self.max_live_streams and not self.checkpoint_every):
            raise bad(f"max_live_streams={self.max_live_streams} must be >= 0 (0: no limit), and a limit needs "
                      "checkpoint_every > 0: a state dropped from memory is restored from its checkpoint")
        if self.checkpoint_store not in ("local", "kafka"):
            raise bad(f"checkpoint_store={self.checkpoint_store!r} must be local or kafka")
        if 0 < len(self.checkpoint_key.reveal()) < 16:
            raise bad("checkpoint_key is too short: use at least 16 characters (e.g. `openssl rand -hex 32`)")
        if self.internal_retention_ms != -1 and not self.internal_retention_ms >= _MIN_RETENTION_MS:
            raise bad(f"internal_retention_ms={self.internal_retention_ms} must be -1 (keep for ever) or at least "
                      f"{_MIN_RETENTION_MS} (one hour): a restart replays each key's messages since its checkpoint "
                      "from these topics (see docs/pages/how-to/retention.md)")
        if self.internal_retention_bytes != -1 and not self.internal_retention_bytes >= _MIN_RETENTION_BYTES:
            raise bad(f"internal_retention_bytes={self.internal_retention_bytes} must be -1 (no limit) or at least "
                      f"{_MIN_RETENTION_BYTES} (1 MiB) per partition")
        if not 4096 <= self.max_dead_letter_bytes <= 1_000_000:
            raise bad(f"max_dead_letter_bytes={self.max_dead_letter_bytes} must be in [4096, 1000000] "
                      "(Kafka's default message.max.bytes is 1 MiB)")
        if not 0 <= self.output_linger_ms <= 1000:
            raise bad(f"output_linger_ms={self.output_linger_ms} must be in [0, 1000] (milliseconds)")
        if self.max_seq_gap < 1:
            raise bad(f"max_seq_gap={self.max_seq_gap} must be >= 1")
        if self.max_label_delay < 1 or not 0 <= self.label_timeout_s < float("inf"):
            raise bad(f"max_label_delay={self.max_label_delay} must be >= 1 and label_timeout_s="
                      f"{self.label_timeout_s} a finite number >= 0 (0: off)")
        if not 0 < self.sample_rate <= 1:
            raise bad(f"sample_rate={self.sample_rate} must be in (0, 1]")
        if not 0 < self.local_sample_rate <= 1:
            raise bad(f"local_sample_rate={self.local_sample_rate} must be in (0, 1]")
        if self.local_top_k < 0:
            raise bad(f"local_top_k={self.local_top_k} must be >= 0 (0: every feature)")
        if self.local_class not in ("predicted", "target_class"):
            raise bad(f"local_class={self.local_class!r} must be predicted or target_class (the class set by "
                      "target_class)")
        if self.local and ("isage" not in self.explainers or self.isage_removal != "interventional"):
            raise bad(f"local=true needs isage among the explainers ({', '.join(self.explainers)}) with "
                      f"isage_removal=interventional (not {self.isage_removal}): its reservoir of recent values is "
                      "the background of the local attributions")
        if self.local_change and not self.local:
            raise bad("local_change=true watches the local attributions: it needs local=true")
        if not 0 < self.alpha <= 1:
            raise bad(f"alpha={self.alpha} must be in (0, 1]")
        unknown = set(self.explainers) - set(EXPLAINER_NAMES)
        if unknown:
            raise bad(f"explainers has unknown names {sorted(unknown)}; use {', '.join(EXPLAINER_NAMES)}")
        if self.output not in ("label", "value"):
            raise bad(f"output={self.output!r} must be label or value")
        if self.task in TASKS:
            try:
                check_task(self.task, self.model, self.loss, self.output)
            except ConfigError as e:
                raise bad(str(e)) from None
        unknown = set(self.change_explainers) - set(EXPLAINER_NAMES)
        if unknown:
            raise bad(f"change_explainers has unknown names {sorted(unknown)}; use {', '.join(EXPLAINER_NAMES)}")
        if not 0 < self.change_delta < 1:
            raise bad(f"change_delta={self.change_delta} must be in (0, 1)")
        if self.change_min_effect < 0 or self.change_min_samples < 2 or self.change_window < 2 * self.change_min_samples:
            raise bad("change_min_effect must be >= 0, change_min_samples >= 2 and change_window >= 2 * change_min_samples")
        if self.change_warmup < 0 or self.change_episode_gap < 0:
            raise bad("change_warmup and change_episode_gap must be >= 0")
        if self.change_episode_max < 1:
            raise bad(f"change_episode_max={self.change_episode_max} must be >= 1")
        unknown = set(self.change_alert_kinds) - {"learning", "degradation", "reliance_shift", "data_fault"}
        if unknown:
            raise bad(f"change_alert_kinds has unknown kinds {sorted(unknown)}; use learning, degradation, reliance_shift, "
                      "data_fault")
        if not 0 <= self.change_fault_share <= 1:
            raise bad(f"change_fault_share={self.change_fault_share} must be in [0, 1]")
        if self.isage_loss not in ("squared", "cross_entropy"):
            raise bad(f"isage_loss={self.isage_loss!r} must be squared or cross_entropy")
        if not isinstance(self.isage_n_inner_samples, int) or self.isage_n_inner_samples < 0:
            raise bad(f"isage_n_inner_samples={self.isage_n_inner_samples!r} must be an int >= 0 (0: the loss's default)")
        if self.fast_path not in ("auto", "off"):
            raise bad(f"fast_path={self.fast_path!r} must be auto or off")
        if self.isage_removal not in ("interventional", "observational"):
            raise bad(f"isage_removal={self.isage_removal!r} must be interventional or observational")
        try:
            if self.features:
                self.feature_spec()
            elif self.categorical:
                raise ValueError(f"categorical features {sorted(self.categorical)} are not in names [] (no features given)")
            elif self.task not in TASKS:
                raise ValueError(f"task={self.task!r} must be one of {TASKS}")
        except ValueError as e:
            raise bad(f"features/categorical/task: {e}") from None
        self._profiles = self._check_profiles()
        self.source_specs: dict[str, SourceSpec] = parse_sources(self.sources, self.streams)
        from .ingest.registry import check_registry  # the registry client is imported only where a source needs it

        check_registry(self.source_specs.values(), self.schema_registry_url)

    def _check_profiles(self) -> list[Settings]:
        """Each profile's effective settings, in file order; a ConfigError names the table and key."""
        if not isinstance(self.streams, dict):
            raise ConfigError(f"setting streams must be a table of stream profiles, not {type(self.streams).__name__}")
        by_name = {f.name: f for f in fields(Settings)}
        out = []
        for glob, table in self.streams.items():
            where = f"[streams.{toml_key(str(glob))}]"
            try:
                check_glob(glob)
            except ValueError as e:
                raise ConfigError(f"{where}: {e}") from None
            if not isinstance(table, dict):
                raise ConfigError(f"{where} must be a table of settings, not {_kind(table)} ({table!r})")
            values = {}
            for k, v in table.items():
                if k not in by_name:
                    check_renamed(k, f"{where}: ")
                    raise ConfigError(f"{where}: unknown setting {k!r}; see `streamxai worker --help`")
                if not is_per_stream(k):
                    raise ConfigError(f"{where}: {k} is deployment-wide (the same for every stream: Kafka, topics, "
                                      "partitions, explain_groups, ports, state, checkpoints); set it at the top level")
                try:
                    _check_toml_type(by_name[k], v, "this table")
                    values[k] = _convert(by_name[k], v, "this table")
                except ConfigError as e:
                    raise ConfigError(f"{where}: {e}") from None
            if "model" in values and "model_params" not in values and self._params_defaulted:
                values["model_params"] = None  # the profile's model's own, not the top-level model's
            try:
                merged = dataclasses.replace(self, streams={}, sources={}, **values)  # sources: deployment-wide
            except ConfigError as e:
                raise ConfigError(f"{where}: {e}") from None
            out.append(merged)
        self._matcher = ProfileMatcher(list(self.streams))
        self._by_stream: dict[str, Settings] = {}  # stream id -> its settings (for_stream)
        return out

    def for_stream(self, stream_id: str) -> Settings:
        """The effective settings of ``stream_id``: its first matching profile's, or these
        settings; cached per stream id (the handlers look them up several times an event)."""
        found = self._by_stream.get(stream_id)
        if found is None:
            i = self._matcher.match(stream_id)
            found = self if i is None else self._profile_settings(i)
            if len(self._by_stream) >= self._matcher.max_cached:
                self._by_stream.clear()
            self._by_stream[stream_id] = found
        return found

    def profile(self, stream_id: str) -> str | None:
        """The glob of the profile ``stream_id`` falls under (None: none, the top-level settings)."""
        i = self._matcher.match(stream_id)
        return None if i is None else self._matcher.globs[i]

    def profiles(self) -> dict[str, Settings]:
        """The effective settings of each profile, by glob, in file order."""
        return {g: self._profile_settings(i) for i, g in enumerate(self._matcher.globs)}

    def _profile_settings(self, i: int) -> Settings:
        merged = self._profiles[i]
        if not hasattr(merged, "_sources"):  # set on first use: load_settings gives self its sources after __init__
            glob = self._matcher.globs[i]
            merged._sources = {**self._given(), **dict.fromkeys(self.streams[glob], f"profile {_quoted(glob)}")}
        return merged

    def check_files(self) -> None:
        """The files the settings name exist, are readable and load as TLS files (run once at startup)."""
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "schema_registry_cafile"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(f"setting {name}={path!r}: no such file")
            if path:
                try:
                    Path(path).open("rb").close()
                except OSError as e:
                    raise ConfigError(f"setting {name}={path!r} cannot be read: {e.strerror}") from None
        check_tls_files(self.ssl_cafile, self.ssl_certfile, self.ssl_keyfile, self.ssl_key_password.reveal())

    def feature_spec(self) -> FeatureSpec:
        return FeatureSpec(tuple(self.features), frozenset(self.categorical), self.task)

    def stream_feature_spec(self, stream_id: str) -> FeatureSpec:
        """The features ``stream_id`` must carry: its profile's, else the top-level ones.
        ``LookupError`` (a dead letter, reason ``no_profile``) when neither gives any.

        >>> s = Settings(streams={"r-*": {"features": ["a"]}})
        >>> s.stream_feature_spec("r-1").names
        ('a',)
        >>> s.stream_feature_spec("x")
        Traceback (most recent call last):
        ...
        LookupError: stream 'x' matches no stream profile ("r-*") and the top-level settings give no features; add a [streams."<glob>"] table whose glob matches it, or top-level features
        """
        s = self.for_stream(stream_id)
        spec = getattr(s, "_spec", None)
        if spec is None:
            if not s.features:
                where = (f"matches no stream profile ({', '.join(map(_quoted, self.streams))})" if self.streams
                         else "has no stream profile")
                raise LookupError(f"stream {stream_id!r} {where} and the top-level settings give no features; add a "
                                  "[streams.\"<glob>\"] table whose glob matches it, or top-level features")
            i = self._matcher.match(stream_id)
            origin = "" if i is None else f"stream profile {_quoted(self._matcher.globs[i])}"
            spec = s._spec = FeatureSpec(tuple(s.features), frozenset(s.categorical), s.task, origin)
        return spec

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes``; they count as set by the program (see :meth:`source`)."""
        if "model_params" not in changes and getattr(self, "_params_defaulted", False):
            changes["model_params"] = None  # still the model's own default (of a new model, if one is given)
        new = dataclasses.replace(self, **changes)
        new._sources = {**self._given(), **dict.fromkeys(changes, "program")}
        return new

    def source(self, name: str) -> str:
        """Where setting ``name`` came from: ``"default"``, ``"file"``, ``"environment"``,
        ``"command line"`` (``--set``, ``--bootstrap``), or ``"program"`` (:meth:`replace`).

        >>> s = load_settings(None, env={"STREAMXAI_ALPHA": "0.01"}, grid_size="7")
        >>> s.source("alpha"), s.source("grid_size"), s.source("loss"), s.replace(loss="log").source("loss")
        ('environment', 'command line', 'default', 'program')
        """
        if name not in self.__dataclass_fields__:
            raise ValueError(f"unknown setting {name!r}")
        return self._given().get(name, "default")

    def explicit(self) -> frozenset[str]:
        """The settings a file, the environment or the command line gave: a command's own
        defaults (e.g. the demo's) must not override them."""
        return frozenset(n for n, src in self._given().items() if src in _USER_SOURCES or src.startswith("profile"))

    def _given(self) -> dict[str, str]:
        return getattr(self, "_sources", {})

    def public_dict(self) -> dict[str, Any]:
        """All settings with secrets masked, for logs and ``streamxai config``."""
        return {f.name: (repr(v) if isinstance(v, Secret) else v) for f in fields(self) for v in [getattr(self, f.name)]}


_USER_SOURCES = ("file", "environment", "command line")


def env_name(field_name: str) -> str:
    return f"STREAMXAI_{field_name.upper()}"


def _convert(f: dataclasses.Field, raw: Any, source: str) -> Any:
    typ = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    try:
        if f.metadata.get("secret"):
            return Secret(str(raw))
        if typ == "int":
            return int(raw)
        if typ == "float":
            return float(raw)
        if typ == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if typ in ("list", "dict"):
            if isinstance(raw, str):
                raw = raw.strip()
                if typ == "list" and not raw.startswith("["):
                    return [p.strip() for p in raw.split(",") if p.strip()]
                raw = json.loads(raw)
            want = list if typ == "list" else dict
            if not isinstance(raw, want):
                raise TypeError(f"expected a {typ}")
            return raw
        if typ == "Any" and isinstance(raw, str):
            try:
                return json.loads(raw)
            except json.JSONDecodeError:
                return raw
        return raw if typ == "Any" else str(raw)
    except (TypeError, ValueError) as e:
        shown = "***" if f.metadata.get("secret") else repr(raw)
        raise ConfigError(f"setting {f.name} from {source} is {shown}: {e}") from None


_TOML_TYPES = {"int": ((int,), "an integer"), "float": ((int, float), "a number"), "str": ((str,), "a string"),
               "list": ((list,), "an array"), "dict": ((dict,), "a table"), "Secret": ((str,), "a string"),
               "bool": ((bool,), "a boolean (true or false)")}


def _kind(raw: Any) -> str:
    return {str: "a string", bool: "a boolean", list: "an array", dict: "a table", int: "an integer",
            float: "a number"}.get(type(raw), type(raw).__name__)


def _quoted(glob: str) -> str:
    return json.dumps(glob)


def _check_toml_type(f: dataclasses.Field, raw: Any, source: str) -> None:
    """TOML has types: a quoted "0.01" for a number is a mistake, not something to guess at."""
    typ = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if typ not in _TOML_TYPES:
        return
    ok, want = _TOML_TYPES[typ]
    if (isinstance(raw, bool) and typ != "bool") or not isinstance(raw, ok):
        shown = "***" if f.metadata.get("secret") else repr(raw)
        raise ConfigError(f"setting {f.name} in {source} is {_kind(raw)} ({shown}); expected {want}"
                          + (" (write it without quotes)" if isinstance(raw, str) and typ in ("int", "float") else ""))


def utf8_file_text(p: Path, what: str = "settings file") -> str:
    """The text of the TOML file ``p`` (TOML is UTF-8); one that is not is a :class:`ConfigError`
    that says where, showing none of the file (it may hold a password)."""
    raw = p.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"{what} {p} is not UTF-8 text (byte 0x{raw[e.start]:02x} at line {line}); TOML files "
                          "are UTF-8: save it as UTF-8") from None


def load_settings(
    path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Defaults < TOML file ``path`` < environment ``env`` < ``overrides``."""
    by_name = {f.name: f for f in fields(Settings)}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if path:
        p = Path(path)
        try:
            data = tomllib.loads(utf8_file_text(p))
        except FileNotFoundError:
            raise ConfigError(f"settings file {p} does not exist") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"settings file {p} is not valid TOML: {e}") from None
        for k, v in data.items():
            if k not in by_name:
                check_renamed(k, f"settings file {p}: ")
                raise ConfigError(f"settings file {p}: unknown setting {k!r}; see `streamxai worker --help`")
            _check_toml_type(by_name[k], v, str(p))
            values[k] = _convert(by_name[k], v, str(p))
            sources[k] = "file"
    if env:
        _check_renamed_env(env)
    for name, f in by_name.items():
        if env and env_name(name) in env:
            values[name] = _convert(f, env[env_name(name)], f"${env_name(name)}")
            sources[name] = "environment"
    for k, v in overrides.items():
        if v is None:
            continue
        if k not in by_name:
            check_renamed(k, "--set: ")
            raise ConfigError(f"unknown setting {k!r}")
        values[k] = _convert(by_name[k], v, "the command line")
        sources[k] = "command line"
    try:
        s = Settings(**values)
    except ConfigError as e:
        if str(e).startswith("[streams.") and sources.get("streams"):  # say where the profile came from
            origin = {"file": f"settings file {path}", "environment": "$STREAMXAI_STREAMS",
                      "command line": "--set streams"}[sources["streams"]]
            raise ConfigError(f"{origin}: {e}") from None
        raise
    s._sources = sources
    s.check_files()
    return s
