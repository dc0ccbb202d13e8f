"""The dashboard in a real headless Chromium, fed by a real worker through the real broker; skipped,
saying why, without ``chromium``, ``chromium-driver`` and ``selenium`` (``.ci/run`` installs them)."""

from __future__ import annotations

import itertools
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from helpers.levels import LEVELS
from helpers.outputs import shaped
from helpers.pipeline_runs import make_settings
from helpers.streams import threshold_events
from streamxai.kafka.config import ensure_topics
from streamxai.kafka.io import produce_events
from streamxai.local.dashboard import spawn_dashboard, wait_for_dashboard
from streamxai.local.demo_stream import labels_later
from streamxai.local.ports import free_port
from streamxai.worker import spawn_worker, stop_worker

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def _missing(why: str):
    if os.environ.get("STREAMXAI_REQUIRE_BROWSER"):  # set by .ci/run: CI must run this test
        pytest.fail(why)
    pytest.skip(why)


def _browser():
    if not (CHROMIUM and DRIVER):
        _missing("the dashboard browser test needs chromium and chromedriver (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("the dashboard browser test needs selenium (pip install selenium)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1500", "--disable-extensions", "--no-first-run"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(DRIVER), options=opts)


def _wait(driver, script: str, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.3)


def _wait_for_worker(s, proc, timeout: float = 60.0) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{s.web_port}/metrics", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        assert proc.poll() is None, "the worker exited"
        assert time.monotonic() < deadline, "the worker's metrics page did not answer"
        time.sleep(0.3)


LAST_POINT = """
const u = window.dash && window.dash.charts['imp-ipfi'];
if (!u || !u.data[0].length) return null;
const n = u.data[0].length - 1;
return [u.data[0][n], u.data.slice(1).map(col => col[n])];
"""


def test_dashboard_shows_streams_moving_lines_and_change_markers(bootstrap, tmp_path):
    driver = _browser()
    # The stream of the change-detection integration test (threshold label a > 0.5, then
    # b > 0.5 from 800): in-process the same seeds give a change ~500 events after the drift.
    n, drift_at = 2400, 800
    s = make_settings(bootstrap, str(tmp_path / "state"), features=["a", "b", "c"], explainers=["ipfi", "ipdp"],
                      model="river.tree.HoeffdingAdaptiveTreeClassifier", model_params={"grace_period": 20},
                      emit_every=10, change_warmup=30, alpha=0.01, explain_groups=1)
    ensure_topics(s)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    worker = spawn_worker(s, log_file=str(tmp_path / "worker.log"), loglevel="warning")
    board = spawn_dashboard(s, port, log_file=str(tmp_path / "dashboard.log"))
    drifting = list(threshold_events("drifting", n, drift_at=drift_at, seed=11))
    control = list(threshold_events("control", n, seed=12))
    late = labels_later(threshold_events("late", n, seed=13), 100)  # its labels come 100 events late
    events = [e for group in itertools.zip_longest(drifting, control, late[0::2], late[1::2]) for e in group if e]
    # paced, so the page is watched while the stream runs (~14 s); the last tenth is held back until the page
    # has drawn a point, so its lines have somewhere to move to
    cut = len(events) * 9 // 10
    producer = threading.Thread(target=produce_events, args=(s, events[:cut]), kwargs={"rate": 600.0}, daemon=True)
    try:
        wait_for_dashboard(url, board)
        _wait_for_worker(s, worker)  # so the ~12 s of paced events are explained while the page watches
        producer.start()
        driver.get(url)
        listed = _wait(driver, "const ids = [...document.querySelectorAll('li.stream-item')].map(li => li.dataset.stream);"
                               "return ids.length === 3 && ids", 60, "the stream list to show the three streams")
        assert sorted(listed) == ["control", "drifting", "late"]
        # the stream whose labels come later: how many events wait, and how late its labels come
        driver.execute_script("document.querySelector('li.stream-item[data-stream=\"late\"]').click()")
        delay = _wait(driver, "const d = document.querySelector('#label-delay'); return d && d.textContent !== '–' "
                              "&& [d.textContent, document.querySelector('#labels-waiting').textContent]", 60,
                      "the median label delay of 'late'")
        # sent 100 events late; the page shows the delay the intake recorded (it reads the features and
        # labels topics in its own order, so under load a label may come sooner or later than sent)
        assert float(delay[0]) >= 0 and int(delay[1]) >= 0, delay
        assert "waiting" in driver.execute_script(
            "return document.querySelector('li.stream-item[data-stream=\"late\"] .sub').textContent")
        time.sleep(1.0)
        shot = tmp_path / "dashboard-late.png"
        driver.save_screenshot(str(shot))
        keep = os.environ.get("STREAMXAI_DASHBOARD_SCREENSHOT")
        if keep:
            Path(keep).with_name(f"{Path(keep).stem}-late.png").write_bytes(shot.read_bytes())
        driver.execute_script("document.querySelector('li.stream-item[data-stream=\"drifting\"]').click()")
        first = _wait(driver, LAST_POINT, 60, "the iPFI chart of 'drifting' to have points")
        producer.join(timeout=60)
        produce_events(s, events[cut:], rate=600.0)
        second = _wait(driver, LAST_POINT.replace("return [", f"if (u.data[0][n] <= {first[0]}) return null; return ["),
                       30, f"the iPFI lines to move past seq {first[0]}")
        assert second[0] > first[0] and second[1] != first[1], (first, second)
        marker = _wait(driver, "const m = document.querySelector('#importance .change-marker'); return m && m.title",
                       60, "a change marker on the importance chart")
        assert "changed at seq" in marker
        seq = driver.execute_script("return +document.querySelector('#importance .change-marker').dataset.seq")
        assert seq >= drift_at, marker  # nothing changed before the induced drift
        rows = driver.execute_script("return document.querySelectorAll('#changes tr.change-event').length")
        assert rows >= 1
        _wait(driver, "return document.querySelectorAll('#pdp .uplot').length === 3", 30, "three iPDP curves")
        time.sleep(1.0)  # let the last push render before the picture
        shot = tmp_path / "dashboard.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 20_000
        keep = os.environ.get("STREAMXAI_DASHBOARD_SCREENSHOT")
        if keep:
            Path(keep).write_bytes(shot.read_bytes())
    finally:
        driver.quit()
        producer.join(timeout=30)
        stop_worker(board)
        stop_worker(worker)
    log = (tmp_path / "dashboard.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


class _Served:
    """``make_web_app`` over a given state, on a free port, in a background thread."""

    def __init__(self, state):
        import asyncio

        from aiohttp import web
        from streamxai.local.dashboard import make_web_app

        self.port = free_port("127.0.0.1")
        self.loop = asyncio.new_event_loop()
        app = make_web_app(state, threading.Lock(), push_every=0.5)
        self.runner = web.AppRunner(app)
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self.runner.setup())
            self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)

    def close(self):
        import asyncio

        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def test_hundred_streams_listed_filtered_and_each_one_opens(tmp_path):
    from streamxai.local.dashboard import DashboardState

    driver = _browser()
    state = DashboardState()
    features = [f"f{i}" for i in range(9)]
    for k in range(100):
        sid = f"stream-{k:03d}"
        for seq in range(0, 5000, 10):  # more points than kept: the history is thinned
            state.add("predictions", shaped("predictions", {"stream_id": sid, "seq": seq, "loss": (seq % 7) / 7}), ts=seq / 100)
            for ex in ("ipfi", "isage", "ipdp"):
                for i, f in enumerate(features):
                    msg = {"stream_id": sid, "explainer": ex, "feature": f, "seq": seq,
                           "value": (i + 1) / 10 + k / 1000, "n_explained": seq, "n_seen": seq}
                    if k == 42:  # explanations with standard errors: bands on the chart, ± in the ranking
                        msg["stderr"] = 0.02
                    state.add("explanations", shaped("explanations", msg))
        state.add("drift-events", shaped("drift-events", {"stream_id": sid, "explainer": "ipfi", "feature": "f0", "seq": 2500,
                                   "level_before": 0.1, "level_after": 0.2}))
    # the change stage's messages: a change with its cut, intervals and losses, an episode
    state.add("drift-events", shaped("drift-events", {"stream_id": "stream-042", "explainer": "ipfi",
                               "feature": "f3", "seq": 3900, "cut_seq": 3600, "level_before": 0.4, "level_after": 0.1,
                               "ci_before": [0.38, 0.42], "ci_after": [0.08, 0.12], "loss_before": 0.2,
                               "loss_after": 0.3}))
    state.add("change-episodes", shaped("change-episodes", {"stream_id": "stream-042", "first_seq": 3900,
                                  "last_seq": 4100, "closed_seq": 4600, "cut_seq": 3600, "loss_before": 0.2,
                                  "loss_after": 0.3, "changes": [{"explainer": "ipfi", "feature": "f3", "seq": 3900,
                                                                  "level_before": 0.4, "level_after": 0.1}]}))
    served = _Served(state)
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream=stream-099")
        _wait(driver, "return document.querySelectorAll('li.stream-item').length === 100", 30, "100 streams listed")
        _wait(driver, "return document.querySelector('#stream-title').textContent === 'stream stream-099'", 30,
              "the stream named in the URL to open")
        _wait(driver, "return document.querySelectorAll('#importance .uplot').length === 3", 30, "three charts")
        kept = driver.execute_script("return window.dash.charts['imp-ipfi'].data[0].length")
        assert kept <= 401  # the page gets the thinned history, not 500 points per series
        driver.find_element("id", "filter").send_keys("stream-04")
        shown = driver.execute_script("return [...document.querySelectorAll('li.stream-item')].map(li => li.dataset.stream)")
        assert shown == [f"stream-04{i}" for i in range(10)]
        driver.execute_script("document.querySelector('li.stream-item[data-stream=\"stream-042\"]').click()")
        _wait(driver, "return document.querySelector('#stream-title').textContent === 'stream stream-042'", 30,
              "another stream to open on a click")
        _wait(driver, "return document.querySelectorAll('#importance .change-marker').length >= 2", 30, "its markers")
        _wait(driver, "return document.querySelectorAll('#importance .episode-span').length === 3", 30,
              "its change episode shaded on the three charts")
        row = driver.execute_script("return document.querySelector('#episodes tr.change-episode').textContent")
        assert "3600" in row and "ipfi/f3 0.400→0.100" in row, row
        change = driver.execute_script("return document.querySelector('#changes tr.change-event').textContent")
        assert "3600" in change and "[0.380, 0.420]" in change and "0.200 → 0.300" in change, change
        top = driver.execute_script("return document.querySelector('.rank-group[data-explainer=ipfi] .rank-row').dataset.feature")
        assert top == "f8"  # the largest value ranks first
        value = driver.execute_script("return document.querySelector('.rank-group[data-explainer=ipfi] .rank-value').textContent")
        assert value == "0.942 ± 0.039", value  # the 95% interval: 1.96 x the published stderr 0.02
        bands = driver.execute_script("return window.dash.charts['imp-ipfi'].bands.length")
        assert bands == 9  # one ± band per feature
        driver.save_screenshot(str(tmp_path / "hundred.png"))
    finally:
        driver.quit()
        served.close()


def _episode(seq: int, kind: str, alert: bool, status: str = "closed", **over) -> dict:
    return shaped("change-episodes", {
        "stream_id": "why", "first_seq": seq, "last_seq": seq + 100, "closed_seq": None if status == "open" else seq + 600,
        "cut_seq": seq - 200, "loss_before": 0.2, "loss_after": 0.3, "status": status, "kind": kind, "alert": alert,
        "changes": [{"explainer": "ipfi", "feature": "f1", "seq": seq, "level_before": 0.4, "level_after": 0.1}], **over})


def test_episodes_show_their_kind_and_alerts_stand_out(tmp_path):
    """Episodes show their kind, alerts stand out in red, an open episode says so until closed, and a data fault
    says which inputs to check, how, and how much the model relied on them."""
    driver = _browser()
    from streamxai.local.dashboard import DashboardState

    state = DashboardState()
    for seq in range(0, 8000, 20):
        state.add("predictions", shaped("predictions", {"stream_id": "why", "seq": seq, "loss": 0.2 + 0.1 * (seq >= 5000)}), ts=seq / 100)
        for f in ("f1", "f2"):
            state.add("explanations", shaped("explanations", {"stream_id": "why", "explainer": "ipfi", "feature": f, "seq": seq,
                                       "value": 0.4 if (f == "f1") == (seq < 5000) else 0.1, "n_explained": seq,
                                       "n_seen": seq}))
    state.add("change-episodes", _episode(1500, "reliance_shift", False))
    state.add("change-episodes", _episode(3000, "learning", False, loss_after=0.15))
    state.add("change-episodes", _episode(5200, "degradation", True, status="open"))
    state.add("change-episodes", _episode(5200, "degradation", True))  # the same episode, closed
    state.add("change-episodes", _episode(7000, "reliance_shift", True, status="open", loss_after=0.3))
    # a data fault at the same first position as another episode: an episode of its own
    state.add("change-episodes", _episode(7000, "data_fault", True, status="open", changes=[
        {"explainer": "inputs", "feature": "f2", "seq": 7000, "level_before": 0.4, "level_after": 400.0}], faults=[
        {"feature": "f2", "what": "scaled", "detail": "scaled about x1e+03 since 6960", "like": None,
         "start_position": 6960, "median_before": 0.4, "iqr_before": 0.2, "median_after": 400.0, "iqr_after": 200.0,
         "reliance": 0.8},
        {"feature": "label", "what": "stopped", "detail": "no label since 6900 (100 events)", "like": None,
         "start_position": 6900, "median_before": None, "iqr_before": None, "median_after": None, "iqr_after": None,
         "reliance": None}]))
    served = _Served(state)
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream=why")
        _wait(driver, "return document.querySelectorAll('#episodes tr.change-episode').length === 5", 30,
              "five episodes (the closed message replaces the open one)")
        rows = driver.execute_script(
            "return [...document.querySelectorAll('#episodes tr.change-episode')]"
            ".map(r => [r.querySelector('.episode-kind').textContent, r.classList.contains('alert')])")
        assert rows == [["⚠ data fault (open)", True], ["⚠ reliance shift (open)", True], ["⚠ degradation", True],
                        ["learning", False], ["reliance shift", False]], rows
        faults = driver.execute_script("return [...document.querySelectorAll('#episodes .fault')].map(f => f.textContent)")
        assert faults == ["check the inputs of f2: scaled about x1e+03 since 6960 (relied on at 80% of the top feature)",
                          "check the labels: no label since 6900 (100 events)"], faults
        _wait(driver, "return document.querySelectorAll('#importance .episode-span.alert').length >= 2", 30,
              "alert episodes shaded in red on the charts")
        assert driver.execute_script("return document.querySelectorAll('#importance .episode-span:not(.alert)').length") >= 2
        badge = driver.execute_script(
            "return getComputedStyle(document.querySelector('#episodes .badge.alert')).backgroundColor")
        assert badge == "rgb(198, 40, 40)", badge
        driver.execute_script("document.querySelector('#episodes').scrollIntoView()")
        driver.save_screenshot(str(tmp_path / "episode-kinds.png"))
        if os.environ.get("STREAMXAI_SCREENSHOTS"):  # to look at it
            shutil.copy(tmp_path / "episode-kinds.png", os.environ["STREAMXAI_SCREENSHOTS"])
    finally:
        driver.quit()
        served.close()


RANKED = """
const groups = [...document.querySelectorAll('#ranking .rank-group')];
if (!groups.length || document.querySelector('#stream-title').textContent !== 'stream ' + arguments[0]) return null;
return Object.fromEntries(groups.map(g => [g.dataset.explainer,
  [...g.querySelectorAll('.rank-row')].map(r => r.dataset.feature).sort()]));
"""


def test_dashboard_shows_streams_of_two_profiles_each_with_its_own_features(two_profiles_run, tmp_path):
    # one worker served an agrawal classifier (iPFI, iPDP) and a 5-feature regression (iPFI, iSAGE)
    from helpers.streams import LINEAR_FEATURES
    from streamxai.settings import AGRAWAL_FEATURES

    driver = _browser()
    s = two_profiles_run.settings
    port = free_port()
    board = spawn_dashboard(s, port, log_file=str(tmp_path / "dashboard.log"))
    want = {"agr-1": {"ipfi": sorted(AGRAWAL_FEATURES), "ipdp": sorted(AGRAWAL_FEATURES)},
            "reg-1": {"ipfi": sorted(LINEAR_FEATURES), "isage": sorted(LINEAR_FEATURES)}}
    try:
        wait_for_dashboard(f"http://127.0.0.1:{port}/", board)
        driver.get(f"http://127.0.0.1:{port}/")
        listed = _wait(driver, "const ids = [...document.querySelectorAll('li.stream-item')].map(li => li.dataset.stream);"
                               "return ids.length === 2 && ids", 60, "the stream list to show both streams")
        assert sorted(listed) == ["agr-1", "reg-1"]
        for sid in ("agr-1", "reg-1"):
            driver.execute_script(f"document.querySelector('li.stream-item[data-stream=\"{sid}\"]').click()")
            ranked = _wait(driver, RANKED.replace("arguments[0]", repr(sid)), 30, f"the ranking of {sid}")
            assert ranked == want[sid], (sid, ranked)
            charts = driver.execute_script("return Object.keys(window.dash.charts).filter(k => k.startsWith('imp-'))")
            assert sorted(charts) == sorted(f"imp-{ex}" for ex in want[sid]), (sid, charts)
            # a stream without iPDP shows no (empty) "Partial dependence" section
            pdp = "const b = document.querySelector('#pdp-box'); return b && [b.hidden, document.querySelectorAll('#pdp .uplot').length]"
            assert driver.execute_script(pdp) == ([False, 9] if "ipdp" in want[sid] else [True, 0]), sid
            marker = _wait(driver, "const m = document.querySelector('#importance .change-marker'); return m && m.title",
                           30, f"a change marker of {sid}")
            assert "changed at seq" in marker
            time.sleep(0.5)  # let the charts draw before the picture
            shot = tmp_path / f"dashboard-{sid}.png"
            driver.save_screenshot(str(shot))
            assert shot.stat().st_size > 20_000
            keep = os.environ.get("STREAMXAI_DASHBOARD_SCREENSHOT")
            if keep:
                Path(keep).with_name(f"{Path(keep).stem}-{sid}.png").write_bytes(shot.read_bytes())
    finally:
        driver.quit()
        stop_worker(board)
    log = (tmp_path / "dashboard.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


LOSS_SERIES = """
const u = window.dash && window.dash.charts['loss'];
if (!u) return null;
return u.series.slice(1).map((s, i) => [s.label, s.stroke && s.stroke(u, i + 1), u.data[i + 1].filter(y => y !== null && Number.isFinite(y)).length]);
"""


def test_the_loss_chart_draws_the_model_loss_once_where_it_can_be_seen(tmp_path):
    """The model-loss chart's legend lists the model's loss once per stream, not once per explainer."""
    import io

    import numpy as np
    from helpers.loss_stream import feed_loss_stream
    from matplotlib.colors import to_rgb
    from PIL import Image
    from streamxai.local.dashboard import DashboardState

    driver = _browser()
    state = DashboardState()
    feed_loss_stream(state, "lossy")
    served = _Served(state)
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream=lossy")
        series = _wait(driver, LOSS_SERIES, 30, "the loss chart")
        labels = [label for label, _, _ in series]
        assert len(labels) == len(set(labels)) == 2, labels  # the rolling loss and the model's, once each
        assert all(n >= 2 for _, _, n in series), series
        time.sleep(0.5)  # let the chart draw before the picture
        box = driver.find_element("id", "box-loss")
        shot = tmp_path / "loss.png"
        shot.write_bytes(box.screenshot_as_png)
        img = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")).astype(float) / 255
        canvas = driver.find_element("css selector", "#box-loss canvas")
        h = int(canvas.size["height"] * img.shape[1] / box.size["width"])  # the plot, not the legend under it
        for label, stroke, _ in series:
            close = np.abs(img[:h] - np.array(to_rgb(stroke))).max(axis=-1) < 0.1
            # a reader sees at least ~100 px of each line (the chart is ~600 px wide; ~0 when hidden)
            assert int(close.sum()) >= 100, f"{label!r} ({stroke}) cannot be seen: {int(close.sum())} px"
        if keep := os.environ.get("STREAMXAI_SCREENSHOT_LOSS"):
            Path(keep).write_bytes(shot.read_bytes())
    finally:
        driver.quit()
        served.close()


MARKER_LABELS = """
const out = {};
for (const box of document.querySelectorAll('#importance .chart-box')) {
  const over = box.querySelector('.u-over');
  if (!over) continue;
  const o = over.getBoundingClientRect();
  out[box.id] = {over: [o.left, o.top, o.right, o.bottom],
    lines: box.querySelectorAll('.change-marker').length,
    labels: [...box.querySelectorAll('.change-label, .change-marker span')].filter(l => l.offsetParent !== null).map(l => {
      const r = l.getBoundingClientRect();
      return [l.textContent, r.left, r.top, r.right, r.bottom];
    })};
}
return Object.keys(out).length === 3 && Object.values(out).every(c => c.lines > 0) && out;
"""


def test_change_labels_on_the_charts_never_overlap_and_name_each_episode(tmp_path):
    """The demo's 44 change events (5 episodes), on the boxes the browser lays out: no two labels of a chart
    overlap, each lies inside its chart, every change keeps its line, every episode is named by its kind
    on the charts it moved, also in a narrow window."""
    from helpers.crowded_changes import EPISODES, feed_crowded_changes
    from streamxai.local.dashboard import DashboardState

    driver = _browser()
    state = DashboardState()
    n = feed_crowded_changes(state)
    served = _Served(state)
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream=crowd")
        _wait(driver, MARKER_LABELS, 30, "the importance charts with their change markers")
        # widths from a narrow window to a wide one: labels meet at different places in each
        for width in (1400, *range(860, 1400, 60), 900):
            driver.set_window_size(width, 1500)
            time.sleep(0.4)  # the charts follow the window (ResizeObserver), then redraw their markers
            charts = _wait(driver, MARKER_LABELS, 30, "the importance charts with their change markers")
            if width in (1400, 900):
                driver.save_screenshot(str(tmp_path / f"marks-{width}.png"))
                if keep := os.environ.get("STREAMXAI_SCREENSHOT_MARKS"):
                    Path(keep).with_name(f"{Path(keep).stem}-{width}.png").write_bytes((tmp_path / f"marks-{width}.png").read_bytes())
            assert sum(c["lines"] for c in charts.values()) == n, charts
            for chart, c in charts.items():
                labels = c["labels"]
                clash = [(a[0], b[0]) for i, a in enumerate(labels) for b in labels[i + 1:]
                         if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]]
                assert not clash, (width, chart, clash)
                left, top, right, bottom = c["over"]
                assert all(left - 1 <= lb[1] and lb[3] <= right + 1 and top - 1 <= lb[2] for lb in labels), (width, chart)
                ex = chart.removeprefix("box-imp-")
                said = " | ".join(lb[0] for lb in labels)
                for _, kind, alert, changes in EPISODES:
                    if any(e == ex for e, _, _ in changes):
                        want = ("⚠ " if alert else "") + kind.replace("_", " ")
                        assert want in said or "episodes" in said, (width, ex, want, said)
    finally:
        driver.quit()
        served.close()


def test_markup_in_a_crafted_change_message_is_shown_as_text_never_run(tmp_path):
    # a change-episodes message whose first_seq is a string of HTML (anyone who may write to the
    # output topics) must not run in the operator's page: its seq fields are numbers or nothing
    from streamxai.local.dashboard import DashboardState

    driver = _browser()
    state = DashboardState()
    payload = "<img class=pwn src=x onerror=\"document.title='PWNED'\">"
    state.add("predictions", shaped("predictions", {"stream_id": "x", "seq": 0, "loss": 0.0}))
    state.add("drift-events", shaped("drift-events", {"stream_id": "x", "explainer": "ipfi", "feature": "a",
                               "seq": 30, "cut_seq": payload, "level_before": 0.1,
                               "level_after": 0.2, "ci_before": [payload, payload], "ci_after": [payload, 1.0],
                               "loss_before": payload, "loss_after": payload}))
    state.add("change-episodes", shaped("change-episodes", {"stream_id": "x", "status": "closed",
                                  "kind": "degradation", "alert": True, "first_seq": payload, "last_seq": payload,
                                  "closed_seq": payload, "cut_seq": payload, "loss_before": payload,
                                  "changes": [{"explainer": payload, "feature": payload, "seq": payload,
                                               "cut_seq": payload, "level_before": 0.1, "level_after": 0.2}]}))
    served = _Served(state)
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream=x")
        _wait(driver, "return document.querySelectorAll('#episodes tr.change-episode').length === 1", 30,
              "the crafted episode listed")
        _wait(driver, "return document.querySelectorAll('#changes tr.change-event').length === 1", 30,
              "the crafted change listed")
        assert driver.execute_script("return document.querySelectorAll('.pwn').length") == 0
        assert driver.title != "PWNED"
        row = driver.execute_script("return document.querySelector('#episodes tr.change-episode').textContent")
        assert "<img" in row  # the explainer and feature names: text, as they came
        driver.save_screenshot(str(tmp_path / "crafted.png"))
    finally:
        driver.quit()
        served.close()


LONG_VALUES = """
const sid = arguments[0], feature = arguments[1];
const titled = (sel) => [...document.querySelectorAll(sel)].map((e) => e.title);
return {
  page: [document.documentElement.scrollWidth, window.innerWidth],
  aside: [document.querySelector('aside').scrollWidth, document.querySelector('aside').clientWidth],
  tables: [...document.querySelectorAll('#changes, #episodes')].map((t) => [t.id, t.getBoundingClientRect().right]),
  main: document.querySelector('main').getBoundingClientRect().right,
  labels: [...document.querySelectorAll('#importance .change-label')].map((e) => [e.title, e.getBoundingClientRect().width]),
  item: titled('li.stream-item .name')[0], heading: document.querySelector('#stream-title').title,
  names: titled('#ranking .rank-row .name'), changes: titled('#changes td .name'), episodes: titled('#episodes td .name'),
};
"""


def test_very_long_stream_ids_and_feature_names_are_cut_with_the_whole_value_in_a_tooltip(tmp_path):
    # a long stream id (128 characters are allowed) or feature name (a stream's settings name
    # them) must not widen the page past the window, or every column, the charts and the tables
    # run off screen: it is cut with an ellipsis, the whole value in a tooltip
    from streamxai.local.dashboard import DashboardState

    driver = _browser()
    driver.set_window_size(1200, 1100)
    state = DashboardState()
    sid = "s" + "x" * 123 + "-end"
    feature = "feature_" + "y" * 180 + "_end"
    assert len(sid) == 128
    for seq in range(0, 400, 10):
        state.add("predictions", shaped("predictions", {"stream_id": sid, "seq": seq, "loss": 0.2}), ts=seq / 100)
        for f in (feature, "b"):
            state.add("explanations", shaped("explanations", {"stream_id": sid, "explainer": "ipfi", "feature": f, "seq": seq,
                                       "value": 0.4 if f == "b" else 0.1 + 0.2 * (seq >= 200), "n_explained": seq,
                                       "n_seen": seq}))
    state.add("drift-events", shaped("drift-events", {"stream_id": sid, "explainer": "ipfi", "feature": feature,
                               "seq": 250, "cut_seq": 200, "level_before": 0.1, "level_after": 0.3}))
    state.add("change-episodes", shaped("change-episodes", {"stream_id": sid, "status": "closed",
                                  "kind": "reliance_shift", "alert": True, "first_seq": 250, "last_seq": 260,
                                  "closed_seq": 390, "cut_seq": 200, "loss_before": 0.2, "loss_after": 0.2,
                                  "changes": [{"explainer": "ipfi", "feature": feature, "seq": 250,
                                               "level_before": 0.1, "level_after": 0.3}]}))
    served = _Served(state)
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream={sid}")
        _wait(driver, "return document.querySelectorAll('#episodes tr.change-episode').length === 1 && "
                      "document.querySelectorAll('#ranking .rank-row').length === 2", 30, "the stream's tables")
        time.sleep(0.5)  # let the charts draw before the picture
        driver.execute_script("document.querySelector('#changes').scrollIntoView()")
        driver.save_screenshot(str(tmp_path / "long-values.png"))
        if keep := os.environ.get("STREAMXAI_SCREENSHOT_LONG"):
            Path(keep).write_bytes((tmp_path / "long-values.png").read_bytes())
        got = driver.execute_script(LONG_VALUES, sid, feature)
        assert got["page"][0] <= got["page"][1], got  # nothing wider than the window
        assert got["aside"][0] <= got["aside"][1], got  # the stream list scrolls down only
        assert all(right <= got["main"] + 1 for _, right in got["tables"]), got
        # a change label on a chart: cut too (24em of 10px type), the whole change in its tooltip
        assert got["labels"] and all(feature in title and width <= 250 for title, width in got["labels"]), got
        assert got["item"] == sid and sid in got["heading"], got
        assert feature in got["names"] and got["changes"] == ["ipfi", feature] and got["episodes"] == [f"ipfi/{feature}"], got
    finally:
        driver.quit()
        served.close()


AXIS_TEXTS = """
const out = {};
for (const [id, u] of Object.entries(window.dash.charts)) {
  if (!u.axes.every(a => a._values)) { out[id] = {undrawn: true}; continue; }
  const ctx = document.createElement('canvas').getContext('2d');
  out[id] = {axes: u.axes.map(a => { ctx.font = a.font ? a.font[0] : '12px system-ui';
    return {size: a._size, side: a.side, texts: a._values.map(String), widths: a._values.map(t => ctx.measureText(String(t)).width)}; }),
    x: Array.from(u.data[0]), y: Array.from(u.data[1])};
}
return ['imp-ipfi', 'imp-ipdp', 'loss', 'pdp-x0'].every(id => out[id] && !out[id].undrawn) && 'pdp-city' in out && out;
"""


def test_large_values_and_a_categorical_curve_are_drawn_readably(tmp_path):
    """A regression profile (targets ~1e6, losses ~1e12, a categorical feature): every tick label fits its axis
    and tells its ticks apart, and the categorical PD chart names each category at its point."""
    from streamxai.local.dashboard import DashboardState

    driver = _browser()
    state = DashboardState()
    for seq in range(9, 600, 10):
        ml = {"n": 10, "mean": 1e12 + 2e9 * seq, "m2": 1e22}
        for ex in ("ipfi", "ipdp"):
            for f, v in (("x0", 3e12 + 1e9 * seq), ("city", -1.7e11)):
                curve = None
                if ex == "ipdp":
                    grid = ["a", "b", "c"] if f == "city" else [0.0, 2.5e5, 5e5, 7.5e5, 1e6]
                    curve = {"grid": grid, "pd": [8e5 - 5e4 * i for i in range(len(grid))], "se": [3e4] * len(grid)}
                state.add("explanations", shaped("explanations", {"stream_id": "big", "explainer": ex, "feature": f,
                                           "value": v, "stderr": 1e10, "seq": seq, "n_explained": seq + 1,
                                           "n_seen": seq + 1, "model_loss": ml, **({"curve": curve} if curve else {})}))
        state.add("predictions", shaped("predictions", {"stream_id": "big", "seq": seq, "loss": 1e12 + 2e9 * seq}), ts=1000.0 + seq)
    # a change's label and rows print such levels compact, as the plot's labels do
    # (markers.level_text), not with every digit ("6342689766.11→730973117446.70")
    state.add("drift-events", shaped("drift-events", {"stream_id": "big", "explainer": "ipfi", "feature": "x0",
                               "seq": 199, "cut_seq": 150, "level_before": 6342689766.11,
                               "level_after": 730973117446.70}))
    state.add("change-episodes", shaped("change-episodes", {"stream_id": "big", "first_seq": 399,
                                  "last_seq": 399, "closed_seq": 599, "cut_seq": 350, "status": "closed",
                                  "kind": "learning", "alert": False, "loss_before": 6342689766.11,
                                  "loss_after": 730973117446.70,
                                  "changes": [{"explainer": "ipfi", "feature": "city", "seq": 399,
                                               "level_before": 2.5e12, "level_after": -1125000.0}]}))
    served = _Served(state)
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream=big")
        charts = _wait(driver, AXIS_TEXTS, 30, "the charts drawn")
        time.sleep(0.5)
        driver.save_screenshot(str(tmp_path / "large.png"))
        if keep := os.environ.get("STREAMXAI_SCREENSHOT_LARGE"):
            Path(keep).write_bytes((tmp_path / "large.png").read_bytes())
        for cid, c in charts.items():
            for axis in c.get("axes", []):
                texts = [t for t in axis["texts"] if t]
                assert len(texts) == len(set(texts)), f"{cid}: ticks {texts} are not told apart"
                if axis["side"] in (1, 3):  # a y axis: its labels fit its width (less the tick)
                    assert max(axis["widths"], default=0) <= axis["size"] - 8, (cid, axis)
        city = charts["pdp-city"]
        assert not city.get("undrawn"), "the categorical feature's PD chart is not drawn"
        assert city["x"] == [0, 1, 2] and all(isinstance(y, (int, float)) for y in city["y"]), city
        assert city["axes"][0]["texts"] == ["a", "b", "c"], city["axes"][0]
        texts = driver.execute_script(
            "return [[...document.querySelectorAll('#importance .change-label')].map(e => e.textContent), "
            "document.querySelector('#changes tr.change-event').textContent, "
            "document.querySelector('#episodes tr.change-episode').textContent]")
        assert "x0 6.34B→731B" in texts[0], texts
        assert "6.34B" in texts[1] and "731B" in texts[1] and "6342689766" not in texts[1], texts
        assert "ipfi/city 2.5T→-1.13M" in texts[2] and "6.34B → 731B" in texts[2], texts
        # the page's levelText and the plot's level_text give the same text
        from streamxai.local.markers import level_text
        values = [v for v, _ in LEVELS]
        assert driver.execute_script("return arguments[0].map(v => levelText(v))", values) == [
            level_text(v) for v in values] == [t for _, t in LEVELS]
    finally:
        driver.quit()
        served.close()


def _many_changes(state, n: int) -> None:
    """A stream ``many`` of one iPFI series with ``n`` change events, one every 20 positions."""
    for seq in range(0, 20 * n + 20, 20):
        state.add("predictions", shaped("predictions", {"stream_id": "many", "seq": seq, "loss": 0.2}), ts=seq / 100)
        state.add("explanations", shaped("explanations", {"stream_id": "many", "explainer": "ipfi", "feature": "f1", "seq": seq,
                                   "value": 0.3 + 0.1 * (seq // 2000 % 2), "n_explained": seq, "n_seen": seq}))
    for i in range(n):
        state.add("drift-events", shaped("drift-events", {"stream_id": "many", "explainer": "ipfi", "feature": "f1", "seq": 20 * i + 10,
                                   "level_before": 0.3, "level_after": 0.4}))


MARKERS = "return document.querySelectorAll('#importance .change-marker').length"


@pytest.mark.parametrize("n", [510, 1500])
def test_every_change_event_kept_is_drawn_and_the_page_says_how_many_older_ones_are_not(n, tmp_path):
    """510 change events: all drawn, no note. 1,500: the newest 1,000 (what the dashboard keeps of
    a stream) drawn, the badge counts all 1,500, and a note says 500 older ones are not drawn."""
    driver = _browser()
    from streamxai.local.dashboard import DashboardState

    state = DashboardState()
    _many_changes(state, n)
    kept = min(n, 1000)
    served = _Served(state)
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream=many")
        _wait(driver, MARKERS + f" === {kept}", 60, f"{kept} change markers")
        assert driver.execute_script("return document.querySelector('#change-count').textContent") == str(n)
        note = driver.execute_script("const e = document.querySelector('#changes-note'); return [e.hidden, e.textContent]")
        if n > kept:
            assert note[0] is False and note[1].startswith(f"{n - kept} older change events not drawn"), note
        else:
            assert note[0] is True, note
        assert "mean increment" in driver.execute_script("return document.querySelector('#changes thead').textContent")
        driver.save_screenshot(str(tmp_path / f"changes-{n}.png"))
        if os.environ.get("STREAMXAI_SCREENSHOTS"):  # to look at it
            shutil.copy(tmp_path / f"changes-{n}.png", Path(os.environ["STREAMXAI_SCREENSHOTS"]) / f"changes-{n}.png")
    finally:
        driver.quit()
        served.close()


# ---- why one prediction: the local explanation's waterfall ------------------------------------

WATERFALL = """
const chart = document.querySelector('#local-chart');
if (chart.clientWidth === 0) return null;  // the page not laid out yet
const bars = [...chart.querySelectorAll('rect.wf-bar')];
if (!bars.length) return null;
const marks = [...chart.querySelectorAll('line.wf-mark')].map((l) => +l.getAttribute('x1'));
return {
  head: document.querySelector('#local-head').textContent,
  prediction: document.querySelector('#local-prediction').textContent,
  base: document.querySelector('#local-base').textContent,
  rows: bars.map((b) => ({feature: b.closest('g.wf-row').dataset.feature, start: +b.dataset.start,
    end: +b.dataset.end, value: +b.dataset.value, x: +b.getAttribute('x'), w: +b.getAttribute('width'),
    label: b.closest('g.wf-row').querySelector('text').textContent})),
  marks, pwn: document.querySelectorAll('.pwn').length,
  svg: +chart.querySelector('svg').getAttribute('width'), box: chart.clientWidth,
};
"""


def _check_waterfall(got, msg):
    """The page's bars are ``msg``'s numbers (the rest as one bar), chained from the base value to the prediction,
    in numbers and in pixels."""
    from streamxai.local.markers import level_text

    rows = got["rows"]
    assert got["box"] - 12 <= got["svg"] <= got["box"], got  # drawn across its box, as laid out
    listed = {r["feature"]: r["value"] for r in rows if not r["feature"].endswith(("other feature", "other features"))}
    assert listed == msg["values"], (listed, msg["values"])  # the message's numbers, to the last digit
    if msg.get("rest"):
        assert rows[-1]["value"] == msg["rest"] and rows[-1]["feature"].endswith("other features" if
                                                                               msg["n_features"] - len(msg["values"]) > 1
                                                                               else "other feature")
    assert rows[-1]["start"] == msg["base"]
    for upper, lower in zip(rows, rows[1:], strict=False):
        assert upper["start"] == lower["end"]
        # drawn so: a bar begins, in pixels, where the one below it ends
        lower_end = lower["x"] + (lower["w"] if lower["value"] >= 0 else 0)
        upper_start = upper["x"] + (0 if upper["value"] >= 0 else upper["w"])
        assert abs(upper_start - lower_end) < 0.05 or min(upper["w"], lower["w"]) <= 1, (upper, lower)
    assert abs(rows[0]["end"] - msg["prediction"]) < 1e-9
    top = rows[0]
    top_end = top["x"] + (top["w"] if top["value"] >= 0 else 0)
    base_px, prediction_px = got["marks"]
    assert abs(top_end - prediction_px) < 0.05 or top["w"] <= 1, (top, got["marks"])
    bottom = rows[-1]
    assert abs(bottom["x"] + (0 if bottom["value"] >= 0 else bottom["w"]) - base_px) < 0.05 or bottom["w"] <= 1
    assert got["prediction"] == level_text(msg["prediction"], 4) and got["base"] == level_text(msg["base"], 4)
    for r in rows:  # each feature named with the event's value of it
        if r["feature"] in listed and msg.get("x") and r["feature"] in msg["x"]:
            from streamxai.local.waterfall import value_text

            want = f"{r['feature']} = {value_text(msg['x'][r['feature']])}"
            assert r["label"] == (want if len(want) <= 34 else want[:33] + "…"), (r, want)


def _local_messages():
    """A worker's local explanations of 200 agrawal events (the largest 5 features of each), each
    with the event_id a team's source gives, and a stream whose feature names and values are markup."""
    from helpers.handler_inputs import run_handlers, settings
    from streamxai.local.demo_stream import agrawal_events

    events = list(agrawal_events("cards", 200, seed=6))
    msgs = run_handlers(settings(local=True, local_top_k=5), events)["local-explanations"]
    msgs = [{**m, "event_id": f"txn-{m['seq']:05d}"} for m in msgs]
    payload = "<img class=pwn src=x onerror=\"document.title='PWNED'\">"
    crafted = {"schema": "local_explanation/v1", "stream_id": "x", "seq": 0, "position": 0, "model_version": 0,
               "target": payload, "prediction": 0.75, "base": 0.5, "values": {payload: 0.2, "b": 0.05},
               "x": {payload: payload, "b": 1}, "method": "tree", "exact": True, "n_background": 3,
               "event_id": payload}
    return events, msgs, crafted


def test_the_waterfall_shows_the_latest_or_a_chosen_event_with_the_message_s_numbers(tmp_path):
    """The "why this prediction" panel draws the latest local explanation, or an event chosen by event_id (typed,
    picked, or in the address) until "latest" is picked; bars chain the message's numbers; markup shows as text."""
    from streamxai.local.dashboard import DashboardState

    events, msgs, crafted = _local_messages()
    by_id = {m["event_id"]: m for m in msgs}
    # an event whose features moved the prediction (a young tree's leaves often do not)
    linked = next(m["event_id"] for m in reversed(msgs[:140]) if sum(1 for v in m["values"].values() if v) >= 3)
    state = DashboardState()
    for ev in events[:150]:
        state.add("predictions", shaped("predictions", {"stream_id": "cards", "seq": ev.seq, "loss": 0.2}))
    for m in msgs[:150]:
        state.add("local-explanations", m)
    state.add("predictions", shaped("predictions", {"stream_id": "x", "seq": 0, "loss": 0.2}))
    state.add("local-explanations", crafted)
    state.add("predictions", shaped("predictions", {"stream_id": "off", "seq": 0, "loss": 0.2}))
    sampled = {**crafted, "stream_id": "sampled", "target": None, "event_id": None, "prediction": 0.7, "base": 0.5,
               "values": {"a": 0.3, "b": -0.1}, "x": {"a": 2.5, "b": "red"}, "method": "sampling", "exact": False,
               "stderr": {"a": 0.02, "b": 0.01}, "n_evaluations": 400}
    state.add("predictions", shaped("predictions", {"stream_id": "sampled", "seq": 0, "loss": 0.2}))
    state.add("local-explanations", sampled)
    served = _Served(state)
    driver = _browser()
    shots = os.environ.get("STREAMXAI_SCREENSHOTS")
    try:
        driver.get(f"http://127.0.0.1:{served.port}/#stream=cards")
        got = _wait(driver, WATERFALL, 30, "the waterfall of the latest event")
        assert "txn-00149" in got["head"], got["head"]
        _check_waterfall(got, msgs[149])
        # a new event: the panel follows it
        for m in msgs[150:]:
            state.add("local-explanations", m)
        got = _wait(driver, WATERFALL.replace("if (!bars.length) return null;", "if (!bars.length || "
                    "!document.querySelector('#local-head').textContent.includes('txn-00199')) return null;"),
                    30, "the waterfall of the newest event")
        _check_waterfall(got, msgs[199])
        driver.execute_script("document.querySelector('#local-box').scrollIntoView()")
        driver.save_screenshot(str(tmp_path / "waterfall-latest.png"))
        # an event chosen by its event_id: shown, and kept while newer ones come
        driver.execute_script("document.querySelector('#local-find').value = 'txn-00042';"
                              "document.querySelector('#local-go').click()")
        chosen = WATERFALL.replace("if (!bars.length) return null;", "if (!bars.length || "
                                   "!document.querySelector('#local-head').textContent.includes('{}')) return null;")
        got = _wait(driver, chosen.replace("{}", "txn-00042"), 30, "the waterfall of txn-00042")
        _check_waterfall(got, by_id["txn-00042"])
        state.add("local-explanations", {**msgs[10], "seq": 200, "event_id": "txn-00200"})
        time.sleep(1.5)  # a push or two
        assert "txn-00042" in driver.execute_script(WATERFALL)["head"]
        # picked from the list of recent events, then back to the latest
        driver.execute_script("const s = document.querySelector('#local-event'); s.value = 'txn-00180';"
                              "s.dispatchEvent(new Event('change'))")
        _check_waterfall(_wait(driver, chosen.replace("{}", "txn-00180"), 30, "txn-00180"), by_id["txn-00180"])
        driver.execute_script("const s = document.querySelector('#local-event'); s.value = '';"
                              "s.dispatchEvent(new Event('change'))")
        got = _wait(driver, chosen.replace("{}", "txn-00200"), 30, "the latest again")
        _check_waterfall(got, {**msgs[10], "event_id": "txn-00200"})
        # an event the dashboard does not keep: said so, the waterfall shown stays
        driver.execute_script("document.querySelector('#local-find').value = 'txn-99999';"
                              "document.querySelector('#local-go').click()")
        note = _wait(driver, "const t = document.querySelector('#local-note').textContent; return t.includes('txn-99999') && t",
                     30, "the note on an unknown event")
        assert "is not among the local explanations kept" in note
        # a link to one event: #stream=ID&event=EVENT
        driver.get(f"http://127.0.0.1:{served.port}/#stream=cards&event={linked}")
        driver.refresh()
        _check_waterfall(_wait(driver, chosen.replace("{}", linked), 30, f"{linked} from the address"),
                         by_id[linked])
        # drawn while the page was not laid out yet (a link's event can come before the stream's
        # view shows the page): drawn again across its box once it is
        driver.execute_script("document.querySelector('#stream').hidden = true; drawLocal(dash.local);"
                              "setTimeout(() => { document.querySelector('#stream').hidden = false; }, 300)")
        got = _wait(driver, chosen.replace("{}", linked).replace(
            "return {", "const o = {").replace("\n};", "\n}; return o.svg >= o.box - 12 && o;"), 30,
            "the waterfall drawn across its box")
        _check_waterfall(got, by_id[linked])
        driver.execute_script("document.querySelector('#local-box').scrollIntoView()")
        driver.save_screenshot(str(tmp_path / "waterfall-chosen.png"))
        # markup in a feature's name, value, class or event id: text, never run
        driver.execute_script("document.querySelector('li.stream-item[data-stream=\"x\"]').click()")
        got = _wait(driver, chosen.replace("{}", "<img"), 30, "the crafted stream's waterfall")
        _check_waterfall(got, crafted)
        assert got["pwn"] == 0 and driver.title != "PWNED"
        # a sampled explanation (a model without a known structure): each value with its standard error
        driver.execute_script("document.querySelector('li.stream-item[data-stream=\"sampled\"]').click()")
        got = _wait(driver, chosen.replace("{}", "sampled"), 30, "the sampled stream's waterfall")
        _check_waterfall(got, sampled)
        texts = driver.execute_script("return [...document.querySelectorAll('#local-chart text.wf-value')].map(t => t.textContent)")
        assert texts == ["+0.3000 ± 0.0200", "−0.1000 ± 0.0100"], texts
        assert driver.execute_script("return document.querySelector('#local-note').textContent") == ""  # another stream's
        driver.execute_script("document.querySelector('#local-box').scrollIntoView()")
        driver.save_screenshot(str(tmp_path / "waterfall-sampled.png"))
        # a stream without local explanations says how to turn them on
        driver.execute_script("document.querySelector('li.stream-item[data-stream=\"off\"]').click()")
        _wait(driver, "return document.querySelector('#local-head').textContent.includes('local = true')", 30,
              "the note on a stream without local explanations")
        assert driver.execute_script("return document.querySelector('#local-chart').hidden")
        if shots:
            for name in ("waterfall-latest.png", "waterfall-chosen.png", "waterfall-sampled.png"):
                shutil.copy(tmp_path / name, Path(shots) / name)
    finally:
        driver.quit()
        served.close()


def test_the_waterfall_of_a_worker_s_local_explanations_read_from_the_topic(bootstrap, tmp_path):
    """With a worker's local explanations, the waterfall shows the newest message, or that of a chosen seq."""
    from helpers.pipeline_runs import collect
    from streamxai.local.demo_stream import agrawal_events

    driver = _browser()
    s = make_settings(bootstrap, str(tmp_path / "state"), local=True, local_top_k=4, explain_groups=1,
                      explainers=["isage"], model_params={"grace_period": 30})
    ensure_topics(s)
    events = list(agrawal_events("why", 150, seed=7))
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    worker = spawn_worker(s, log_file=str(tmp_path / "worker.log"), loglevel="warning")
    board = spawn_dashboard(s, port, log_file=str(tmp_path / "dashboard.log"))
    try:
        produce_events(s, events)
        sent = {m["seq"]: m for m in collect(s, "local-explanations", lambda ms: len({m["seq"] for m in ms}) >= len(events))}
        assert sorted(sent) == [ev.seq for ev in events]
        wait_for_dashboard(url, board)
        driver.get(url + "#stream=why")
        got = _wait(driver, WATERFALL.replace("if (!bars.length) return null;", "if (!bars.length || "
                    "!document.querySelector('#local-head').textContent.includes('seq 149 ')) return null;"),
                    60, "the waterfall of seq 149")
        _check_waterfall(got, sent[149])
        assert len(sent[149]["values"]) == 4 and got["rows"][-1]["feature"] == "5 other features"
        # an event whose features moved the prediction (a young tree's leaves often do not)
        seq = next(q for q in range(len(events) - 1, -1, -1) if any(sent[q]["values"].values()) and q != 149)
        driver.execute_script(f"document.querySelector('#local-find').value = '{seq}';"
                              "document.querySelector('#local-go').click()")
        got = _wait(driver, WATERFALL.replace("if (!bars.length) return null;", "if (!bars.length || "
                    f"!document.querySelector('#local-head').textContent.includes('seq {seq} ')) return null;"),
                    30, f"the waterfall of seq {seq}")
        _check_waterfall(got, sent[seq])
        assert any(r["value"] for r in got["rows"])
        driver.execute_script("document.querySelector('#local-box').scrollIntoView()")
        driver.save_screenshot(str(tmp_path / "waterfall-worker.png"))
        if shots := os.environ.get("STREAMXAI_SCREENSHOTS"):
            shutil.copy(tmp_path / "waterfall-worker.png", Path(shots) / "waterfall-worker.png")
    finally:
        driver.quit()
        stop_worker(board)
        stop_worker(worker)
    log = (tmp_path / "dashboard.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
