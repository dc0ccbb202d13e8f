"""Notice a misconfigured producer in minutes: a stream whose first events mostly go to the
dead-letter topic for one reason is one error line, with the reason.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable

import orjson

from .out import Out

__all__ = ["DeadLetterWatch"]

log = logging.getLogger("streamxai")


class DeadLetterWatch:
    """Counts the dead letters among the first ``first`` messages of each key; one error line for
    a key when one reason has more than ``share`` of them: dead letters are warning lines, easily
    lost, while a producer sending the wrong features has every event refused. Remembers at
    most ``max_keys`` keys, so random keys cannot grow it without bound.

    >>> watch = DeadLetterWatch(first=4)
    >>> bad = Out("dead-letters", b"s", b'{"error": "BadValue: size is 1.5"}', reason="bad_value")
    >>> [watch.observe(b"s", outs) for outs in ([bad], [], [bad], [bad], [bad])]  # 3 of 4: logged once
    [None, None, None, 'bad_value', None]
    """

    def __init__(self, first: int = 100, share: float = 0.5, max_keys: int = 100_000):
        self.first, self.share, self.max_keys = first, share, max_keys
        #: messages seen of each key still watched: an int a key, whatever the number of streams
        self._seen: dict[bytes, int] = {}
        #: of the keys still watched that had dead letters: the count and an example of each reason
        self._dead: dict[bytes, tuple[Counter[str], dict[str, str]]] = {}
        self._done: set[bytes] = set()

    def observe(self, key: bytes | None, outs: Iterable[Out]) -> str | None:
        """Count one message of ``key`` and its outputs; the reason when this call logged the error."""
        if key is None or key in self._done:
            return None
        seen = self._seen.get(key)
        if seen is None and len(self._seen) + len(self._done) >= self.max_keys:
            return None
        seen = self._seen[key] = (seen or 0) + 1
        dead = next((o for o in outs if o.topic == "dead-letters"), None)
        logged = None
        if dead is not None:
            reasons, examples = self._dead.setdefault(key, (Counter(), {}))
            reason = dead.reason or "error"
            reasons[reason] += 1
            if reason not in examples:
                examples[reason] = _error(dead.value)
            if reasons[reason] > self.share * self.first:
                log.error("stream %r: %d of its first %d events here went to the dead-letter topic as %s, e.g. %s; "
                          "check the producer and the settings it was given (features, categorical, target); "
                          "`streamxai tail dead-letters` shows them", key.decode(errors="replace")[:130],
                          reasons[reason], seen, reason, examples[reason])
                logged = reason
        if logged is not None or seen >= self.first:
            del self._seen[key]
            self._dead.pop(key, None)
            self._done.add(key)
        return logged


def _error(value: bytes) -> str:
    try:
        text = str(orjson.loads(value).get("error", ""))
    except (orjson.JSONDecodeError, AttributeError):
        text = ""
    return text[:300] or "(no error text)"
