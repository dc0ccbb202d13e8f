"""The private parts of Faust, mode and aiokafka that the worker's transport relies on, in one
place: :data:`REQUIRED` lists each and what of ours needs it, :func:`problem` checks one against
the installed library (``tests/unit/kafka/test_private_api.py`` checks them all), and the
accessors below raise :class:`PrivateAPIChanged`, naming the version and attribute, when one is
gone. pyproject.toml bounds each library to the minor version these are checked against.

What each group buys a worker:

- *bulk_fetch's* parts hand each fetch's records straight to the handlers and acknowledge their
  offsets as Faust would, without Faust's message, event, buffer put and wake-up per record (the
  worker's CPU per event against its handlers' in process: ``bench_speed.py --kafka``).
- *faust_transport's bounded and paced fetch wait*: a worker consumes the tasks and change feed it
  produces itself, and each hop would otherwise wait Faust's 1.5 s fetch wait for data.
- *its wake-up of the fetch on a resumed partition*: without it an agent whose buffer drained sits
  idle while that partition's records are fetchable, until another partition's data comes.
- *its hand-over in one task*: a record that does go through Faust is handed to its stream in one
  task instead of mode's four.
- *its flush of the outputs before a commit*: delivery at least once, as the librdkafka producer
  is not Faust's and Faust's commit does not flush it.
- *its clean stop while the broker is unreachable*: a stop that ends instead of hanging.
- *the assignor's*: partitions dealt in member-id order, so a stream's explain groups land on as
  many workers as there are groups.

>>> print(problem(Private("aiokafka", "aiokafka:AIOKafkaConsumer", "_no_such", "attribute", (), "nothing")))
aiokafka ...: AIOKafkaConsumer._no_such is gone; nothing needs it
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from importlib import metadata
from typing import Any

__all__ = ["REQUIRED", "Private", "PrivateAPIChanged", "consumer_client", "fetch_waiters", "fetcher",
           "problem", "runs_method_of", "set_fetch_limits", "set_fetch_wait"]

#: the distribution each library's modules come from
_DIST = {"faust": "faust-streaming", "mode": "mode-streaming", "aiokafka": "aiokafka"}


class PrivateAPIChanged(RuntimeError):
    """A private attribute or method of Faust, mode or aiokafka that the worker relies on is not
    what this code expects: the installed version is outside the range pyproject.toml allows."""


@dataclass(frozen=True)
class Private:
    """One private part relied on: ``name`` of the class at ``owner`` (``module:Class``) in
    ``library``; ``kind`` ``"attribute"`` (set on instances or on the class) or ``"method"``
    (with the parameter names ``params``, ``self`` first); ``needed_by``: what of ours needs it."""

    library: str
    owner: str
    name: str
    kind: str
    params: tuple[str, ...]
    needed_by: str

    def __str__(self) -> str:
        return f"{self.owner.split(':')[1]}.{self.name}"


def _thread(name: str, kind: str, params: tuple[str, ...], needed_by: str) -> Private:
    return Private("faust", "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", name, kind, params, needed_by)


def _consumer(name: str, kind: str, params: tuple[str, ...], needed_by: str) -> Private:
    return Private("faust", "faust.transport.drivers.aiokafka:Consumer", name, kind, params, needed_by)


def _aiokafka(owner: str, name: str, kind: str, params: tuple[str, ...], needed_by: str) -> Private:
    return Private("aiokafka", owner, name, kind, params, needed_by)


_FT = "faust_transport's "
_BF = "bulk_fetch's "
_AIO_CONSUMER = "aiokafka.consumer.consumer:AIOKafkaConsumer"
_ASSIGNOR = "faust.assignor.partition_assignor:PartitionAssignor"

REQUIRED: tuple[Private, ...] = (
    _thread("_create_worker_consumer", "method", ("self", "transport"), _FT + "bounded fetch wait (it overrides it)"),
    _thread("on_thread_stop", "method", ("self",), _FT + "clean stop while the broker is unreachable"),
    _thread("_consumer", "attribute", (), _FT + "wake-up and clean stop (the thread's aiokafka consumer)"),
    Private("mode", "mode.threads:ServiceThread", "thread_loop", "attribute", (),
            _FT + "wake-up (the consumer thread's event loop)"),
    _consumer("_new_consumer_thread", "method", ("self",), _FT + "consumer thread (it overrides it)"),
    _consumer("_commit", "method", ("self", "offsets"), _FT + "flush of the outputs before a commit (it overrides it)"),
    _consumer("wait_first", "method", ("self", "coros", "timeout"), _FT + "hand-over in one task (it overrides it)"),
    _consumer("on_buffer_drop", "method", ("self", "tp"), _FT + "wake-up of the fetch on a resumed partition"),
    _consumer("stop_flow", "method", ("self",), _FT + "hand-over, cancelled when the flow stops"),
    _consumer("_buffered_partitions", "attribute", (), _FT + "wake-up and " + _BF + "paused partitions"),
    _consumer("_thread", "attribute", (), _FT + "wake-up (the consumer's thread)"),
    _consumer("suspend_flow", "attribute", (), _FT + "recognition of the fetcher's hand-over"),
    _consumer("_wait_next_records", "method", ("self", "timeout"), _BF + "take of each fetch (it overrides it)"),
    _consumer("_read_offset", "attribute", (), _BF + "read offsets"),
    _consumer("_add_gap", "method", ("self", "tp", "offset_from", "offset_to"), _BF + "gaps in the offsets"),
    _consumer("_commit_every", "attribute", (), _BF + "broker_commit_every"),
    _consumer("_n_acked", "attribute", (), _BF + "broker_commit_every"),
    _consumer("_committed_offset", "attribute", (), _BF + "acknowledgements"),
    _consumer("_acked_index", "attribute", (), _BF + "acknowledgements"),
    _consumer("_acked", "attribute", (), _BF + "acknowledgements"),
    _consumer("_waiting_for_ack", "attribute", (), _BF + "acknowledgements"),
    _aiokafka(_AIO_CONSUMER, "_fetch_max_wait_ms", "attribute", (), _FT + "bounded fetch wait"),
    _aiokafka(_AIO_CONSUMER, "_fetch_min_bytes", "attribute", (), _FT + "bounded fetch wait"),
    _aiokafka(_AIO_CONSUMER, "_fetcher", "attribute", (), _FT + "wake-up of the fetch on a resumed partition"),
    _aiokafka(_AIO_CONSUMER, "_client", "attribute", (), _FT + "clean stop while the broker is unreachable"),
    _aiokafka("aiokafka.consumer.fetcher:Fetcher", "_fetch_max_wait_ms", "attribute", (),
              _FT + "paced fetch wait (each fetch request it builds reads it)"),
    _aiokafka("aiokafka.consumer.fetcher:Fetcher", "_fetch_waiters", "attribute", (),
              _FT + "wake-up of the fetch on a resumed partition (the futures fetched_records waits on)"),
    Private("faust", _ASSIGNOR, "_get_client_metadata", "method", ("metadata",),
            "assignor's DealtAssignor (it leaves out what each member held)"),
    Private("faust", _ASSIGNOR, "_perform_assignment", "method", ("self", "cluster", "member_metadata"),
            "assignor's DealtAssignor (it deals in member-id order)"),
)


def version(library: str) -> str:
    """The installed version of ``library`` (``"faust"``, ``"mode"`` or ``"aiokafka"``).

    >>> version("aiokafka") == metadata.version("aiokafka")
    True
    """
    return metadata.version(_DIST[library])


def _gone(library: str, what: str, needed_by: str) -> str:
    return f"{library} {version(library)}: {what} is gone; {needed_by} needs it"


def _assigned(cls: type, name: str) -> bool:
    """Whether a method of ``cls`` or of its bases from Faust, mode or aiokafka sets ``self.<name>``."""
    pattern = re.compile(rf"\bself\.{re.escape(name)}\s*(:[^=\n]*)?=[^=]")
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in _DIST:
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if pattern.search(source):
            return True
    return False


def problem(p: Private) -> str | None:
    """What is wrong with ``p`` in the installed library, or None when it is as expected."""
    module, _, cls_name = p.owner.partition(":")
    try:
        cls = getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError):
        return _gone(p.library, p.owner.replace(":", "."), f"{p.needed_by} (through {p.name})")
    if p.kind == "method":
        method = getattr(cls, p.name, None)
        if not callable(method):
            return _gone(p.library, str(p), p.needed_by)
        params = tuple(inspect.signature(method).parameters)
        if params != p.params:
            return (f"{p.library} {version(p.library)}: {p} takes ({', '.join(params)}) where "
                    f"({', '.join(p.params)}) is expected; {p.needed_by} needs it")
        return None
    if hasattr(cls, p.name) or _assigned(cls, p.name):
        return None
    return _gone(p.library, str(p), p.needed_by)


def _get(obj: Any, name: str, library: str, owner: str, needed_by: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        raise PrivateAPIChanged(_gone(library, f"{owner}.{name}", needed_by)) from None


def set_fetch_limits(consumer: Any, max_wait_ms: int, min_bytes: int) -> None:
    """Set how long (``max_wait_ms``) and for how much data (``min_bytes``) the fetches of
    aiokafka's ``consumer`` wait: its start builds its fetcher from these attributes."""
    for name in ("_fetch_max_wait_ms", "_fetch_min_bytes"):
        _get(consumer, name, "aiokafka", "AIOKafkaConsumer", "faust_transport's bounded fetch wait")
    consumer._fetch_max_wait_ms = max_wait_ms
    consumer._fetch_min_bytes = min_bytes


def set_fetch_wait(fetcher: Any, max_wait_ms: int) -> None:
    """Set how long the fetch requests that aiokafka's running ``fetcher`` builds from now on wait."""
    _get(fetcher, "_fetch_max_wait_ms", "aiokafka", "Fetcher", "faust_transport's paced fetch wait")
    fetcher._fetch_max_wait_ms = max_wait_ms


def consumer_client(consumer: Any) -> Any:
    """The ``AIOKafkaClient`` of aiokafka's ``consumer``."""
    return _get(consumer, "_client", "aiokafka", "AIOKafkaConsumer", "faust_transport's clean stop")


def fetcher(consumer: Any) -> Any:
    """The fetcher of aiokafka's ``consumer``; None when there is no consumer or it has not started."""
    if consumer is None:
        return None
    return _get(consumer, "_fetcher", "aiokafka", "AIOKafkaConsumer", "faust_transport's wake-up of the fetch")


def fetch_waiters(fetcher: Any) -> list:
    """The futures that aiokafka's ``fetcher.fetched_records`` waits on for data."""
    return list(_get(fetcher, "_fetch_waiters", "aiokafka", "Fetcher", "faust_transport's wake-up of the fetch"))


def runs_method_of(coro: Any, obj: Any) -> bool:
    """Whether the coroutine ``coro``, not yet finished, runs a method of ``obj`` (as
    ``obj.wait()`` does): how the worker's consumer recognises Faust's fetcher racing a
    record's hand-over against ``suspend_flow.wait()``.

    >>> import asyncio
    >>> event = asyncio.Event()
    >>> coro = event.wait()
    >>> runs_method_of(coro, event), runs_method_of(coro, asyncio.Event())
    (True, False)
    >>> coro.close()
    """
    frame = getattr(coro, "cr_frame", None)
    return frame is not None and frame.f_locals.get("self") is obj
