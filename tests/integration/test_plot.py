"""``streamxai plot`` reads a stream's messages from real topics and draws non-trivial images."""

from __future__ import annotations

import json
import math
import uuid

import numpy as np
from helpers.outputs import shaped
from matplotlib import image as mpimg
from streamxai.cli import main
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_raw
from streamxai.schemas import Explanation, Prediction, dumps
from streamxai.settings import AGRAWAL_FEATURES, Settings


def _messages(sid: str, n: int, change_at: int):
    preds, expl = [], []
    for seq in range(n):
        preds.append((sid.encode(), dumps(Prediction(sid, seq, float(seq), 1, 1, float(seq % 7 == 0), seq))))
        if seq % 10 == 9:
            for f, (a, b) in {"a": (0.4, 0.05), "b": (0.02, 0.35), "c": (0.01, 0.01)}.items():
                v = (a if seq < change_at else b) + 0.01 * math.sin(seq / 50)
                expl.append((f"{sid}/ipfi/{f}".encode(), dumps(Explanation(sid, "ipfi", f, v, seq, seq + 1, seq + 1, seq))))
                curve = {"grid": [0.0, 0.5, 1.0], "pd": [0.1, 0.5 if seq < change_at else 0.2, 0.9]}
                expl.append((f"{sid}/ipdp/{f}".encode(),
                             dumps(Explanation(sid, "ipdp", f, v / 2, seq, seq + 1, seq + 1, seq, curve))))
    change = shaped("drift-events", {"stream_id": sid, "explainer": "ipfi", "feature": "a", "series": f"{sid}/ipfi/a",
                                     "seq": change_at + 120, "cut_seq": change_at, "level_before": 0.4,
                                     "level_after": 0.05})
    return preds, expl, [(sid.encode(), json.dumps(change).encode())]


def test_plot_writes_png_and_html_of_one_stream(bootstrap, tmp_path, capsys):
    s = Settings(features=list(AGRAWAL_FEATURES), bootstrap_servers=bootstrap, topic_prefix=f"plot-{uuid.uuid4().hex[:8]}.", partitions=2)
    ensure_topics(s)
    for sid in ("p1", "other"):
        preds, expl, changes = _messages(sid, 1200, 600)
        produce_raw(s, s.topic("predictions"), preds)
        produce_raw(s, s.topic("explanations"), expl)
        produce_raw(s, s.topic("drift-events"), changes)
    # change episodes, when the change detection writes them (a topic of its own)
    from confluent_kafka.admin import AdminClient, NewTopic

    episodes = s.topic("change-episodes")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if episodes not in admin.list_topics(timeout=10).topics:  # a topic of the pipeline's own once it has one
        admin.create_topics([NewTopic(episodes, 1, 1)])[episodes].result(30)
    episode = shaped("change-episodes", {
        "stream_id": "p1", "first_seq": 720, "last_seq": 730, "closed_seq": 900, "cut_seq": 610, "status": "closed",
        "kind": "reliance_shift", "alert": False, "loss_before": 0.1, "loss_after": 0.2,
        "changes": [{"explainer": "ipfi", "feature": "a", "seq": 720, "cut_seq": 610, "level_before": 0.4,
                     "level_after": 0.05}]})
    produce_raw(s, episodes, [(b"p1", json.dumps(episode).encode())])
    png, page = tmp_path / "p1.png", tmp_path / "p1.html"
    common = ["--bootstrap", bootstrap, "--set", f"topic_prefix={s.topic_prefix}"]
    assert main(["plot", "p1", "--out", str(png), "--html", str(page), "--idle", "2", *common]) == 0
    assert "1 change event," in capsys.readouterr().out
    assert png.stat().st_size > 30_000
    pixels = mpimg.imread(png)
    assert pixels.shape[0] > 600 and pixels.shape[1] > 1000
    # a blank or single-colour image has (near) zero variance; lines, text and bands give plenty
    assert float(np.var(pixels[..., :3])) > 0.005
    text = page.read_text()
    assert "data:image/png;base64," in text and "<td>720</td>" in text and "other" not in text
    assert "Change episodes (1)" in text and "<td>610</td><td>720..730</td>" in text
    assert main(["plot", "nosuch", "--out", str(tmp_path / "x.png"), "--idle", "1", *common]) == 2
    err = capsys.readouterr().err
    assert err.startswith("streamxai: error: no explanations of stream 'nosuch'") and err.count("\n") == 1
