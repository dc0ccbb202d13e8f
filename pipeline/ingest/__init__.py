"""Feature and label events from JSONL and CSV files, for ``streamxai produce FILE`` (and
``--labels``, ``--label-delay N``). A bad line is recorded in a :class:`FileReport` and skipped;
a missing file or column is a :class:`~schemas.ConfigError` before any Kafka connection.
"""

from .events import file_events, file_streams
from .label_delay import labels_after
from .labels import file_labels
from .lines import FileReport

__all__ = ["file_events", "file_labels", "file_streams", "labels_after", "FileReport"]
