"""The dashboard process: a plain Kafka consumer of the output topics and an aiohttp server."""

from __future__ import annotations

import asyncio
import errno
import logging
import re
import socket
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from streamxai.schemas import ConfigError

from ...kafka.config import confluent_config
from ...settings import Settings
from .state import DashboardState

__all__ = ["DashboardConsumer", "listen_socket", "make_web_app", "run_dashboard", "TOPICS"]

log = logging.getLogger("streamxai.dashboard")
STATIC = Path(__file__).parent / "static"
TOPICS = DashboardState.TOPICS  # the topics the reader reads


class DashboardConsumer:
    """Consumes the output topics of ``settings`` into ``state`` on a daemon thread
    (:meth:`start`, :meth:`stop`), subscribed by pattern so topics created later appear.

    >>> from streamxai.settings import Settings
    >>> c = DashboardConsumer(Settings(topic_prefix="shop."), DashboardState())
    >>> bool(re.match(c.pattern, "shop.explanations")), bool(re.match(c.pattern, "shop.features"))
    (True, False)
    """

    def __init__(self, settings: Settings, state: DashboardState, from_beginning: bool = True):
        self.settings = settings
        self.state = state
        self.lock = threading.Lock()
        self.from_beginning = from_beginning
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        prefix = re.escape(settings.topic_prefix)
        self.pattern = "^" + prefix + "(" + "|".join(re.escape(t) for t in TOPICS) + ")$"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="dashboard-consumer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaError

        c = Consumer(confluent_config(self.settings, **{
            "group.id": f"streamxai-dashboard-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest" if self.from_beginning else "latest",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 2000,  # topics created later appear within seconds
            "log_level": 2,  # a broker that is away is reported once at start, not every second
        }))
        c.subscribe([self.pattern])
        n = len(self.settings.topic_prefix)
        try:
            while not self._stop.is_set():
                msgs = c.consume(500, 0.2)
                if not msgs:
                    continue
                with self.lock:
                    for msg in msgs:
                        if msg.error():
                            if msg.error().code() not in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                                self.error = str(msg.error())
                                log.warning("consuming %s: %s", msg.topic(), msg.error())
                            continue
                        kind, ts_ms = msg.timestamp()
                        self.state.feed(msg.topic()[n:], msg.value(), ts_ms / 1000.0 if kind and ts_ms > 0 else None)
        finally:
            c.close()


def _json(data: Any) -> web.Response:
    return web.Response(body=orjson.dumps(data), content_type="application/json")


def make_web_app(state: DashboardState, lock: threading.Lock, push_every: float = 0.5,
                 info: dict[str, Any] | None = None) -> web.Application:
    """The aiohttp application over ``state`` (guarded by ``lock``)."""
    app = web.Application()
    info = dict(info or {})
    closing = asyncio.Event()  # set on shutdown: open event streams end instead of holding it up

    async def on_shutdown(app: web.Application) -> None:
        closing.set()

    app.on_shutdown.append(on_shutdown)

    async def index(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html")

    async def streams(request: web.Request) -> web.Response:
        with lock:
            return _json({"info": info, "streams": state.streams_summary()})

    async def stream(request: web.Request) -> web.Response:
        with lock:
            view = state.stream_view(request.match_info["sid"])
        if view is None:
            raise web.HTTPNotFound(text=f"no stream {request.match_info['sid']!r} seen yet")
        return _json(view)

    async def local(request: web.Request) -> web.Response:
        sid, event = request.match_info["sid"], request.query.get("event") or None
        with lock:
            view = state.local_view(sid, event)
        if view is None:
            kept = f"event {event!r} is not among the local explanations kept" if event else "no local explanation yet"
            raise web.HTTPNotFound(text=f"stream {sid!r}: {kept}")
        return _json(view)

    async def events(request: web.Request) -> web.StreamResponse:
        sid = request.query.get("stream")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        seen_summary: Any = None
        seen_version = -1
        try:
            while not closing.is_set():
                with lock:
                    summary = state.streams_summary()
                    key = [(s["stream_id"], s["version"]) for s in summary]
                    st = state.streams.get(sid) if sid else None
                    view = state.stream_view(sid) if st is not None and st.version != seen_version else None
                if key != seen_summary:
                    seen_summary = key
                    await resp.write(b"event: streams\ndata: " + orjson.dumps({"info": info, "streams": summary}) + b"\n\n")
                if view is not None:
                    seen_version = view["version"]
                    await resp.write(b"event: stream\ndata: " + orjson.dumps(view) + b"\n\n")
                try:
                    await asyncio.wait_for(closing.wait(), push_every)
                except TimeoutError:
                    pass
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return resp

    app.router.add_get("/", index)
    app.router.add_get("/api/streams", streams)
    app.router.add_get("/api/stream/{sid}", stream)
    app.router.add_get("/api/local/{sid}", local)
    app.router.add_get("/events", events)
    app.router.add_static("/static/", STATIC)
    return app


def run_dashboard(settings: Settings, host: str = "127.0.0.1", port: int = 8050,
                  from_beginning: bool = True, max_points: int = 400) -> None:
    """Consume and serve until interrupted (blocks). :class:`~schemas.ConfigError` before
    anything starts if ``host:port`` cannot be listened on.

    A background thread consumes the output topics with a throwaway consumer group into a
    :class:`DashboardState`; the endpoints are listed in docs/pages/how-to/deployment.md.
    """
    from confluent_kafka.admin import AdminClient

    sock = listen_socket(host, port)
    try:
        AdminClient(confluent_config(settings, log_level=0)).list_topics(timeout=5)
    except Exception as e:  # serve anyway: the page fills once the broker answers
        print(f"streamxai dashboard: cannot reach Kafka at {settings.bootstrap_servers} yet ({e}); "
              "the page fills once it answers", file=sys.stderr, flush=True)
    state = DashboardState(max_points=max_points, explainers_of=lambda sid: settings.for_stream(sid).explainers)
    consumer = DashboardConsumer(settings, state, from_beginning=from_beginning)
    consumer.start()
    app = make_web_app(state, consumer.lock, info={"topic_prefix": settings.topic_prefix,
                                                   "bootstrap": settings.bootstrap_servers,
                                                   "started": time.time()})
    print(f"streamxai dashboard on http://{host}:{port}/ (topics {settings.topic_prefix}*)", flush=True)
    try:
        web.run_app(app, sock=sock, print=None, handle_signals=True)
    finally:
        consumer.stop()
        sock.close()


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` for the dashboard's web server, or a
    :class:`~schemas.ConfigError` that says what to change.

    >>> with listen_socket("127.0.0.1", 0) as s:
    ...     listen_socket("127.0.0.1", s.getsockname()[1])
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: the dashboard cannot listen on 127.0.0.1:...: it is in use ...
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as e:
        raise ConfigError(f"the dashboard cannot listen on {host}:{port}: {host!r} cannot be resolved ({e}); "
                          "give --host an address of this host (127.0.0.1, or 0.0.0.0 for every interface)") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp does
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise ConfigError(f"the dashboard cannot listen on {host}:{port}: it is in use (another dashboard, or a "
                              "worker's web_port?); choose another port with --port") from None
        raise ConfigError(f"the dashboard cannot listen on {host}:{port}: {e.strerror}; give --host an address of "
                          "this host (127.0.0.1, or 0.0.0.0 for every interface)") from None
    return sock
