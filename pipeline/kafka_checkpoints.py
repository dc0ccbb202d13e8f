"""Checkpoints on a compacted Kafka topic, so a worker on any host resumes from them.

With local files, a worker on another host that takes over a partition replays each key's
whole history. With ``checkpoint_store = "kafka"`` the checkpoints go to the topic
``<prefix>checkpoints`` (``cleanup.policy=compact``) instead, signed exactly like the files
(:class:`~pipeline.checkpoints.SealedCheckpoints`: HMAC-SHA256 with ``checkpoint_key``,
which every host must share; a forged or torn record is refused and never unpickled).

Layout: each key has two generations ``g`` (0, 1), written alternately, so the previous
checkpoint survives while the next is written and a checkpoint newer than the resumed
message can be passed over (see ``pipeline/checkpoints.py``). A generation is a manifest
record ``<kind>/<sha256(key)>/<g>`` holding the size and SHA-256 of the signed bytes, and
chunk records ``<kind>/<sha256(key)>/<g>/<i>`` of at most ``chunk_bytes`` each (models are
often bigger than the broker's 1 MiB message limit). All records of a key go to one
partition; the chunks are written before the manifest, and a reader checks the SHA-256, so a
generation read while being overwritten is refused like a tampered one.

Reading: the first ``load`` reads the topic once into an index (record key -> partition and
offset; compaction keeps it small) and then fetches just the records it needs.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from typing import Any

import orjson

from .checkpoints import SealedCheckpoints
from .handlers.common import Source, log
from .kafka_config import confluent_config

__all__ = ["KafkaCheckpointStore"]


class KafkaCheckpointStore(SealedCheckpoints):
    def __init__(self, settings: Any, every: int = 2000, *, secret: bytes, chunk_bytes: int = 512 * 1024):
        super().__init__(every, secret=secret)
        self.settings = settings
        self.topic = settings.topic("checkpoints")
        self.chunk_bytes = chunk_bytes
        self._lock = threading.Lock()  # handlers of several agents (and their threads) share the store
        self._producer: Any = None
        self._index: dict[bytes, tuple[int, int]] | None = None
        self._indexed_at = 0.0
        #: an index older than this is read again before a load (restarts load in bursts)
        self.index_ttl_s = 30.0
        self._next_gen: dict[bytes, int] = {}
        self._errors: list[str] = []

    def __repr__(self) -> str:
        return f"KafkaCheckpointStore({self.topic!r}, every={self.every})"

    def _name(self, kind: str, key: bytes) -> tuple[str, int]:
        digest = hashlib.sha256(key).hexdigest()
        return f"{kind}/{digest}", int(digest[:8], 16) % self.settings.partitions

    def save(self, kind: str, key: bytes, state: Any, src: Source) -> None:
        from confluent_kafka import Producer

        data = self.seal(kind, key, state, src)
        name, partition = self._name(kind, key)
        with self._lock:
            if self._producer is None:
                self._producer = Producer(confluent_config(self.settings, **{"log_level": 3, "linger.ms": 5}))
            gen = self._next_gen.get(name.encode(), 0)
            self._next_gen[name.encode()] = 1 - gen
            chunks = [data[i:i + self.chunk_bytes] for i in range(0, len(data), self.chunk_bytes)] or [b""]
            manifest = orjson.dumps({"chunks": len(chunks), "size": len(data),
                                     "sha256": hashlib.sha256(data).hexdigest()})
            records = [(f"{name}/{gen}/{i}".encode(), c) for i, c in enumerate(chunks)]
            records.append((f"{name}/{gen}".encode(), manifest))
            for rkey, value in records:
                self._producer.produce(self.topic, value=value, key=rkey, partition=partition,
                                       on_delivery=self._delivered)
            left = self._producer.flush(30)
            if left or self._errors:
                error, self._errors = (self._errors[:1] or ["timed out"])[0], []
                raise RuntimeError(f"checkpoint of {kind} key could not be written to {self.topic}: {error}")

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self._errors.append(str(err))
        elif self._index is not None:
            self._index[msg.key()] = (msg.partition(), msg.offset())

    def load(
        self, kind: str, key: bytes, topic: str, partition: int | None, before_offset: int | None = None
    ) -> tuple[Any, int] | None:
        """``(state, offset)`` of the newest valid checkpoint of ``key`` on ``topic[partition]``
        with ``offset < before_offset`` (any offset if None), or None."""
        name, _ = self._name(kind, key)
        with self._lock:
            if self._index is None or time.monotonic() - self._indexed_at > self.index_ttl_s:
                # other workers write checkpoints too: a key met later may have newer ones
                self._index, self._indexed_at = self._read_index(), time.monotonic()
            found = []
            for gen in (0, 1):
                data = self._generation(self._index, f"{name}/{gen}")
                if data is None:
                    continue
                got = self.unseal(data, f"{self.topic} {name}/{gen}", kind, key, topic, partition)
                if got is not None and (before_offset is None or got[1] < before_offset):
                    found.append(got)
        return max(found, key=lambda f: f[1]) if found else None

    def _generation(self, index: dict[bytes, tuple[int, int]], name: str) -> bytes | None:
        where = index.get(name.encode())
        if where is None:
            return None
        try:
            manifest = orjson.loads(self._fetch(*where))
            chunks = []
            for i in range(int(manifest["chunks"])):
                chunks.append(self._fetch(*index[f"{name}/{i}".encode()]))
        except (KeyError, TypeError, ValueError, orjson.JSONDecodeError) as e:
            log.warning("refusing checkpoint %s %s: incomplete (%s); the state is rebuilt by replay", self.topic, name, e)
            return None
        data = b"".join(chunks)
        if len(data) != manifest["size"] or hashlib.sha256(data).hexdigest() != manifest["sha256"]:
            log.warning("refusing checkpoint %s %s: its chunks do not match the manifest (torn or "
                        "tampered); the state is rebuilt by replay", self.topic, name)
            return None
        return data

    def _consumer(self) -> Any:
        from confluent_kafka import Consumer

        return Consumer(confluent_config(self.settings, **{
            "log_level": 0, "group.id": f"streamxai-checkpoints-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False, "auto.offset.reset": "earliest"}))

    def _read_index(self) -> dict[bytes, tuple[int, int]]:
        """One pass over the topic: the offset of the newest record of every record key."""
        from confluent_kafka import TopicPartition

        index: dict[bytes, tuple[int, int]] = {}
        c = self._consumer()
        try:
            meta = c.list_topics(self.topic, timeout=10).topics.get(self.topic)
            if meta is None or meta.error is not None:
                return index
            ends = {}
            for p in meta.partitions:
                lo, hi = c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)
                if hi > lo:
                    ends[p] = hi
            if not ends:
                return index
            c.assign([TopicPartition(self.topic, p, lo_offset) for p, lo_offset in
                      ((p, c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[0]) for p in ends)])
            while ends:
                msg = c.poll(10)
                if msg is None:
                    raise RuntimeError(f"reading {self.topic} stalled; is the broker reachable?")
                if msg.error():
                    continue
                index[msg.key()] = (msg.partition(), msg.offset())
                if msg.offset() >= ends.get(msg.partition(), 0) - 1:
                    ends.pop(msg.partition(), None)
            return index
        finally:
            c.close()

    def _fetch(self, partition: int, offset: int) -> bytes:
        from confluent_kafka import TopicPartition

        c = self._consumer()
        try:
            c.assign([TopicPartition(self.topic, partition, offset)])
            while True:
                msg = c.poll(10)
                if msg is None:
                    raise ValueError(f"no record at {self.topic}[{partition}]@{offset}")
                if not msg.error() and msg.offset() >= offset:
                    if msg.offset() != offset:
                        raise ValueError(f"record {self.topic}[{partition}]@{offset} was compacted away")
                    return msg.value() or b""
        finally:
            c.close()
