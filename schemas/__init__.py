"""The wire format: versioned message types, JSON Schema files, (de)serialisation, validation."""

from .arrivals import origin, origin_headers, pack_arrivals, parse_arrival, unpack_arrivals
from .change_feed import pack_feed, pack_report, report_documents, unpack_feed
from .errors import (
    BadValue,
    CategoryTypeMismatch,
    ConfigError,
    FeatureMismatch,
    InvalidMessage,
    LabelRejected,
    LabelTypeMismatch,
    MalformedMessage,
    NoProfile,
    OversizedMessage,
    SchemaMismatch,
    StreamxaiError,
)
from .features import FeatureSpec, parse_feature_event
from .labels import parse_label_event
from .messages import (
    MESSAGE_TYPES,
    ChangeEpisode,
    ChangeEvent,
    DeadLetter,
    ExplainDecision,
    ExplainTask,
    Explanation,
    FeatureEvent,
    LabelEvent,
    LabelOutcome,
    Prediction,
)
from .parsing import parse_explain_task, parse_explanation
from .source import Headers, Source
from .task_batches import pack_tasks, unpack_tasks
from .wire import DEFAULT_MAX_BYTES, b64, decode, decode_as, dumps, dumps_fields, dumps_obj

__all__ = [
    "BadValue",
    "ChangeEpisode",
    "ChangeEvent",
    "ConfigError",
    "DEFAULT_MAX_BYTES",
    "DeadLetter",
    "ExplainDecision",
    "ExplainTask",
    "Explanation",
    "FeatureEvent",
    "FeatureMismatch",
    "FeatureSpec",
    "Headers",
    "InvalidMessage",
    "LabelEvent",
    "LabelOutcome",
    "LabelRejected",
    "LabelTypeMismatch",
    "CategoryTypeMismatch",
    "MESSAGE_TYPES",
    "MalformedMessage",
    "NoProfile",
    "OversizedMessage",
    "Prediction",
    "SchemaMismatch",
    "Source",
    "StreamxaiError",
    "b64",
    "decode",
    "decode_as",
    "dumps",
    "dumps_fields",
    "dumps_obj",
    "origin",
    "origin_headers",
    "pack_arrivals",
    "pack_feed",
    "pack_report",
    "report_documents",
    "pack_tasks",
    "parse_arrival",
    "unpack_arrivals",
    "unpack_feed",
    "unpack_tasks",
    "parse_feature_event",
    "parse_label_event",
    "parse_explain_task",
    "parse_explanation",
]
