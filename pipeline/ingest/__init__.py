"""Feature events from files, for ``streamxai produce FILE``: JSONL (feature events or plain
``{feature: value, ..., target: y}`` objects) and CSV (a header of feature names and the target);
and label events, for ``streamxai produce FILE --labels`` (:func:`file_labels`).
A bad line is recorded with its line number in a :class:`FileReport` and skipped; a missing
file, feature column or target column is a :class:`~schemas.ConfigError` (one line, before any
Kafka connection).
The parts: :mod:`.lines` reads a file's lines and rows (UTF-8, CSV rows and their width, JSON
objects, the target column) and keeps the :class:`FileReport`; :mod:`.values` checks and
converts one value (features, targets, seqs, timestamps); :mod:`.events` and :mod:`.labels`
make the feature and label events; :mod:`.label_delay` sends the labels of feature events
later (``produce FILE --label-delay N``).
"""

from .events import file_events, file_streams
from .label_delay import labels_after
from .labels import file_labels
from .lines import FileReport

__all__ = ["file_events", "file_labels", "file_streams", "labels_after", "FileReport"]
