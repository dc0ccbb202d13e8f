"""A team topic's records through the intake and the model handlers in process, for the tests of
the registry-framed source formats."""

from __future__ import annotations

import orjson
from streamxai.handlers import IntakeHandler, ModelHandler, Source

__all__ = ["source_outputs"]


def source_outputs(intake: IntakeHandler, model: ModelHandler, records, topic: str) -> tuple[list[tuple], list[dict]]:
    """The predictions and explain tasks of ``records`` ((key, value) pairs of ``topic``) as
    ``(topic, key, message)``, without the wall-clock ``sent_at``, and the intake's dead letters."""
    got, letters = [], []
    for off, (k, v) in enumerate(records):
        for out in intake.on_message(v, k, Source(topic, 0, off, timestamp=1.0)):
            if out.topic != "arrivals":
                letters.append(orjson.loads(out.value))
                continue
            for o in model.on_message(out.value, out.key, Source("arrivals", 0, off, headers=out.headers)):
                if o.topic in ("predictions", "explain-tasks"):
                    m = orjson.loads(o.value)
                    m.pop("sent_at", None)  # the wall clock when a task was made
                    got.append((o.topic, o.key, m))
    return got, letters
