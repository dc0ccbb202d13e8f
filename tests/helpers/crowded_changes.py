"""A stream whose change events come close together, as the demo's do: 18,000 events, 44 change events
in 5 episodes over three explainers of nine features, an alert, and two lone changes."""

from __future__ import annotations

from helpers.outputs import shaped

FEATURES = ("salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan")
EXPLAINERS = ("ipfi", "isage", "ipdp")
#: (first seq, kind, alert, [(explainer, feature, offset from the first seq)])
EPISODES = (
    (2929, "learning", False, [("ipdp", f, 110 * i) for i, f in enumerate(FEATURES[:8])]
     + [("ipdp", f, 900 + 80 * i) for i, f in enumerate(FEATURES[4:9])]),
    (6179, "degradation", True, [(ex, f, 40 * i + 3 * j) for i, f in enumerate(("salary", "elevel", "age"))
                                 for j, ex in enumerate(EXPLAINERS)]),
    (8680, "learning", False, [("isage", "age", 0)]),
    (10200, "reliance_shift", False, [("ipfi", "elevel", 0), ("isage", "elevel", 20), ("ipdp", "car", 60),
                                      ("isage", "car", 300), ("ipfi", "car", 320), ("ipdp", "elevel", 360),
                                      ("ipfi", "salary", 700), ("isage", "salary", 720), ("ipdp", "salary", 760)]),
    (14320, "learning", False, [("ipdp", "salary", 0), ("ipdp", "loan", 30), ("ipfi", "loan", 50),
                                ("isage", "loan", 70), ("ipdp", "age", 90), ("ipfi", "age", 110),
                                ("isage", "age", 130), ("ipdp", "car", 150), ("ipfi", "car", 170),
                                ("isage", "car", 190)]),
)
LONE = (("ipfi", "hyears", 16000), ("isage", "hyears", 16050))


def feed_crowded_changes(st, sid: str = "crowd", n: int = 18_000) -> int:
    """Feed the stream into a DashboardState ``st``; returns how many change events it has."""
    for seq in range(0, n, 30):
        st.add("predictions", shaped("predictions", {"stream_id": sid, "seq": seq, "loss": 0.3}), ts=1000.0 + seq / 100)
        for ex in EXPLAINERS:
            for i, f in enumerate(FEATURES):
                st.add("explanations", shaped("explanations", {"stream_id": sid, "explainer": ex, "feature": f, "seq": seq,
                                        "value": 0.02 * i + 0.05 * ((seq // 6000 + i) % 3), "n_explained": seq + 1,
                                        "n_seen": seq + 1}))
    count = 0
    for first, kind, alert, changes in EPISODES:
        told = []
        for ex, f, off in changes:
            change = {"stream_id": sid, "explainer": ex, "feature": f, "seq": first + off,
                      "cut_seq": first + off - 100, "level_before": 0.1, "level_after": 0.3}
            st.add("drift-events", shaped("drift-events", change))
            told.append({"explainer": ex, "feature": f, "seq": first + off, "cut_seq": first + off - 100,
                         "level_before": 0.1, "level_after": 0.3})
        count += len(changes)
        last = first + max(off for _, _, off in changes)
        st.add("change-episodes", shaped("change-episodes", {"stream_id": sid, "first_seq": first,
                                   "last_seq": last, "closed_seq": last + 600, "cut_seq": first - 100,
                                   "status": "closed", "kind": kind, "alert": alert, "loss_before": 0.3,
                                   "loss_after": 0.4 if alert else 0.28, "changes": told}))
    for ex, f, seq in LONE:
        st.add("drift-events", shaped("drift-events", {"stream_id": sid, "explainer": ex, "feature": f,
                                "seq": seq, "cut_seq": seq - 100, "level_before": 0.05, "level_after": 0.2}))
        count += 1
    return count
