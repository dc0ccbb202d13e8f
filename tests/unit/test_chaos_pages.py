"""The chaos benchmark's page count pages each reference alert once, and catches a second key, a shared key,
a missed alert and an ``alert`` flag without its key."""

from __future__ import annotations

from helpers.chaos_check import check_alerts
from streamxai.reference import ReferenceRun


def episode(first: int, status: str, key: str | None, kind: str = "degradation", sid: str = "s") -> dict:
    return {"stream_id": sid, "first_position": first, "status": status, "kind": kind, "alert": key is not None,
            "alert_key": key}


def test_an_episodes_open_update_and_close_page_once():
    ref = ReferenceRun(alerts=["s/10"])
    row = check_alerts([episode(10, "open", "s/10"), episode(10, "open", "s/10"), episode(10, "closed", "s/10"),
                        episode(40, "closed", None, kind="learning")], ref)
    assert (row.ok, row.messages, row.distinct, row.duplicates) == (True, 3, 1, 2)


def test_an_alert_announced_again_under_another_key_pages_twice():
    row = check_alerts([episode(10, "open", "s/10"), episode(12, "open", "s/12")], ReferenceRun(alerts=["s/10"]))
    assert not row.ok and row.mismatched == 1 and "s/12: paged" in row.examples[0]


def test_a_key_on_two_episodes_a_missed_alert_and_a_flag_without_its_key_are_wrong():
    on_two = check_alerts([episode(10, "open", "s/10"), episode(11, "closed", "s/10")], ReferenceRun(alerts=["s/10"]))
    assert on_two.mismatched == 1 and "2 episodes" in on_two.examples[0]
    missed = check_alerts([], ReferenceRun(alerts=["s/10"]))
    assert missed.missing == 1 and not missed.ok
    flag = {**episode(10, "open", None), "alert": True}
    assert check_alerts([flag], ReferenceRun()).mismatched == 1
