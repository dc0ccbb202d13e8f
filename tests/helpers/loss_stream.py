"""A stream whose model loss comes twice, as published: in each prediction, and as the same block in every
explainer's report."""

from __future__ import annotations

import numpy as np

from helpers.outputs import shaped


def feed_loss_stream(st, sid: str = "s", n: int = 3000, explainers=("ipfi", "isage", "ipdp")) -> None:
    """Feed ``n`` events of stream ``sid`` into a DashboardState ``st``: the model errs with
    probability 0.1, 0.4 from n/3 to n/2 (a drift, then recovery); reports every 10th event."""
    rng = np.random.default_rng(7)
    losses = []
    for seq in range(n):
        loss = float(rng.random() < 0.1 + 0.3 * (n // 3 <= seq < n // 2))
        losses.append(loss)
        st.add("predictions", shaped("predictions", {"stream_id": sid, "seq": seq, "loss": loss}), ts=1000.0 + seq / 100)
        if seq % 10 == 9:
            mean = sum(losses[-10:]) / 10
            ml = {"n": 10, "mean": mean, "m2": sum((v - mean) ** 2 for v in losses[-10:])}
            for ex in explainers:
                for f, v in (("a", 0.4), ("b", 0.1)):
                    st.add("explanations", shaped("explanations", {"stream_id": sid, "explainer": ex, "feature": f,
                                            "value": v, "seq": seq, "n_explained": seq + 1, "n_seen": seq + 1,
                                            "model_loss": ml}))
