"""The dashboard's state (bounded, defensive about odd fields) and its HTTP endpoints."""

from __future__ import annotations

import asyncio
import threading
from collections import deque

import orjson
from aiohttp.test_utils import TestClient, TestServer
from helpers.outputs import shaped
from streamxai.local.dashboard import DashboardState, Trajectory, make_web_app
from streamxai.local.plot import plot_summary


def test_trajectory_memory_is_bounded_and_keeps_the_span():
    t = Trajectory(max_points=50)
    for i in range(100_000):
        t.append(i, float(i))
    pts = t.points()
    assert len(t.xs) < 50 and len(pts["x"]) <= 51
    assert pts["x"][0] == 0 and pts["x"][-1] == 99_999  # first and newest point always shown
    gaps = {b - a for a, b in zip(pts["x"][:-2], pts["x"][1:-1], strict=True)}
    assert gaps == {float(t.stride)}  # evenly thinned


def _feed(st: DashboardState, sid: str, n: int, explainers=("ipfi", "isage", "ipdp"), features=("a", "b", "c")):
    for seq in range(n):
        st.add("predictions", shaped("predictions", {"stream_id": sid, "seq": seq, "loss": float(seq % 3 == 0)}), ts=1000.0 + seq / 100)
        if seq % 10 == 9:
            for ex in explainers:
                for f in features:
                    st.add("explanations", shaped("explanations", {"stream_id": sid, "explainer": ex, "feature": f, "value": seq / n,
                                            "seq": seq, "n_explained": seq + 1, "n_seen": seq + 1}))


def _stored_points(st: DashboardState) -> int:
    (s,) = st.streams.values()
    tracks = [*s.series.values(), *s.model_loss.values(), s.loss, s.pred_history]
    return sum(len(t.xs) for t in tracks) + len(s.pred_times) + len(s.changes) + len(s.episodes)


def test_memory_per_stream_is_flat_in_stream_length():
    short, long = DashboardState(max_points=64), DashboardState(max_points=64)
    _feed(short, "s", 5_000)
    _feed(long, "s", 50_000)
    # every trajectory holds 32..63 points and the exact prediction-time window 2,000, however long the stream
    assert _stored_points(short) <= 11 * 63 + 2_000
    assert _stored_points(long) <= 11 * 63 + 2_000


def test_lag_in_seconds_exact_recently_and_approximate_far_behind():
    st = DashboardState(max_points=64)
    for seq in range(10_000):
        st.add("predictions", shaped("predictions", {"stream_id": "s", "seq": seq}), ts=float(seq))  # one event per second
    st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "value": 1.0, "seq": 9_000}))
    assert st.stream_view("s")["lag_s"] == 999.0
    st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": "isage", "feature": "a", "value": 1.0, "seq": 1_000}))
    v = st.stream_view("s")
    stride = st.streams["s"].pred_history.stride  # thinned: exact to within one stride
    assert v["lag_events"] == 8_999 and 8_999 <= v["lag_s"] <= 8_999 + stride


def _labels_later(st: DashboardState, n: int, delay: int) -> int:
    """Stream "d": event seq arrives (iPDP explains it), then the label of seq - delay comes
    (iPFI explains that event); one step per position and second. Returns the next position."""
    position = 0
    for seq in range(n + delay):
        if seq < n:
            st.add("predictions", shaped("predictions", {"schema": "prediction/v2", "stream_id": "d", "seq": seq, "position": position,
                                   "y_true": None, "loss": None}), ts=float(position))
            st.add("explanations", shaped("explanations", {"stream_id": "d", "explainer": "ipdp", "feature": "a", "value": 0.1,
                                    "seq": seq, "position": position}))
            position += 1
        if seq >= delay:
            st.add("predictions", shaped("predictions", {"schema": "label_outcome/v1", "stream_id": "d", "seq": seq - delay,
                                   "position": position, "outcome": "learned", "loss": 0.0, "delay_events": delay,
                                   "waiting": 0}), ts=float(position))
            st.add("explanations", shaped("explanations", {"stream_id": "d", "explainer": "ipfi", "feature": "a", "value": 0.2,
                                    "seq": seq - delay, "position": position}))
            position += 1
    return position


def test_lag_with_labels_later_is_each_explainers_own_steps():
    """With labels later, each explainer's lag is measured against the newest step it explains: iPDP the predict
    steps, iPFI and iSAGE the learn steps (``NEEDS_LABEL``)."""
    st = DashboardState()
    position = _labels_later(st, n=20, delay=5)
    v = st.stream_view("d")
    assert (v["lag_events"], v["lag_s"]) == (0, 0.0)  # not iPDP against the labels' steps
    assert st.streams_summary()[0]["lag_events"] == 0
    # a step not explained yet still counts: iPFI one learn step behind
    st.add("predictions", shaped("predictions", {"schema": "label_outcome/v1", "stream_id": "d", "seq": 20, "position": position,
                           "outcome": "learned", "loss": 0.0, "delay_events": 5, "waiting": 0}), ts=float(position))
    assert st.stream_view("d")["lag_events"] == 1


def test_plot_says_how_far_the_stream_was_explained_in_seqs():
    """``streamxai plot`` says how far the stream was explained in seqs, not positions, with labels later."""
    st = DashboardState()
    _labels_later(st, n=20, delay=5)
    assert plot_summary(st.stream_view("d"), "d.png") == "wrote d.png (0 change events, explained up to seq 19)"


def test_hundred_streams_summarised_and_each_viewable():
    st = DashboardState(max_points=32)
    for i in range(100):
        _feed(st, f"s{i:03d}", 200, explainers=("ipfi",))
    summary = st.streams_summary()
    assert [s["stream_id"] for s in summary] == [f"s{i:03d}" for i in range(100)]
    assert all(s["lag_events"] == 0 for s in summary)  # explained up to seq 199 = last prediction
    assert st.stream_view("s042")["ranking"]["ipfi"][0]["value"] == 199 / 200


def test_the_fields_of_explanations_and_changes_are_shown_where_sent():
    st = DashboardState()
    st.add("explanations", shaped("explanations", {
        "stream_id": "s", "explainer": "ipfi", "feature": "a", "value": 0.4, "stderr": 0.05, "seq": 9,
        "model_loss": {"n": 1, "mean": 0.2, "m2": 0.0}, "n_explained": 10, "n_seen": 10}))
    st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": "ipfi", "feature": "b", "value": 0.1,
                                                   "stderr": None, "model_loss": None, "seq": 9, "n_explained": 10,
                                                   "n_seen": 10}))
    st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": "ipdp", "feature": "a", "value": 0.3,
                                                   "seq": 9, "n_explained": 10, "n_seen": 10,
                                                   "curve": {"grid": [0.0, 1.0], "pd": [0.2, 0.6], "se": [0.01, 0.02]}}))
    st.add("drift-events", shaped("drift-events", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "seq": 9,
                                                   "cut_seq": 5, "level_before": 0.1, "level_after": 0.4}))
    v = st.stream_view("s")
    assert v["series"]["ipfi"]["a"]["se"] == [0.05] and "se" not in v["series"]["ipfi"]["b"]
    assert v["ranking"]["ipfi"][0] == {"feature": "a", "value": 0.4, "stderr": 0.05, "seq": 9}
    assert v["model_loss"]["ipfi"]["y"] == [0.2]
    st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "value": 0.4,
                                                   "seq": 19, "model_loss": {"n": 10, "mean": 0.25, "m2": 0.1}}))
    st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "value": 0.4,
                                                   "seq": 29, "model_loss": {"n": 0, "mean": 0.0, "m2": 0.0}}))  # no events: no point
    # a rolling mean over the events of the blocks: (1 * 0.2 + 10 * 0.25) / 11
    assert st.stream_view("s")["model_loss"]["ipfi"]["y"] == [0.2, round(2.7 / 11, 6)]
    assert v["curves"]["a"]["se"] == [0.01, 0.02]
    assert v["curves_at_change"]["a"]["pd"] == [0.2, 0.6]  # the curve as it was at the change
    st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": "ipdp", "feature": "a", "value": 0.3,
                                                   "seq": 19, "curve": {"grid": [0.0, 1.0], "pd": [0.5, 0.5]}}))
    v = st.stream_view("s")  # read later than the change (another topic): still the curve at seq 9
    assert v["curves"]["a"]["pd"] == [0.5, 0.5] and v["curves_at_change"]["a"]["pd"] == [0.2, 0.6]
    assert (v["changes"][0]["before"], v["changes"][0]["after"], v["changes"][0]["cut_position"]) == (0.1, 0.4, 5)


def test_messages_without_a_stream_or_with_bad_fields_are_ignored_not_fatal():
    st = DashboardState()
    for obj in (None, [], {"seq": 1}, {"stream_id": 5},
                shaped("explanations", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "value": "x", "seq": 1})):
        st.add("explanations", obj)
    st.add("predictions", shaped("predictions", {"stream_id": "s", "seq": "1"}))
    st.add("predictions", shaped("predictions", {"stream_id": "s", "seq": 1, "loss": float("nan")}))
    assert st.streams["s"].loss_window == deque()
    assert st.ignored == 4 and st.stream_view("s")["predictions"] == 1
    assert orjson.dumps(st.stream_view("s"))  # NaN never reaches the JSON


def test_endpoints_and_server_sent_events():
    st = DashboardState()
    _feed(st, "demo", 50, explainers=("ipfi",))
    st.add("drift-events", shaped("drift-events", {"stream_id": "demo", "explainer": "ipfi", "feature": "a", "seq": 30,
                            "level_before": 0.1, "level_after": 0.5}))
    app = make_web_app(st, threading.Lock(), push_every=0.05, info={"topic_prefix": "x."})

    async def run():
        async with TestClient(TestServer(app)) as client:
            page = await client.get("/")
            assert page.status == 200 and "uPlot.iife.min.js" in await page.text()
            lib = await client.get("/static/vendor/uPlot.iife.min.js")
            assert lib.status == 200 and len(await lib.read()) > 10_000
            streams = await (await client.get("/api/streams")).json()
            assert [s["stream_id"] for s in streams["streams"]] == ["demo"]
            assert (await client.get("/api/stream/nope")).status == 404
            view = await (await client.get("/api/stream/demo")).json()
            assert view["changes"][0]["seq"] == 30
            resp = await client.get("/events?stream=demo")
            assert resp.headers["Content-Type"] == "text/event-stream"
            seen = b""
            while b"event: stream\n" not in seen:
                seen += await asyncio.wait_for(resp.content.readline(), 5)
            resp.close()
            assert seen.startswith(b"event: streams\n")

    asyncio.run(run())


def test_the_lag_counts_only_the_explainers_the_streams_settings_run():
    """The lag counts only the explainers the stream's profile runs (given the settings), else every one seen."""
    def feed(st):
        for seq in range(20):
            st.add("predictions", shaped("predictions", {"stream_id": "s", "seq": seq, "loss": 0.0}), ts=100.0 + seq)
            for ex in ("ipfi",) + (("isage",) if seq < 10 else ()):
                st.add("explanations", shaped("explanations", {"stream_id": "s", "explainer": ex, "feature": "a", "value": 0.3,
                                        "seq": seq, "n_explained": seq + 1, "n_seen": seq + 1}))
        return st.stream_view("s")["lag_events"]

    assert feed(DashboardState()) == 10  # isage stopped at seq 9: behind, as a stalled explainer is
    assert feed(DashboardState(explainers_of=lambda sid: ("ipfi",))) == 0
    assert feed(DashboardState(explainers_of=lambda sid: ("ipfi", "isage", "ipdp"))) == 10
    assert feed(DashboardState(explainers_of=lambda sid: ("ipdp",))) == 10  # none of them seen: every one counts
