"""The demo stream in a team's own shape (``streamxai demo --source payments``): the agrawal events
as nested JSON payment records keyed by account, without seqs, on a topic of their own, and their
labels keyed by ``txn_id`` on another topic, sent later; with the ``[sources.*]`` and the stream
profile that read them.

>>> from streamxai.local.demo_stream import agrawal_events
>>> msgs = payments_messages(agrawal_events("x", 3), "p.", label_delay=1)
>>> [(topic, key) for topic, key, _ in msgs]
[('p.team.payments', b'demo'), ('p.team.payments', b'demo'), ('p.team.fraud', b'demo-0'), ('p.team.payments', b'demo'), ('p.team.fraud', b'demo-1'), ('p.team.fraud', b'demo-2')]
>>> sorted(orjson.loads(msgs[0][2]))
['account', 'car', 'commission', 'event_time', 'house', 'loan', 'person', 'txn_id', 'zipcode']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from streamxai.schemas import FeatureEvent

__all__ = ["SOURCE_DEMOS", "PAYMENTS_STREAM", "PAYMENTS_FEATURES", "payments_settings", "payments_messages"]

SOURCE_DEMOS = ("payments",)
#: the account of the demo stream: its stream id is the source's name and the account
ACCOUNT = "demo"
PAYMENTS_STREAM = f"payments:{ACCOUNT}"
#: agrawal's features, as paths into the nested payment record
_PATHS = {"salary": "person.salary", "age": "person.age", "elevel": "person.elevel", "commission": "commission",
          "car": "car", "zipcode": "zipcode", "hvalue": "house.value", "hyears": "house.years", "loan": "loan"}
PAYMENTS_FEATURES = list(_PATHS.values())


def payments_settings(prefix: str) -> dict[str, Any]:
    """The sources that read the payments and their labels (topics under ``prefix``), and the profile of their streams."""
    return {
        "sources": {
            "payments": {"topic": f"{prefix}team.payments", "kind": "features", "format": "json",
                         "features": PAYMENTS_FEATURES, "stream_id": "key", "event_id": "txn_id",
                         "event_time": "event_time", "profile": "payments:*"},
            "fraud": {"topic": f"{prefix}team.fraud", "kind": "labels", "format": "json", "event_id": "txn_id",
                      "label": "label"},
        },
        "streams": {"payments:*": {"features": PAYMENTS_FEATURES}},
    }


def payments_messages(events: Iterable[FeatureEvent], prefix: str, label_delay: int) -> list[tuple[str, bytes, bytes]]:
    """``(topic, key, value)`` of the events as payment records keyed by account, each label keyed
    by its ``txn_id`` ``label_delay`` payments later (the last ones at the end)."""
    pay, fraud = f"{prefix}team.payments", f"{prefix}team.fraud"
    out: list[tuple[str, bytes, bytes]] = []
    waiting: list[tuple[str, Any]] = []
    for ev in events:
        txn = f"{ACCOUNT}-{ev.seq}"
        rec: dict[str, Any] = {"txn_id": txn, "account": ACCOUNT, "event_time": ev.ts}
        for name, path in _PATHS.items():
            *outer, last = path.split(".")
            at = rec
            for part in outer:
                at = at.setdefault(part, {})
            at[last] = ev.x[name]
        out.append((pay, ACCOUNT.encode(), orjson.dumps(rec)))
        waiting.append((txn, ev.y))
        if len(waiting) > label_delay:
            txn_id, y = waiting.pop(0)
            out.append((fraud, txn_id.encode(), orjson.dumps({"txn_id": txn_id, "label": y})))
    out += [(fraud, t.encode(), orjson.dumps({"txn_id": t, "label": y})) for t, y in waiting]
    return out
