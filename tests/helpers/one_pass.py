"""Runs of a handler's batch records taken in one pass and message by message, for comparing
what each way gives: the messages, the states, what was checkpointed and the counters."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import orjson
from streamxai.schemas import Source


class Saves:
    """A checkpoint store that keeps what it was given: every save, with the state as pickled;
    a checkpoint is due every ``every`` messages and none is ever found."""

    def __init__(self, every: int):
        self.every, self.saved = every, []

    def due(self, n_since: int) -> bool:
        return n_since >= self.every

    def save(self, kind, key, state, src):
        self.saved.append((kind, key, pickle.dumps(state), str(src)))

    def load(self, kind, key, topic, partition, before_offset=None):
        return None


def take_records(make, records: list, topic: str, one_pass: bool, monkeypatch, every: int,
                 fail: Callable[[Any, Source], bool] | None = None) -> tuple:
    """``records`` through the handler ``make(checkpoints)`` makes, in one pass where that applies or never
    (``fail`` picks messages whose ``_process`` raises): ``(messages, states, checkpoints, counters)``.
    With ``one_pass``, the one pass must have taken at least half the records."""
    store = Saves(every)
    h = make(store)
    cls, taken, failed = type(h), [], []
    if one_pass:
        real_take = cls._take_checked

        def counted(self, raw, key, src, items):
            out = real_take(self, raw, key, src, items)
            if out is not None:
                taken.append(src.offset)
            return out

        monkeypatch.setattr(cls, "_take_checked", counted)
    else:
        monkeypatch.setattr(cls, "_take_checked", lambda self, raw, key, src, items: None)
    if fail is not None:
        real_process = cls._process

        def process(self, msg, st, raw, key, src):
            if not failed and fail(msg, src):
                failed.append(msg)
                raise RuntimeError("the stand-in failure")
            return real_process(self, msg, st, raw, key, src)

        monkeypatch.setattr(cls, "_process", process)
    outs = []
    for off, (key, value, ts, headers) in enumerate(records):
        src = Source(topic, 0, off, timestamp=ts, headers=headers)
        outs += [(o.topic, o.key, o.value if o.topic != "dead-letters" else
                  {k: v for k, v in orjson.loads(o.value).items() if k != "ts"}) for o in h.on_message(value, key, src)]
    monkeypatch.undo()
    assert not one_pass or len(taken) >= len(records) // 2
    assert fail is None or failed
    counters = {k: v for k, v in h.metrics.snapshot()["counters"].items() if not k.startswith("recovery_seconds")}
    return outs, {k: pickle.dumps(v) for k, v in h.states.items()}, store.saved, counters


def crafted(records: list, topic: str, unpack: Callable, pack: Callable, other: Callable[[bytes], bytes],
            at: tuple[int, int, int, int, int]) -> list:
    """``records`` of a batch form as a consumer may meet them: after each offset of ``at``, the record again,
    a straddle into its key's next record, a message cut short, one changed by ``other``, one alone."""
    out = []
    for i, (key, value, ts, headers) in enumerate(records):
        out.append((key, value, ts, headers))
        msgs = unpack(value, Source(topic, 0, i, headers=headers))
        if i == at[0]:
            out.append((key, value, ts, headers))  # redelivered: every message a duplicate
        elif i == at[1]:
            j = next(j for j in range(i + 1, len(records)) if records[j][0] == key)  # the key's next record
            later = unpack(records[j][1], Source(topic, 0, j, headers=records[j][3]))
            out += [(key, v, ts, h) for v, h in pack(msgs[-2:] + later[:3])]  # half again, half ahead
        elif i == at[2]:
            out += [(key, v, ts, h) for v, h in pack([msgs[0], msgs[1][:-9], *msgs[2:]])]  # cut short
        elif i == at[3]:
            out += [(key, v, ts, h) for v, h in pack([other(msgs[0]), *msgs[1:]])]
        elif i == at[4]:
            out.append((key, msgs[0], ts, None))  # one message, as a record of one
    return out
