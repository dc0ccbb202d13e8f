"""A worker's outputs through confluent-kafka's producer (librdkafka), beside Faust, which keeps
the consumer, its group and its commits: librdkafka takes a message for a fraction of the CPU
that aiokafka's accumulator and callbacks take on the event loop. Delivery stays at least once
(the consumer commits an offset only after :meth:`OutputProducer.flush` has seen every message
handed over before it acknowledged or failed), partitions match aiokafka's
(``murmur2_random``), and order within a partition holds (idempotence with ``acks = all``).
Two clients, because the linger that suits one kind of topic costs the other: the hops the
worker's own agents read next (:data:`HOP_TOPICS`) wait at most :data:`HOP_LINGER_MS`; the
outputs people read wait up to ``output_linger_ms``, which saves produce requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from ..settings import Settings
from .config import confluent_config
from .faust_transport import producer_batch_bytes
from .write_wait import WriteWait

__all__ = ["HOP_LINGER_MS", "HOP_TOPICS", "OutputProducer", "SendFailed"]

log = logging.getLogger("streamxai")

#: how often delivery reports are served while messages are in flight (seconds): the hops'
#: linger, so a busy worker's event loop wakes for them about once per batch of hops
POLL_S = 0.005
#: the topics a worker's agents read what other agents wrote (short names): their own client
HOP_TOPICS = ("arrivals", "explain-tasks", "explain-decisions", "drift-feed")
#: how long a hop waits to fill a batch (ms)
HOP_LINGER_MS = 5


class SendFailed(Exception):
    """The broker did not take a message (librdkafka's error, after its retries)."""


class OutputProducer:
    """Sends a worker's outputs with confluent-kafka's producer, in place of Faust's producer in
    the agents' Outbox. The client is created by :meth:`start`, or by the first send.

    >>> OutputProducer(Settings(bootstrap_servers="127.0.0.1:1"), max_request_size=1_000_000)
    OutputProducer(127.0.0.1:1, PLAINTEXT, batches of at most 262144 bytes, lingering 50 ms (hops 5 ms))
    """

    def __init__(self, settings: Settings, max_request_size: int, on_wait: Callable[[bool], None] | None = None):
        self._where = f"{settings.bootstrap_servers}, {settings.security_protocol}"
        self._batch = producer_batch_bytes(settings.max_dead_letter_bytes)
        self._linger = settings.output_linger_ms
        self._config = {"batch.size": self._batch, "message.max.bytes": max_request_size,
                        "partitioner": "murmur2_random", "acks": "all", "enable.idempotence": True,
                        # a message waits for the brokers as long as they take (0: no delivery timeout)
                        "message.timeout.ms": 0, "log_level": 0, "error_cb": self._on_error}
        self._settings = settings
        #: the outputs' client, and the hops' (the same one if their lingers are)
        self._client: Any = None
        self._hops: Any = None
        self._hop_topics = frozenset(settings.topic(t) for t in HOP_TOPICS)
        self._loop: Any = None
        #: librdkafka's fatal error, if one came: no commit may follow it (:meth:`flush` raises)
        self.fatal: str | None = None
        self._poller: asyncio.Task | None = None
        self._wake: asyncio.Event | None = None
        #: messages are numbered as handed over; every one below ``_settled_below`` is settled,
        #: and so are those in ``_settled_above`` (reports come in any order): what :meth:`flush` waits on
        self._handed = 0
        self._settled_below = 0
        self._settled_above: set[int] = set()
        #: ``on_wait(True)`` when the brokers stop taking its messages, ``on_wait(False)`` when they take them again
        self._wait = WriteWait(on_wait)

    def __repr__(self) -> str:  # never the configuration: it holds the SASL password
        return (f"OutputProducer({self._where}, batches of at most {self._batch} bytes, lingering {self._linger} ms "
                f"(hops {HOP_LINGER_MS} ms))")

    def start(self) -> Any:
        """Create the clients and the task serving their delivery reports, so the first output
        does not wait for the producer's start. Idempotent."""
        if self._client is not None:
            return self._client
        from confluent_kafka import Producer

        self._client = Producer(confluent_config(self._settings, **self._config, **{"linger.ms": self._linger}))
        self._hops = self._client if self._linger == HOP_LINGER_MS else Producer(
            confluent_config(self._settings, **self._config, **{"linger.ms": HOP_LINGER_MS}))
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._poller = self._loop.create_task(self._poll(), name="streamxai-output-poll")
        return self._client

    def hand(self, topic: str, key: bytes | None, value: bytes, partition: int | None,
             headers: list[tuple[str, bytes]] | None, on_error: Callable[[Exception], None] | None = None) -> bool:
        """Hand one message to the producer without a future (a future per message would be
        most of the cost): False if its queue is full (:meth:`send` waits for room), and
        ``on_error(SendFailed)`` is called, on the loop's thread, if the broker finally does not
        take it. Raises what ``produce`` raises at once."""
        if self._client is None:
            self.start()
        client = self._hops if topic in self._hop_topics else self._client
        seq = self._handed
        try:
            client.produce(topic, value, key, -1 if partition is None else partition,
                           partial(self._delivered, seq, on_error), headers=headers)
        except BufferError:
            client.poll(0)
            return False
        self._handed = seq + 1
        wake = self._wake
        if not wake.is_set():  # type: ignore[union-attr]
            wake.set()  # type: ignore[union-attr]
        return True

    async def send(self, topic: str, key: bytes | None, value: bytes, partition: int | None,
                   headers: list[tuple[str, bytes]] | None) -> asyncio.Future:
        """Hand one message to the producer (stamped now, as aiokafka stamps it); its delivery
        future. Raises what ``produce`` raises at once."""
        if self._client is None:
            self.start()
        fut = self._loop.create_future()
        while not self.hand(topic, key, value, partition, headers, fut):  # type: ignore[arg-type]
            await asyncio.sleep(0.01)  # its queue is full (a broker outage): let it deliver some first
        return fut

    def _delivered(self, seq: int, note: Any, err: Any, msg: Any) -> None:
        """A delivery report (served by ``poll``, on the event loop's thread): message ``seq``
        is settled; ``note`` is its future (settled here), the callable to tell of a failure, or None."""
        if seq == self._settled_below:
            seq += 1
            above = self._settled_above
            if above:
                while seq in above:
                    above.remove(seq)
                    seq += 1
            self._settled_below = seq
        else:
            self._settled_above.add(seq)
        if note is None:
            return
        if isinstance(note, asyncio.Future):
            if note.done() or note.get_loop().is_closed():  # cancelled, or the worker is gone
                return
            if err is None:
                note.set_result(None)
            else:
                note.set_exception(SendFailed(f"{msg.topic()}: {err.str()}"))
        elif err is not None:
            note(SendFailed(f"{msg.topic()}: {err.str()}"))

    async def flush(self) -> None:
        """Wait until every message handed over before the call is acknowledged or has failed:
        what the worker's consumer waits for before it commits. Raises :class:`SendFailed` after
        a fatal error of the producer, so the commit fails and a restart sends them again.

        >>> import asyncio
        >>> out = OutputProducer(Settings(), max_request_size=1_000_000)
        >>> out._on_error(type("Err", (), {"fatal": lambda self: True, "str": lambda self: "out of order"})())
        >>> asyncio.run(out.flush())
        Traceback (most recent call last):
        ...
        streamxai.kafka.output_producer.SendFailed: the output producer failed (out of order): ...
        """
        clients = self._clients()
        if clients:
            # what was handed over before this call (not what the agents send meanwhile: a busy
            # worker always has messages in flight, and its commits must not wait for a lull)
            before = self._handed
            self._serve(clients)
            while self.fatal is None and self._settled_below < before:
                await asyncio.sleep(0.001)
                self._serve(clients)
        if self.fatal is not None:
            raise SendFailed(f"the output producer failed ({self.fatal}): nothing is committed after it; the "
                             "worker stops, and its restart sends the outputs since the last commit again")

    async def close(self, timeout: float) -> int:
        """Wait at most ``timeout`` seconds for what is in flight and stop polling (the worker
        stops); the number of messages not acknowledged then. A later :meth:`flush` (the final
        commit) still waits for them."""
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None
        clients = self._clients()
        deadline = asyncio.get_running_loop().time() + timeout
        left = self._serve(clients)
        while left and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.001)
            left = self._serve(clients)
        return left

    def _clients(self) -> tuple[Any, ...]:
        """The librdkafka clients there are: none before :meth:`start`, one if the hops' linger
        is the outputs', else the outputs' and the hops'."""
        if self._client is None:
            return ()
        return (self._client,) if self._hops is self._client else (self._client, self._hops)

    @staticmethod
    def _serve(clients: tuple[Any, ...]) -> int:
        """Serve the delivery reports that have come; the messages still in flight."""
        left = 0
        for client in clients:
            client.poll(0)
            left += len(client)
        return left

    async def _poll(self) -> None:
        clients, wake = self._clients(), self._wake
        if not clients or wake is None:  # not started
            return
        wait = self._wait
        while True:
            in_flight = self._serve(clients)
            settled = self._settled_below + len(self._settled_above)
            wait.check(in_flight, settled)
            if in_flight:
                await asyncio.sleep(POLL_S)
            else:
                wake.clear()
                await wake.wait()

    def _on_error(self, err: Any) -> None:
        """librdkafka's client-wide errors: a fatal one is logged and stops the next commit
        (:meth:`flush`); transient ones are the consumer's outage lines, and messages are retried."""
        if err.fatal() and self.fatal is None:
            self.fatal = err.str()
            log.error("the output producer failed (%s); the worker stops at its next commit and a restart "
                      "sends what it had not committed again", self.fatal)
