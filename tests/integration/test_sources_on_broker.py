"""A source in the team's own format through a real broker gives the predictions and explanations of the
same events in the own envelope; a misfit record is a dead letter naming the path; labels keyed by the
team's id are learned, expire, or are dead letters."""

from __future__ import annotations

import time

import orjson
from helpers.pipeline_runs import collect_all, make_settings, until
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events, produce_raw
from streamxai.schemas import FeatureEvent
from streamxai.worker import stop_worker

FEATURES = ["amount", "merchant.risk", "merchant.country"]
PROFILE = {"features": FEATURES, "categorical": ["merchant.country"], "model_params": {"grace_period": 20},
           "explainers": ["ipfi", "ipdp"]}


def _records(n: int) -> list[tuple[bytes, dict]]:
    """``(account, record)`` of two accounts: a's fraud follows the merchant's risk, b's the amount."""
    out = []
    for i in range(n):
        acc = "a" if i % 3 else "b"
        risk, amount = (i * 37 % 11) / 10, 5.0 + i * 13 % 17
        fraud = int(risk > 0.6) if acc == "a" else int(amount > 12)
        out.append((acc.encode(), {"txn_id": f"t{i}", "account": acc, "amount": amount,
                                   "merchant": {"risk": risk, "country": ["DE", "FR", "NL"][i % 3]},
                                   "event_time": 1_700_000_000 + i, "fraud": fraud}))
    return out


def _as_envelope(records: list[tuple[bytes, dict]]) -> list[FeatureEvent]:
    seqs: dict[str, int] = {}
    out = []
    for acc, r in records:
        sid = f"payments:{acc.decode()}"
        seqs[sid] = seqs.get(sid, -1) + 1
        out.append(FeatureEvent(sid, seqs[sid], float(r["event_time"]), {
            "amount": r["amount"], "merchant.risk": r["merchant"]["risk"], "merchant.country": r["merchant"]["country"]},
            r["fraud"]))
    return out


def _outputs(s) -> tuple[dict, dict]:
    """Predictions and explanation values by stream and seq, each with the event id it carries."""
    preds = {(m["stream_id"], m["seq"]): (m["ts"], m["y_pred"], m["loss"], m["model_version"], m.get("event_id"))
             for m in collect_all(s, "predictions") if m.get("schema", "").startswith("prediction/")}
    expl = {(m["stream_id"], m["seq"], m["explainer"], m["feature"]): (m["value"], m.get("event_id"))
            for m in collect_all(s, "explanations")}
    return preds, expl


def _values(outputs: dict) -> dict:
    return {k: v[:-1] for k, v in outputs.items()}


def _settled(s, n_preds: int, n_expl: int | None = None):
    def check():
        preds, expl = _outputs(s)
        return (preds, expl) if len(preds) == n_preds and (n_expl is None or len(expl) >= n_expl) and expl else None
    return check


def _stable(s):
    """The outputs once two reads 3 s apart agree (the explainers trail the model)."""
    last: list = []

    def check():
        now = _outputs(s)
        if last and now == last[0]:
            return now
        last[:] = [now]
        time.sleep(3)
        return None
    return check


def test_a_team_topic_gives_the_values_of_the_own_envelope(bootstrap, tmp_path, workers, topic_factory):
    records = _records(300)
    team = topic_factory(partitions=2, prefix="team-payments")
    source = {"topic": team, "kind": "features", "format": "json", "features": FEATURES, "stream_id": "key",
              "event_id": "txn_id", "event_time": "event_time", "label": "fraud", "profile": "payments:*"}
    common = dict(features=FEATURES, categorical=["merchant.country"], streams={"payments:*": PROFILE},
                  explain_groups=2, emit_every=5, storage_size=20, grid_size=3, partitions=2)
    own = make_settings(bootstrap, str(tmp_path / "own"), **common)
    mapped = make_settings(bootstrap, str(tmp_path / "mapped"), sources={"payments": source}, **common)

    ensure_topics(own)
    p = workers(own)
    produce_events(own, _as_envelope(records))
    until(_settled(own, len(records)), 180, "the own envelope's predictions")
    own_preds, own_expl = until(_stable(own), 120, "the own envelope's explanations to be complete")
    stop_worker(p)

    ensure_topics(mapped)
    workers(mapped)
    bad = (b"a", orjson.dumps({"txn_id": "x", "account": "a", "amount": 1.0, "merchant": {"risk": 0.1},
                               "event_time": 1, "fraud": 0}))
    produce_raw(mapped, team, [(acc, orjson.dumps(r)) for acc, r in records[:150]] + [bad]
                + [(acc, orjson.dumps(r)) for acc, r in records[150:]])
    got_preds, got_expl = until(_settled(mapped, len(records), len(own_expl)), 180, "the source's outputs")

    assert _values(got_preds) == _values(own_preds) and len(got_preds) == len(records)
    assert _values(got_expl) == _values(own_expl) and len(got_expl) > 50
    # the source's outputs carry the team's event ids (the own envelope's none)
    ids = {sid_seq: f"t{i}" for i, sid_seq in enumerate((e.stream_id, e.seq) for e in _as_envelope(records))}
    assert {k: v[-1] for k, v in got_preds.items()} == ids
    assert all(v[-1] == ids[k[:2]] for k, v in got_expl.items())
    assert {v[-1] for v in own_preds.values()} == {None}
    (letter,) = collect_all(mapped, "dead-letters")
    assert letter["reason"] == "features" and "path 'merchant.country'" in letter["error"]
    assert letter["source"]["topic"] == team and letter["event_id"] == "x"


def test_labels_keyed_by_event_id_find_their_events_on_the_broker(bootstrap, tmp_path, workers, topic_factory):
    # payments of two accounts, then (later, from another system) their labels on another topic keyed by
    # txn_id: every 25th never labelled, two labels of ids that never existed, and the labels of the last
    # five payments before those payments themselves (the join holds them until their events come)
    payments, fraud = topic_factory(partitions=2, prefix="team-payments"), topic_factory(partitions=2, prefix="team-fraud")
    n, early, never, ghosts = 300, 5, set(range(3, 300, 25)), ["ghost-1", "ghost-2"]
    records = _records(n + early)

    def payment(r):
        return payments, r[0], orjson.dumps({k: v for k, v in r[1].items() if k != "fraud"})

    def label(txn_id, y):
        return fraud, txn_id.encode(), orjson.dumps({"txn_id": txn_id, "fraud": y})

    labelled = [r for j, (_, r) in enumerate(records) if j not in never]
    s = make_settings(bootstrap, str(tmp_path / "state"), features=FEATURES, categorical=["merchant.country"],
                      streams={"payments:*": PROFILE}, explain_groups=1, partitions=2, max_label_delay=200,
                      sources={"payments": {"topic": payments, "kind": "features", "features": FEATURES,
                                            "stream_id": "key", "event_id": "txn_id", "event_time": "event_time",
                                            "profile": "payments:*"},
                               "fraud": {"topic": fraud, "kind": "labels", "event_id": "txn_id", "label": "fraud"}})
    ensure_topics(s)
    workers(s)
    produce_raw(s, payments, [payment(r) for r in records[:n]])
    until(lambda: len(collect_all(s, "predictions")) >= n, 180, "the payments' predictions")
    late = [label(r["txn_id"], r["fraud"]) for r in labelled]
    produce_raw(s, payments, late[:-early] + [label(g, 1) for g in ghosts] + late[-early:])

    def learned() -> int:
        return sum(m.get("outcome") == "learned" for m in collect_all(s, "predictions"))

    # the labels of the payments sent go through the join and the payments below do not: on a loaded
    # machine those payments would overtake them, move stream a past max_label_delay (its 200th
    # event) and expire its first events, so they are sent once those labels are learned
    until(lambda: learned() >= len(late) - early, 180, "the labels of the payments sent joined and learned", last=learned)
    produce_raw(s, payments, [payment(r) for r in records[n:]])
    until(lambda: learned() >= len(late), 180, "the labels held for their payments joined and learned", last=learned)
    # the ghosts expire once max_label_delay more events came to their partitions
    produce_raw(s, payments, [payment((acc, {**r, "txn_id": f"more-{i}"})) for i, (acc, r) in enumerate(_records(700))])

    def settled():
        out = collect_all(s, "predictions")
        learned = [m for m in out if m.get("outcome") == "learned"]
        letters = collect_all(s, "dead-letters")
        predicted = sum(1 for m in out if m["schema"].startswith("prediction/"))
        done = len(learned) + len(letters) >= len(late) + len(ghosts) and predicted >= n + early + 700
        return (out, letters) if done else None

    out, letters = until(settled, 240, "every label joined or dead-lettered")
    preds = {m["event_id"]: (m["stream_id"], m["seq"]) for m in out if m["schema"].startswith("prediction/")}
    learned = [(m["stream_id"], m["seq"]) for m in out if m.get("outcome") == "learned"]
    assert len(preds) == n + early + 700
    assert sorted(learned) == sorted(preds[r["txn_id"]] for r in labelled), \
        [(d["reason"], d["stage"], d["error"][:300]) for d in letters[:3]]
    assert sorted((d["reason"], d["event_id"], d["stage"]) for d in letters) == [
        ("unknown_event_id", "ghost-1", "join"), ("unknown_event_id", "ghost-2", "join")]
    assert {d["source"]["topic"] for d in letters} == {fraud}
    # the outcomes and explanations name the team's event ids
    by_seq = {v: k for k, v in preds.items()}
    assert all(m["event_id"] == by_seq[m["stream_id"], m["seq"]] for m in out if m.get("outcome") == "learned")
    named = [m for m in collect_all(s, "explanations") if "event_id" in m]
    assert named and all(m["event_id"] == by_seq[m["stream_id"], m["seq"]] for m in named)
    # the events whose label never comes expire once their stream is max_label_delay events on
    first = {preds[r["txn_id"]] for _, r in records}
    expired = {(m["stream_id"], m["seq"]) for m in out if m.get("outcome") == "expired"}
    assert expired & first == {preds[records[j][1]["txn_id"]] for j in never}
