"""One exception root for streamxai.

    StreamxaiError
    ├── InvalidMessage            bad input; the message goes to the dead-letter topic
    │   ├── MalformedMessage      not UTF-8 JSON, or not a JSON object
    │   ├── OversizedMessage      larger than the configured limit
    │   ├── SchemaMismatch        unknown type or schema version, missing or wrong-typed field
    │   ├── FeatureMismatch       missing or unexpected features
    │   ├── NoProfile             a stream no stream profile matches, where the settings give no features
    │   ├── BadValue              NaN, infinity, or a value of the wrong type
    │   │   ├── LabelTypeMismatch a label of the wrong type for the task
    │   │   └── CategoryTypeMismatch a categorical value of another type than the stream's earlier ones
    │   └── LabelRejected         a label that cannot be joined to its event (expired, unknown seq,
    │                             already labelled); ``reason`` says which
    ├── ConfigError               settings that cannot work; the worker refuses to start
    └── BrokerError               no broker answers, or the local one cannot be set up or started
                                  (defined in streamxai.kafka.config; streamxai.local.broker raises it too)

Every message names the offending value and where it came from.
"""

from __future__ import annotations

__all__ = [
    "StreamxaiError",
    "InvalidMessage",
    "MalformedMessage",
    "OversizedMessage",
    "SchemaMismatch",
    "FeatureMismatch",
    "NoProfile",
    "BadValue",
    "LabelTypeMismatch",
    "CategoryTypeMismatch",
    "LabelRejected",
    "ConfigError",
]


class StreamxaiError(Exception):
    """Root of every error raised on purpose by streamxai."""


class InvalidMessage(StreamxaiError, ValueError):
    """A message that cannot be processed; ``reason`` is a short machine-readable tag."""

    reason = "invalid"

    def __init__(self, message: str, *, where: str | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class MalformedMessage(InvalidMessage):
    reason = "malformed"


class OversizedMessage(InvalidMessage):
    reason = "oversized"


class SchemaMismatch(InvalidMessage):
    reason = "schema"


class FeatureMismatch(InvalidMessage):
    reason = "features"


class NoProfile(InvalidMessage):
    reason = "no_profile"


class BadValue(InvalidMessage):
    reason = "bad_value"


class LabelTypeMismatch(BadValue):
    reason = "label_type"


class CategoryTypeMismatch(BadValue):
    reason = "category_type"


class LabelRejected(InvalidMessage):
    """A valid label event that cannot be joined to its feature event; ``reason`` is one of
    ``label_expired``, ``label_unknown_seq``, ``label_already_labelled``."""

    def __init__(self, message: str, *, reason: str, where: str | None = None):
        super().__init__(message, where=where)
        self.reason = reason


class ConfigError(StreamxaiError, ValueError):
    """Settings that cannot work."""
