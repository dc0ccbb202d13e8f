"""The worker's log line for a change episode, the line an on-call engineer reads when an
episode pages. It is told from the ``change_episode`` message the worker publishes, so the line
and the message agree on every seq.

>>> from types import SimpleNamespace as M
>>> ep = M(stream_id="elec2", kind="degradation", alert=True, status="open", first_seq=19119, cut_seq=19400,
...        closed_seq=None, changes=[{"explainer": "ipdp", "feature": f} for f in ("a", "b", "a")],
...        alert_key="elec2/19119")
>>> print(episode_line(ep))
ALERT change episode in stream elec2: degradation; alert_key elec2/19119; first change detected at seq 19119; \
largest change's new regime began at seq 19400; 2 series changed: ipdp/a, ipdp/b

A data fault says what to check:

>>> ep = M(stream_id="elec2", kind="data_fault", alert=True, status="open", first_seq=20074, cut_seq=20000,
...        closed_seq=None, changes=[{"explainer": "inputs", "feature": "nswprice"}], alert_key="elec2/20074",
...        faults=[{"feature": "nswprice", "reliance": 1.0, "detail": "scaled about x978 since 20000"}])
>>> print(episode_line(ep))
ALERT change episode in stream elec2: data fault; alert_key elec2/20074; first change detected at seq 20074; \
largest change's new regime began at seq 20000; 1 series changed: inputs/nswprice; check the inputs of nswprice \
(the model relied on it at 100% of its top feature): scaled about x978 since 20000
"""

from __future__ import annotations

from typing import Any

from streamxai.schemas.change_feed import fault_subject

__all__ = ["episode_line"]


def episode_line(ep: Any) -> str:
    """The line for ``ep``, a :class:`schemas.ChangeEpisode` (or anything with its fields)."""
    series = list(dict.fromkeys(f"{c.get('explainer')}/{c.get('feature')}" for c in ep.changes))
    kind = str(ep.kind).replace("_", " ")
    parts = [f"{'ALERT ' if ep.alert else ''}change episode in stream {ep.stream_id}: {kind}"]
    key = getattr(ep, "alert_key", None)
    if key is not None:
        parts.append(f"alert_key {key}")
    parts.append(f"first change detected at seq {ep.first_seq}")
    if ep.cut_seq is not None:
        parts.append(f"largest change's new regime began at seq {ep.cut_seq}")
    if ep.status == "closed" and ep.closed_seq is not None:
        parts.append(f"closed at seq {ep.closed_seq}")
    parts.append(f"{len(series)} series changed: {', '.join(series)}")
    for f in getattr(ep, "faults", None) or ():  # a data fault: what to check, and how much it mattered
        relied = f.get("reliance")
        share = f" (the model relied on it at {relied:.0%} of its top feature)" if relied is not None else ""
        parts.append(f"check {fault_subject(f)}{share}: {f.get('detail')}")
    return "; ".join(parts)
