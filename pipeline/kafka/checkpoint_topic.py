"""Checkpoints on a compacted Kafka topic, so a worker on any host resumes from them."""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
import zlib
from typing import Any

from ..settings import Settings
from .checkpoint_seal import CheckpointSeal, SealedStore
from .committed_offsets import CommittedOffsets
from .config import confluent_config, replication
from .watermarks import watermarks

__all__ = ["KafkaCheckpointStore", "CHECKPOINT_TOPIC", "CHECKPOINT_TOPIC_CONFIG", "ensure_checkpoint_topic"]

log = logging.getLogger("streamxai")

CHECKPOINT_TOPIC = "checkpoints"
#: compacted; large records (a forest pickles to megabytes)
MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024
CHECKPOINT_TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "max.message.bytes": str(MAX_CHECKPOINT_BYTES),
    "min.cleanable.dirty.ratio": "0.5",
    "segment.ms": str(6 * 3600 * 1000),
}


class KafkaCheckpointStore(SealedStore):
    """Sealed checkpoints of per-key handler state, as records on a compacted topic.

    ``save`` produces and waits for the broker's acknowledgement; ``load`` catches its index
    (record key → partition, offset) up to the topic's end, then fetches the key's two slots.
    Record keys are ``kind/sha256(key)/slot``, both slots of a key on one partition, so their
    offsets tell which is newer. Nothing connects before the first ``save`` or ``load``:

    >>> KafkaCheckpointStore(Settings(topic_prefix="team-a."), 500, secret=b"0123456789abcdef")
    KafkaCheckpointStore('team-a.checkpoints', every=500)
    """

    def __init__(self, settings: Settings, every: int = 2000, *, secret: bytes, timeout: float = 30.0,
                 commits: CommittedOffsets | None = None):
        super().__init__(every, secret=secret, commits=commits)
        self.settings = settings
        self.topic = settings.topic(CHECKPOINT_TOPIC)
        self.timeout = timeout
        self._producer: Any = None
        self._consumer: Any = None
        self._index: dict[bytes, tuple[int, int]] = {}  # record key -> (partition, offset)
        self._positions: dict[int, int] = {}  # partition -> next offset to index
        self._slot: dict[bytes, int] = {}  # key prefix -> slot of its newest checkpoint
        #: (partition, offset) of a record -> (topic, partition, offset) of the message its checkpoint is as of
        self._sources: dict[tuple[int, int], tuple[str, int | None, int] | None] = {}
        self._n_partitions: int | None = None

    def __repr__(self) -> str:
        return f"KafkaCheckpointStore({self.topic!r}, every={self.every})"

    @staticmethod
    def _prefix(kind: str, key: bytes) -> bytes:
        return f"{kind}/{hashlib.sha256(key).hexdigest()}/".encode()

    # writing -------------------------------------------------------------------------------

    def _write(self, kind: str, key: bytes, blob: bytes, keep_previous: bool = False) -> None:
        from confluent_kafka import Producer

        if len(blob) > MAX_CHECKPOINT_BYTES:
            log.warning("checkpoint of %s %s is %d bytes, over %d: not written; a restart replays more",
                        kind, _short(key), len(blob), MAX_CHECKPOINT_BYTES)
            return
        if self._producer is None:
            # log_level 0: while the broker is down librdkafka logs each reconnect; a failed write
            # is the OSError below, and the outage the worker's two lines (kafka.outage)
            self._producer = Producer(confluent_config(self.settings, **{
                "log_level": 0, "message.max.bytes": MAX_CHECKPOINT_BYTES + 4096, "linger.ms": 0, "acks": "all",
                "enable.idempotence": True,
                "compression.type": "zstd"}))
        prefix = self._prefix(kind, key)
        newest = self._newest_slot(prefix)
        slot = newest if keep_previous and prefix + str(newest).encode() in self._index else 1 - newest
        rk = prefix + str(slot).encode()
        result: dict[str, Any] = {}

        def delivered(err: Any, msg: Any) -> None:
            result["err"], result["msg"] = err, msg

        self._sources.pop(self._index.get(rk), None)  # the record this one replaces (bounded: two a key)
        self._producer.produce(self.topic, key=rk, value=blob, partition=self._partition(prefix),
                               on_delivery=delivered)
        self._producer.flush(self.timeout)
        err, msg = result.get("err"), result.get("msg")
        if msg is None or err is not None:
            raise OSError(f"writing the checkpoint of {kind} {_short(key)} to {self.topic} failed: "
                          f"{err or 'no acknowledgement within ' + str(self.timeout) + ' s'}")
        self._slot[prefix] = slot
        self._index[rk] = (msg.partition(), msg.offset())
        self._sources[(msg.partition(), msg.offset())] = CheckpointSeal.source(blob)

    def _newest_source(self, kind: str, key: bytes) -> tuple[str, int | None, int] | None:
        prefix = self._prefix(kind, key)
        where = self._index.get(prefix + str(self._newest_slot(prefix)).encode())
        if where is None:
            return None
        if where not in self._sources:  # written before this worker started, or by another one
            value = self._fetch(*where)
            self._sources[where] = CheckpointSeal.source(value) if value is not None else None
        return self._sources[where]

    def _newest_slot(self, prefix: bytes) -> int:
        """The slot holding the newest checkpoint of ``prefix`` (1 when there is none, so the
        first write goes to slot 0): the one this store last wrote, else the topic's."""
        if prefix in self._slot:
            return self._slot[prefix]
        self._catch_up()
        have = {slot: self._index[rk][1] for slot in (0, 1) if (rk := prefix + str(slot).encode()) in self._index}
        return max(have, key=lambda slot: have[slot]) if have else 1

    def _partition(self, prefix: bytes) -> int:
        if self._n_partitions is None:
            meta = self._reader().list_topics(self.topic, timeout=self.timeout).topics.get(self.topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise OSError(f"checkpoint topic {self.topic} is not available; the worker creates it at start")
            self._n_partitions = len(meta.partitions)
        return zlib.crc32(prefix) % self._n_partitions

    # reading -------------------------------------------------------------------------------

    def _candidates(self, kind: str, key: bytes) -> list[tuple[str, bytes]]:
        self._catch_up()
        prefix = self._prefix(kind, key)
        out = []
        for slot in (0, 1):
            rk = prefix + str(slot).encode()
            where = self._index.get(rk)
            if where is None:
                continue
            value = self._fetch(*where)
            if value is not None:
                out.append((self._where(*where), value))
        return out

    def _where(self, partition: int, offset: int) -> str:
        return f"{self.topic}[{partition}]@{offset}"

    def _set_aside(self, kind: str, key: bytes, where: str) -> str:
        """Drop the record from the index: it is not read again (records on a topic cannot be
        renamed), and the key's next checkpoint goes to its slot and replaces it in compaction."""
        prefix = self._prefix(kind, key)
        for slot in (0, 1):
            rk = prefix + str(slot).encode()
            if rk in self._index and self._where(*self._index[rk]) == where:
                del self._index[rk]
                if self._slot.get(prefix) == slot:
                    self._slot.pop(prefix)
        return "not read again; the key's next checkpoint replaces it"

    def _reader(self) -> Any:
        from confluent_kafka import Consumer

        if self._consumer is None:
            self._consumer = Consumer(confluent_config(self.settings, **{
                "log_level": 0,  # as the producer's: a failed read is an OSError here
                "group.id": f"streamxai-checkpoints-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 20,
                "fetch.max.bytes": MAX_CHECKPOINT_BYTES + 4096,
                "max.partition.fetch.bytes": MAX_CHECKPOINT_BYTES + 4096,
                "receive.message.max.bytes": MAX_CHECKPOINT_BYTES + 65536}))
        return self._consumer

    def _catch_up(self) -> None:
        """Index the records written since the last look-up (by any worker)."""
        from confluent_kafka import TopicPartition

        c = self._reader()
        meta = c.list_topics(self.topic, timeout=self.timeout).topics.get(self.topic)
        if meta is None or meta.error is not None:
            raise OSError(f"checkpoint topic {self.topic} is not available "
                          f"({meta.error if meta is not None else 'missing'}); the worker creates it at start")
        for p in meta.partitions:
            start = self._positions.get(p, 0)
            low, high = self._watermarks(c, p)
            start = max(start, low)
            if start >= high:
                self._positions[p] = max(start, self._positions.get(p, 0))
                continue
            c.assign([TopicPartition(self.topic, p, start)])
            while start < high:
                msg = c.poll(self.timeout)
                if msg is None:
                    raise OSError(f"reading {self.topic}[{p}] stalled at offset {start} of {high}")
                if msg.error():
                    continue
                if msg.key() is not None:
                    self._index[msg.key()] = (p, msg.offset())
                start = msg.offset() + 1
            self._positions[p] = start
        c.unassign()

    def _watermarks(self, c: Any, partition: int) -> tuple[int, int]:
        from confluent_kafka import KafkaException

        try:
            return watermarks(c, self.topic, partition, self.timeout)
        except KafkaException as e:
            raise OSError(f"reading the offsets of {self.topic}[{partition}] failed: {e.args[0].str()}") from None

    def _fetch(self, partition: int, offset: int) -> bytes | None:
        from confluent_kafka import TopicPartition

        c = self._reader()
        c.assign([TopicPartition(self.topic, partition, offset)])
        try:
            msg = c.poll(self.timeout)
            while msg is not None and (msg.error() or msg.offset() < offset):
                msg = c.poll(self.timeout)
        finally:
            c.unassign()
        if msg is None or msg.offset() != offset:
            return None  # compacted away meanwhile: a newer record replaced it
        return msg.value()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(self.timeout)
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def _short(key: bytes) -> str:
    text = key.decode(errors="replace")
    return text if len(text) <= 60 else text[:57] + "..."


def ensure_checkpoint_topic(s: Settings) -> bool:
    """Create the compacted checkpoint topic if it is missing; True when it was created."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(confluent_config(s, log_level=3))
    name = s.topic(CHECKPOINT_TOPIC)
    if name in admin.list_topics(timeout=30).topics:
        return False
    rep = replication(s, len(admin.list_topics(timeout=30).brokers))
    spec = NewTopic(name, num_partitions=s.partitions, replication_factor=rep.factor,
                    config={**CHECKPOINT_TOPIC_CONFIG, "min.insync.replicas": str(rep.min_insync)})
    try:
        admin.create_topics([spec], operation_timeout=30)[name].result()
    except KafkaException as e:
        if "TOPIC_ALREADY_EXISTS" not in str(e):
            raise
        return False
    deadline = time.monotonic() + 30
    while True:  # a new topic answers reads only once every partition has a leader
        md = admin.list_topics(topic=name, timeout=30).topics.get(name)
        if md is not None and md.error is None and md.partitions and all(p.leader >= 0 for p in md.partitions.values()):
            return True
        if time.monotonic() > deadline:
            raise OSError(f"checkpoint topic {name} was created but has no leader for every partition after 30 s")
        time.sleep(0.1)
