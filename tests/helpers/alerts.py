"""A pager paging once per ``alert_key``, a stream of explanations that always alerts, and a change worker
that stops committing once it has sent an alert (the crash point between send and commit).

>>> pager = Pager()
>>> [pager.take(ep) for ep in ({"alert_key": "d/5"}, {"alert_key": None}, {"alert_key": "d/5"})]
[True, False, False]
>>> pager.pages
['d/5']"""

from __future__ import annotations

import random

from helpers.handler_inputs import explanation_msg
from helpers.partition_log import PartitionLog

__all__ = ["Pager", "stepped_explanations", "uncommitted_after_an_alert"]


class Pager:
    """Pages on a change episode whose ``alert_key`` it has not paged on yet."""

    def __init__(self) -> None:
        self.pages: list[str] = []

    def take(self, episode: dict) -> bool:
        key = episode.get("alert_key")
        if key is None or key in self.pages:
            return False
        self.pages.append(key)
        return True


def stepped_explanations(emit_every: int, n: int = 1200, shift_at: int = 600, seed: int = 11) -> PartitionLog:
    """iPFI explanations of ``age`` and ``car`` of stream ``d`` stepping at ``shift_at`` with the loss 0.1 -> 0.3:
    a degradation, which alerts."""
    rng, log = random.Random(seed), PartitionLog()
    k = emit_every
    for i in range(n):
        seq = (i + 1) * k - 1
        loss = (k, 0.1 if i < shift_at else 0.3, 0.5)
        for feature, jump in (("age", 0.3), ("car", 0.2)):
            xs = [0.1 + (jump if i >= shift_at else 0.0) + rng.gauss(0, 0.2) for _ in range(k)]
            m = sum(xs) / k
            block = (k, m, sum((x - m) ** 2 for x in xs))
            log.append("explanations", 0, b"d", explanation_msg("d", "ipfi", feature, seq, m, block, (i + 1) * k, loss))
    return log


#: run in a worker's process (``python -c``): a change worker whose consumer commits as usual
#: until its change handler has returned an alerting episode, and never after (a worker killed
#: then has sent the alert but not committed the explanation it came from)
_UNCOMMITTED_AFTER_AN_ALERT = """
import sys
from faust.transport import consumer
from streamxai.handlers.change import ChangeHandler

alerted = []
process = ChangeHandler._process

def process_and_note(self, *args, **kwargs):
    outs = process(self, *args, **kwargs)
    if any(o.topic == "change-episodes" and b'"alert_key":"' in o.value for o in outs):
        alerted.append(True)
    return outs

commit = consumer.Consumer._commit_offsets

async def commit_until_an_alert(self, offsets, *args, **kwargs):
    if alerted:
        return False
    return await commit(self, offsets, *args, **kwargs)

ChangeHandler._process = process_and_note
consumer.Consumer._commit_offsets = commit_until_an_alert
from streamxai.cli import main
sys.exit(main(["worker", "--loglevel", "warning", "--roles", "change"]))
"""


def uncommitted_after_an_alert() -> str:
    """The code of a change worker (``python -c``) that commits nothing once it has sent an alert."""
    return _UNCOMMITTED_AFTER_AN_ALERT
