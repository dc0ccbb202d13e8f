"""Output-topic messages in the versions workers send: :func:`shaped` adds a test's fields the ``schema`` and
each seq field's position (equal to the seq), unless given."""

from __future__ import annotations

from typing import Any

from streamxai.local.output_reader import OutputReader

#: each seq field of a message and the field of its position
POSITIONS = {"seq": "position", "cut_seq": "cut_position", "first_seq": "first_position",
             "last_seq": "last_position", "closed_seq": "closed_position"}


def shaped(topic: str, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` as a message of ``topic`` the reader reads: its version, each seq field's position, and a
    prediction's label.

    >>> shaped("drift-events", {"stream_id": "s", "seq": 9, "cut_seq": 4})["schema"]
    'drift_event/v3'
    >>> sorted(shaped("change-episodes", {"first_seq": 9, "changes": [{"seq": 9}]})["changes"][0].items())
    [('position', 9), ('seq', 9)]"""
    out: dict[str, Any] = {"schema": OutputReader.VERSIONS[topic][0]}
    if topic == "predictions":
        out["y_true"] = 1
    out.update({POSITIONS[f]: v for f, v in fields.items() if f in POSITIONS})
    out.update(fields)
    if topic == "change-episodes" and isinstance(fields.get("changes"), list):
        out["changes"] = [shaped("drift-events", c) if isinstance(c, dict) else c for c in fields["changes"]]
        for c in out["changes"]:
            if isinstance(c, dict):
                c.pop("schema")
    return out
