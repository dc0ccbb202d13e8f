"""How a handler's states fail, and what it keeps of their failures so that no input makes it
rebuild a key's state message after message."""

from __future__ import annotations

from streamxai.schemas import Source

__all__ = ["Rebuilt", "Failing", "Guard", "StateError", "message_id", "MAX_FAILING_WAIT", "GUARD_WINDOW",
           "MAX_SKIPPED", "FAILING_STREAK"]


class Rebuilt:
    """How a key's state was just rebuilt (``checkpoint``: restored, then the messages after it
    replayed; ``history``: from the key's whole history), and how many earlier messages its
    replay took (``ok``) and saw fail (``failed``).

    >>> r = Rebuilt("history"); (r.how, r.ok, r.failed)
    ('history', 0, 0)
    """

    __slots__ = ("how", "ok", "failed")

    def __init__(self, how: str):
        self.how, self.ok, self.failed = how, 0, 0


class Failing:
    """A key whose state fails on every message, also rebuilt from its whole history: it is
    rebuilt again after ``wait`` more messages (1, 2, 4, ... up to :data:`MAX_FAILING_WAIT`), so
    a state that cannot work costs a few replays, and one that recovers comes back.

    >>> f = Failing("RuntimeError: x")
    >>> for _ in range(3):
    ...     f.failed_again("RuntimeError: x")
    >>> f.strikes, f.wait
    (3, 8)
    """

    __slots__ = ("strikes", "wait", "error")

    def __init__(self, error: str):
        self.strikes, self.wait, self.error = 0, 0, error

    def failed_again(self, error: str) -> None:
        self.strikes += 1
        self.wait = min(2 ** self.strikes, MAX_FAILING_WAIT)
        self.error = error


#: the most messages a failing key's messages are dead-lettered between two rebuilds
MAX_FAILING_WAIT = 1024
#: a key's state that fails twice within this many of its messages is guarded (:class:`Guard`)
#: until this many of its messages pass without a failure
GUARD_WINDOW = 1024
#: a guarded key whose state fails on this many messages in a row fails on every message
#: (:class:`Failing`)
FAILING_STREAK = 8
#: the most failed messages per key that a rebuild of its state skips (the newest)
MAX_SKIPPED = 4096


def message_id(raw: bytes | None, src: Source) -> tuple[str, int | None, int | None, int]:
    """Where a message is, and a hash of it (the messages of one record in a batch form share the place).

    >>> message_id(b"m", Source("t", 0, 7))[:3]
    ('t', 0, 7)
    """
    return (src.topic, src.partition, src.offset, hash(raw))


class Guard:
    """A key whose state failed lately. A second failure within :data:`GUARD_WINDOW` of its
    messages guards it: each message is then taken on a copy of the state, and one that fails
    leaves the state as it was, so repeated failures cost a copy each, never a rebuild from
    history. Unguarded once :data:`GUARD_WINDOW` messages pass without a failure.

    >>> g = Guard(); g.seen, g.last_failure = 10, 10
    >>> g.quiet(), (g.seen + GUARD_WINDOW - g.last_failure) >= GUARD_WINDOW
    (False, True)
    """

    __slots__ = ("seen", "last_failure", "failures", "on", "streak")

    def __init__(self) -> None:
        self.seen = 0  # messages of the key taken since it first failed
        self.last_failure = 0  # the value of seen at its last failure
        self.failures = 0  # failures within GUARD_WINDOW of each other
        self.on = False
        self.streak = 0  # failures in a row of its guarded state (rolled back)

    def quiet(self) -> bool:
        """Whether GUARD_WINDOW messages passed since the last failure."""
        return self.seen - self.last_failure >= GUARD_WINDOW


class StateError(Exception):
    """A message not processed because its key's state fails on every message (the error it raised).

    >>> str(StateError("not processed: the model state of b's' is failing"))
    "not processed: the model state of b's' is failing"
    """
