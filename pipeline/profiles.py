"""Which stream profile a stream id falls under: ``[streams."<glob>"]`` globs, first match wins.

>>> m = ProfileMatcher(["fraud-*", "churn-[0-9]*", "*"])
>>> m.match("fraud-eu"), m.match("churn-7"), m.match("churn-x")
(0, 1, 2)
>>> ProfileMatcher(["a?"]).match("abc") is None
True
>>> check_glob("fraud *")
Traceback (most recent call last):
...
ValueError: glob 'fraud *' may use only the characters of stream ids (A-Z a-z 0-9 _ - . : @ + = ~) and the wildcards * ? [...] [!...]
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from streamxai.schemas.features import STREAM_ID_CHARS

__all__ = ["ProfileMatcher", "check_glob"]

_ID = r"A-Za-z0-9_.:@+=~\-"
_GLOB = re.compile(rf"(?:[{_ID}*?]|\[!?[{_ID}]+\])+")
_MAX_GLOB = 256


def check_glob(glob: object) -> None:
    """``ValueError`` unless ``glob`` is a glob that can match stream ids."""
    if not isinstance(glob, str) or not glob:
        raise ValueError(f"glob {glob!r} is empty; name the streams, e.g. \"fraud-*\"")
    if len(glob) > _MAX_GLOB:
        raise ValueError(f"glob {glob[:40]!r}... is longer than {_MAX_GLOB} characters")
    if not _GLOB.fullmatch(glob):
        raise ValueError(f"glob {glob!r} may use only the characters of stream ids ({STREAM_ID_CHARS}) and the "
                         "wildcards * ? [...] [!...]")


class ProfileMatcher:
    """The index of the first glob matching a stream id (``None``: no glob matches).

    Answers are cached per stream id (at most ``max_cached``). The globs are shell-style
    (:func:`fnmatch.fnmatchcase`, case-sensitive) over the characters a stream id may use.

    >>> m = ProfileMatcher(["eu-*", "eu-fraud-*"])
    >>> m.match("eu-fraud-1"), m.globs[m.match("eu-fraud-1")]  # the first in order, not the most specific
    (0, 'eu-*')
    """

    def __init__(self, globs: Sequence[str], max_cached: int = 100_000):
        for g in globs:
            check_glob(g)
        self.globs = list(globs)
        self._patterns = [re.compile(fnmatch.translate(g)) for g in self.globs]
        self._cache: dict[str, int | None] = {}
        self.max_cached = max_cached

    def match(self, stream_id: str) -> int | None:
        try:
            return self._cache[stream_id]
        except KeyError:
            pass
        found = next((i for i, p in enumerate(self._patterns) if p.match(stream_id)), None)
        if len(self._cache) >= self.max_cached:
            self._cache.clear()
        self._cache[stream_id] = found
        return found
