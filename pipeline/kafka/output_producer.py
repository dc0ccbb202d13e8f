"""A worker's outputs through confluent-kafka's producer (librdkafka), beside Faust (issue 17).

A worker sends 3.7 messages an event (a prediction, 2.7 explanations, a share of the internal
batches). Through aiokafka, below Faust's and aiokafka's own send layers
(:class:`~streamxai.kafka.appender.Appender`), one message still cost the worker's process 23 us
of CPU from hand-over to acknowledgement (its accumulator, its sender task, the acknowledgement's
callbacks, all Python on the event loop); librdkafka takes the same message for 2.4 us, its own
threads included (``tests/benchmarks/bench_send_cost.py``, one run on 2 cores: 400 reports of 27
messages of 400 bytes, medians of 3 processes). Faust keeps everything else: the consumer, its
group, its commits, its own producer (unused by the agents).

The same guarantees as before:

- **At least once.** A message is in librdkafka's queue when :meth:`OutputProducer.hand`
  (or :meth:`OutputProducer.send`) returns; the worker's consumer commits an offset only after :meth:`OutputProducer.flush`
  (``pipeline/kafka/faust_transport.py``, ``_Consumer._commit``), which waits until every
  message handed over before it has been acknowledged or has failed, as Faust's commit waits
  for its own producer's flush (not for the queue to empty: a busy worker always has messages
  in flight). A worker killed before a commit sends its outputs again after the restart
  (the consumers of the outputs deduplicate by ``(stream_id, seq)``; internal hops by origin).
- **The same partitions.** ``partitioner = murmur2_random``: a keyed message goes to the
  partition of the Java client and of aiokafka's default partitioner (murmur2 of the key), where
  Faust sent it before, so a stream's records stay on their partitions across the upgrade
  (``tests/integration/test_send_on_broker.py``).
- **In order.** Each partition's records arrive in the order handed over, as aiokafka (one
  batch in flight per partition) kept them: the arrivals are the order a stream's model learns
  in, and an explainer group takes its tasks in order. librdkafka keeps up to 5 requests in
  flight to a broker, and a retried one could land behind a later one; idempotence
  (``enable.idempotence``, with ``acks = all``) keeps the order and writes a retried batch once.
- **The same sizes.** A message over Faust's ``producer_max_request_size`` is refused at the
  hand-over (the agent dead-letters its input, reason ``send_error``); one partition's batch is at
  most :func:`~streamxai.kafka.faust_transport.producer_batch_bytes` (below the broker's
  ``message.max.bytes``, which refuses a larger batch whole); ``acks = all``.
- **The same security.** Its configuration is :func:`~streamxai.kafka.config.confluent_config`
  (SASL, TLS), as the checkpoint store's producer; nothing of it is logged or shown in a repr.
- **Quiet outages.** librdkafka logs nothing (``log_level`` 0); a broker it cannot reach is the
  consumer's outage line (``pipeline/kafka/outage.py``), and it retries each message for
  ``message.timeout.ms`` (5 minutes), so nothing is lost to a short outage. A message that
  finally fails is counted in ``send_errors`` by the agents' Outbox, as before. A fatal error
  (the idempotent producer's) is one ERROR line, and the next commit fails on it: the worker
  stops without committing past outputs that were lost, and its restart sends them again.

Two librdkafka clients, one per kind of topic, because the linger that suits one costs the
other (issue 17):

- **Hops** (:data:`HOP_TOPICS`: arrivals, explain tasks and decisions, the drift feed): the
  worker's own agents read them next, so each waits at most 5 ms (:data:`HOP_LINGER_MS`): a
  longer wait leaves the next agent idle. They are 0.15 messages an event.
- **Outputs** (predictions, explanations, change events, dead letters: what people and their
  programs read) wait up to ``output_linger_ms`` (50 ms by default). They are 3.7 messages an
  event; every produce request costs librdkafka's thread and the broker CPU on the cores the
  worker runs on, whatever it carries. At 5 ms librdkafka's threads took 30-50 us of CPU an event
  with logistic regression, with the outputs at 50 ms 10-20 (each thread's CPU from ``/proc``
  over a worker's run of ``bench_speed.py --kafka``'s stream, three runs each).

``output_linger_ms = 5`` gives one client for both, as before. A topic's records all go through
one client, so each partition keeps its order (Kafka orders nothing across partitions).

Delivery reports come when the producers are polled: a task polls them every 5 ms while
messages are in flight and sleeps while none are; a flush polls them every millisecond.
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
    """Sends a worker's outputs with confluent-kafka's producer (the module docstring says why);
    the agents' Outbox takes it in place of Faust's producer. The client is created by
    :meth:`start`, or by the first send.

    >>> OutputProducer(Settings(bootstrap_servers="127.0.0.1:1"), max_request_size=1_000_000)
    OutputProducer(127.0.0.1:1, PLAINTEXT, batches of at most 262144 bytes, lingering 50 ms (hops 5 ms))
    """

    def __init__(self, settings: Settings, max_request_size: int):
        self._where = f"{settings.bootstrap_servers}, {settings.security_protocol}"
        self._batch = producer_batch_bytes(settings.max_dead_letter_bytes)
        self._linger = settings.output_linger_ms
        self._config = {"batch.size": self._batch, "message.max.bytes": max_request_size,
                        "partitioner": "murmur2_random", "acks": "all", "enable.idempotence": True,
                        "log_level": 0, "error_cb": self._on_error}
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
        #: messages are numbered as handed over; every one below ``_settled_below`` is settled
        #: (acknowledged or failed), and so are those in ``_settled_above`` (delivery reports of
        #: different partitions come in any order): what :meth:`flush` waits on, with no future
        #: per message
        self._handed = 0
        self._settled_below = 0
        self._settled_above: set[int] = set()

    def __repr__(self) -> str:  # never the configuration: it holds the SASL password
        return (f"OutputProducer({self._where}, batches of at most {self._batch} bytes, lingering {self._linger} ms "
                f"(hops {HOP_LINGER_MS} ms))")

    def start(self) -> Any:
        """Create the clients (each connects and gets its idempotent producer id, about half a
        second on a fresh broker, in the background) and the task that serves their delivery
        reports; the worker calls this as it starts, before the first output, which would
        otherwise wait for it. Idempotent."""
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
        """Hand one message to the producer without a future: False if its queue is full (a
        broker outage; :meth:`send` waits for room), and ``on_error(SendFailed)`` is called, on
        the event loop's thread, if the broker finally does not take it. Raises what
        ``produce`` raises at once (e.g. a message over ``message.max.bytes``). What the agents'
        Outbox uses for the outputs that are no dead letter: a future and its callbacks per
        message were most of what sending cost the worker beyond librdkafka's own call."""
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
        """Hand one message to the producer (its timestamp: when it is handed over, as aiokafka
        stamped it); its delivery future. Raises what ``produce`` raises at once (e.g. a message
        over ``message.max.bytes``). The signature of
        :meth:`~streamxai.kafka.appender.Appender.send`, which the agents' Outbox calls for what
        needs the outcome (a dead letter is counted once acknowledged)."""
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
        """Wait until every message handed over before the call is acknowledged or has failed
        (its future settled), as aiokafka's flush waits for the batches there were: what the
        worker's consumer waits for before it commits an offset. Raises
        :class:`SendFailed` after a fatal error of the producer (its messages since are lost):
        the commit fails with it, the worker stops, and a restart sends them again.

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
        while True:
            if self._serve(clients):
                await asyncio.sleep(POLL_S)
            else:
                wake.clear()
                await wake.wait()

    def _on_error(self, err: Any) -> None:
        """librdkafka's client-wide errors: a fatal one (of the idempotent producer, e.g. a
        broker that lost acknowledged records) is logged, and stops the next commit
        (:meth:`flush`); the transient ones (a broker not reachable) are the consumer's outage
        lines, and the messages are retried."""
        if err.fatal() and self.fatal is None:
            self.fatal = err.str()
            log.error("the output producer failed (%s); the worker stops at its next commit and a restart "
                      "sends what it had not committed again", self.fatal)
