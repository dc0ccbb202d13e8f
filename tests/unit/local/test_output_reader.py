"""One reader of the output topics serves the terminal view, dashboard and plot from one per-stream state;
an odd message stops none of them."""

from __future__ import annotations

import io

import orjson
from helpers.outputs import shaped
from streamxai.core.stream import EXPLAINER_NAMES
from streamxai.kafka.io import Record
from streamxai.local.dashboard import DashboardState
from streamxai.local.dashboard.server import DashboardConsumer
from streamxai.local.live_view import LiveView
from streamxai.local.output_reader import OutputReader
from streamxai.settings import Settings

CHANGE = shaped("drift-events", {"stream_id": "s", "series": "s/ipfi/b", "explainer": "ipfi", "feature": "b",
                                 "seq": 90, "cut_seq": 60, "level_before": 0.05, "level_after": 0.4})
EPISODE = shaped("change-episodes", {
           "stream_id": "s", "first_seq": 90, "last_seq": 95, "closed_seq": 99, "status": "closed",
           "cut_seq": 60, "loss_before": 0.1, "loss_after": 0.3,
           "changes": [{"explainer": "ipfi", "feature": "b", "seq": 90, "cut_seq": 60, "level_before": 0.05,
                        "level_after": 0.4},
                       {"explainer": "isage", "feature": "a", "seq": 95, "cut_seq": 65, "level_before": 0.3,
                        "level_after": 0.1}],
           "explanations": {"ipfi": {"b": {"before": 0.06, "after": 0.38, "rank_before": 2, "rank_after": 1}}}})


def _records(prefix: str = "p.") -> list[Record]:
    msgs: list[tuple[str, dict]] = []
    for seq in range(100):
        msgs.append(("predictions", shaped("predictions", {
            "stream_id": "s", "seq": seq, "ts": float(seq), "y_true": 1, "y_pred": seq % 4 == 0,
            "loss": float(seq % 4 == 0), "model_version": seq})))
        if seq % 10 == 9:
            for ex, feat, value, se in (("ipfi", "a", 0.3, 0.01), ("ipfi", "b", 0.05 + seq / 250, None),
                                        ("isage", "a", 0.2, 0.02), ("ipdp", "b", 0.1, None)):
                msgs.append(("explanations", shaped("explanations", {
                    "stream_id": "s", "explainer": ex, "feature": feat, "value": value, "stderr": se, "seq": seq,
                    "n_explained": seq + 1, "n_seen": seq + 1, "model_version": seq})))
    msgs += [("drift-events", CHANGE), ("change-episodes", EPISODE),
             ("dead-letters", {"schema": "dead_letter/v2", "reason": "schema"})]
    return [Record(prefix + topic, 0, i, b"s", orjson.dumps(obj)) for i, (topic, obj) in enumerate(msgs)]


def test_the_live_view_shows_what_it_showed_before_the_reader():
    """The terminal view's text, pinned from the view before it used the shared reader."""
    view = LiveView(["a", "b"], "p.", out=io.StringIO())
    for rec in _records():
        view.add(rec)
    view.render(force=True)
    assert view.out.getvalue().rstrip("\n").splitlines() == [
        "stream s: 100 predictions (last seq 99), mean loss of last 100: 0.250",
        "  explained/seen: ipdp 100/100, ipfi 100/100, isage 100/100",
        "  feature         iPFI                          iSAGE     iPDP",
        "  a             0.3000  #############          0.2000        -",
        "  b             0.4460  ####################        -   0.1000",
        "change events: 1   episodes: 1   dead letters: 1",
        "  seq     90  s/ipfi/b                         0.0500 -> 0.4000  (new regime from seq 60)",
    ]
    assert view.summary().splitlines() == [
        "",
        "=== summary === (value ± half-width of its 95 % interval)",
        "stream s: 100 predictions, explained up to seq 99",
        "  top ipfi : b=0.446, a=0.300±0.020",
        "  top isage: a=0.200±0.039",
        "  top ipdp : b=0.100",
        "  change events: 1, change episodes: 1",
        "    episode opened at seq 90, new regimes from seq 60 to 65; model loss 0.100 -> 0.300",
        "      ipfi/b        0.0600 -> 0.3800  (rank 2 -> 1)",
        "      isage/a       0.3000 -> 0.1000",
        "dead letters: 1 (schema)",
    ]


def test_the_live_view_and_the_dashboard_show_one_state():
    view, board = LiveView(["a", "b"], "p.", out=io.StringIO()), DashboardState()
    for rec in _records():
        view.add(rec)
        board.feed(rec.topic[2:], rec.value)
    v = board.stream_view("s")
    top = {ex: {r["feature"]: r["value"] for r in rows} for ex, rows in v["ranking"].items()}
    assert {ex: vals for ex, vals in view.ranking("s").items() if vals} == top
    assert [(c["seq"], c["before"], c["after"]) for c in view.changes] == [
        (c["seq"], c["before"], c["after"]) for c in v["changes"]]
    assert view.episodes[0]["first_seq"] == v["episodes"][0]["first_seq"] == 90
    assert view.min_explained_seq("s") == v["last_seq"] - v["lag_events"] == 99


def test_an_odd_message_on_an_output_topic_stops_no_view():
    """One prediction without a seq (or a value that is not JSON) does not raise out of
    ``LiveView.add`` and end the demo: the reader reads fields defensively."""
    view = LiveView(["a"], "p.", out=io.StringIO())
    for topic, raw in (("predictions", b'{"schema": "prediction/v2", "stream_id": "s"}'),
                       ("explanations", b'{"schema": "explanation/v4", "stream_id": "s", "seq": 3}'),
                       ("drift-events", b'{"schema": "drift_event/v3", "stream_id": "s", "seq": 5, "position": 5}'),
                       ("change-episodes", b"not json"),
                       ("change-episodes", b'{"schema": "change_episode/v4", "stream_id": "s",'
                                           b' "changes": [1, {"feature": "a"}]}'),
                       ("dead-letters", b"[]")):
        view.add(Record("p." + topic, 0, 0, b"s", raw))
    view.render(force=True)
    assert "change events: 1   episodes: 1   dead letters: 1" in view.out.getvalue()
    assert "change events: 1, change episodes: 1" in view.summary()
    assert view.reader.ignored == 1  # the value that is not JSON


def test_a_message_of_another_version_is_skipped_and_counted(caplog):
    """A message of another version (or none) shows nothing, and is counted and logged once per version."""
    view, board = LiveView(["a"], "p.", out=io.StringIO()), DashboardState()
    old = [("drift-events", {**CHANGE, "schema": "drift_event/v2"}),
           ("drift-events", {**CHANGE, "schema": "drift_event/v2", "seq": 91}),
           ("change-episodes", {**EPISODE, "schema": "change_episode/v1"}),
           ("explanations", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "value": 0.1, "seq": 1})]
    with caplog.at_level("WARNING", logger="streamxai.reader"):
        for topic, obj in old:
            view.add(Record("p." + topic, 0, 0, b"s", orjson.dumps(obj)))
            board.add(topic, obj)
    assert view.reader.other_versions == board.other_versions == 4 and view.reader.ignored == 0
    assert (view.changes, view.episodes, view.streams) == ([], [], {})
    assert sum("drift_event/v2" in r.getMessage() for r in caplog.records) == 2  # once per view
    view.add(Record("p.drift-events", 0, 0, b"s", orjson.dumps(CHANGE)))
    assert [c["seq"] for c in view.changes] == [90]


def test_explainers_are_shown_in_the_one_order_of_their_names():
    board = DashboardState()
    for ex in ("ipdp", "zzz", "ipfi"):
        board.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": ex, "feature": "a",
                                                          "value": 0.1, "seq": 1}))
    assert board.stream_view("s")["explainers"] == ["ipfi", "ipdp", "zzz"]
    assert list(EXPLAINER_NAMES) == Settings().explainers


def test_reading_the_change_topics_again_gives_the_same_changes():
    """The demo re-reads the change topics at its end, once the change agent caught up."""
    view = LiveView(["a", "b"], "p.", out=io.StringIO())
    records = _records()
    for rec in records:
        view.add(rec)
    before = (view.changes, view.episodes)
    view.forget_changes()
    assert (view.changes, view.episodes) == ([], [])
    for rec in records:
        if rec.topic in ("p.drift-events", "p.change-episodes"):
            view.add(rec)
    assert (view.changes, view.episodes) == before


def test_the_dashboard_consumes_every_topic_the_reader_reads():
    consumer = DashboardConsumer(Settings(topic_prefix="x."), DashboardState())
    import re

    assert all(re.match(consumer.pattern, f"x.{t}") for t in OutputReader.TOPICS)
    assert set(OutputReader.TOPICS) == {"predictions", "explanations", "local-explanations", "drift-events", "change-episodes"}


def test_only_one_stream_is_kept_when_asked():
    reader = OutputReader(only="s")
    for sid in ("s", "other"):
        reader.add("predictions", shaped("predictions", {"stream_id": sid, "seq": 1}))
    assert list(reader.streams) == ["s"] and reader.ignored == 0


def test_an_episode_sent_when_it_opens_and_when_it_closes_shows_once():
    """An episode is sent at its open (the alert) and again at its close, with all its changes:
    the views show it once, as last sent."""
    opened = {**EPISODE, "status": "open", "changes": EPISODE["changes"][:1], "last_seq": 90, "last_position": 90,
              "closed_seq": None, "closed_position": None}
    closed = EPISODE
    view, board = LiveView(["a", "b"], "p.", out=io.StringIO()), DashboardState()
    for ep in (opened, closed):
        view.add(Record("p.change-episodes", 0, 0, b"s", orjson.dumps(ep)))
        board.add("change-episodes", ep)
    (shown,) = board.stream_view("s")["episodes"]
    assert (shown["last_seq"], shown["closed_seq"], shown["n_changes"]) == (95, 99, 2)
    assert len(view.episodes) == 1 and "change events: 0, change episodes: 1" in view.summary()


def test_values_beyond_what_a_worker_sends_are_not_read_so_the_plot_is_drawn(tmp_path):
    # two crafted explanations of +-1e308 on the explanations topic must not end `streamxai plot`
    # ("ValueError: arange: cannot compute length", matplotlib's axis range overflowing); no
    # worker sends a value beyond 1e100 (MAX_LOSS)
    from streamxai.local.plot import plot_view

    r = DashboardState()
    for seq, value in ((2, 0.1), (3, 1e308), (4, -1e308), (5, 1e101), (6, 0.2)):
        r.feed("explanations", orjson.dumps(shaped("explanations", {"stream_id": "s", "explainer": "ipfi",
                                                                    "feature": "a", "seq": seq, "value": value,
                                                                    "stderr": 0.01})))
    assert [row["value"] for row in r.stream_view("s")["ranking"]["ipfi"]] == [0.2]
    assert r.stream_view("s")["series"]["ipfi"]["a"]["x"] == [2, 6]
    assert plot_view(r.stream_view("s"), str(tmp_path / "s.png")) and (tmp_path / "s.png").stat().st_size > 0


def test_a_crafted_ipdp_curve_is_not_read_so_the_plot_is_drawn(tmp_path):
    # a curve whose grid mixes numbers and strings, or whose standard errors are strings, must
    # not end `streamxai plot` with a TypeError
    from streamxai.local.plot import plot_view

    for curve in ({"grid": [1, "a"], "pd": [0.1, 0.2]}, {"grid": [1, 2], "pd": [1e308, -1e308]},
                  {"grid": [1, 2], "pd": [0.1, 0.2], "se": ["x", 1e308]}):
        r = DashboardState()
        r.feed("explanations", orjson.dumps(shaped("explanations", {"stream_id": "s", "explainer": "ipfi",
                                                                    "feature": "a", "seq": 2, "value": 0.1})))
        r.feed("explanations", orjson.dumps(shaped("explanations", {"stream_id": "s", "explainer": "ipdp",
                                                                    "feature": "a", "seq": 2, "value": 0.1,
                                                                    "curve": curve})))
        assert plot_view(r.stream_view("s"), str(tmp_path / "s.png")), curve
    assert r.stream_view("s")["curves"]["a"] == {"grid": [1, 2], "pd": [0.1, 0.2], "seq": 2, "position": 2}


def test_a_crafted_change_is_read_with_numbers_only():
    # a drift event's interval, effect and losses are read as numbers: markup never reaches the page
    markup = "<img src=x onerror=alert(1)>"
    r = DashboardState()
    r.feed("drift-events", orjson.dumps(shaped("drift-events", {
        "stream_id": "s", "explainer": "ipfi", "feature": "a", "seq": 5, "level_before": 0.1, "level_after": 0.2,
        "ci_before": [markup, 0.2], "ci_after": [0.1, 0.3, 0.5], "effect": markup, "relative_effect": [markup],
        "loss_before": markup, "loss_after": 0.25})))
    (c,) = r.stream_view("s")["changes"]
    assert (c["ci_before"], c["ci_after"], c["effect"], c["relative_effect"]) == ([None, 0.2], None, None, None)
    assert (c["loss_before"], c["loss_after"]) == (None, 0.25)
