"""The private parts of Faust, mode and aiokafka we rely on exist as expected; a failure names the version,
the attribute and what of ours breaks."""

from __future__ import annotations

import asyncio
import inspect
import re

import faust
import pytest
from aiokafka.consumer.consumer import AIOKafkaConsumer
from aiokafka.consumer.fetcher import Fetcher
from faust.transport.consumer import Consumer as FaustConsumer
from streamxai.kafka import private_api
from streamxai.kafka.faust_transport import FETCH_MAX_WAIT_MS, FETCH_MIN_BYTES, use_bounded_fetch_wait
from streamxai.kafka.private_api import REQUIRED, Private, PrivateAPIChanged, problem


@pytest.mark.parametrize("part", REQUIRED, ids=str)
def test_each_private_part_relied_on_is_there_as_expected(part):
    assert problem(part) is None, problem(part)


def test_a_part_that_is_gone_or_changed_is_reported_with_the_version_and_what_needs_it():
    owner = "aiokafka.consumer.fetcher:Fetcher"
    gone = problem(Private("aiokafka", owner, "_fetch_waiterz", "attribute", (), "the wake-up"))
    assert gone == f"aiokafka {private_api.version('aiokafka')}: Fetcher._fetch_waiterz is gone; the wake-up needs it"
    changed = problem(Private("aiokafka", owner, "fetched_records", "method", ("self", "partitions"), "the wake-up"))
    assert changed is not None and "Fetcher.fetched_records takes (self, partitions, timeout, max_records)" in changed
    no_method = problem(Private("faust", "faust.transport.drivers.aiokafka:Consumer", "_comit", "method", ("self",), "x"))
    assert no_method is not None and no_method.startswith(f"faust {private_api.version('faust')}: Consumer._comit is gone")
    no_class = problem(Private("mode", "mode.threads:NoSuchThread", "thread_loop", "attribute", (), "x"))
    assert no_class is not None and "mode.threads.NoSuchThread is gone" in no_class


def test_the_accessors_raise_a_clear_error_when_aiokafka_lacks_the_attribute():
    version = private_api.version("aiokafka")
    with pytest.raises(PrivateAPIChanged, match=rf"^aiokafka {re.escape(version)}: Fetcher\._fetch_waiters is gone"):
        private_api.fetch_waiters(object())
    with pytest.raises(PrivateAPIChanged, match=r"AIOKafkaConsumer\._fetcher is gone; faust_transport's wake-up"):
        private_api.fetcher(object())
    with pytest.raises(PrivateAPIChanged, match=r"AIOKafkaConsumer\._fetch_max_wait_ms is gone"):
        private_api.set_fetch_limits(object(), 100, 1)
    with pytest.raises(PrivateAPIChanged, match=r"AIOKafkaConsumer\._client is gone"):
        private_api.consumer_client(object())
    assert private_api.fetcher(None) is None  # the consumer thread not started: nothing to wake


def test_the_worker_s_aiokafka_consumer_takes_the_fetch_limits_and_has_no_fetcher_before_it_starts():
    async def made():
        app = faust.App("private-api-test", broker="kafka://127.0.0.1:9", loop=asyncio.get_running_loop())
        use_bounded_fetch_wait(app)
        thread = app.consumer._thread
        try:
            client = thread._create_worker_consumer(app.consumer.transport)
            found = (client._fetch_max_wait_ms, client._fetch_min_bytes, private_api.fetcher(client),
                     type(private_api.consumer_client(client)).__name__)
            await client.stop()  # never started: closes its (unconnected) client
            return found
        finally:
            thread.thread_loop.close()

    assert asyncio.run(made()) == (FETCH_MAX_WAIT_MS, FETCH_MIN_BYTES, None, "AIOKafkaClient")


def test_aiokafka_builds_its_fetcher_and_each_fetch_request_from_the_limits_and_waits_on_the_fetch_waiters():
    start = inspect.getsource(AIOKafkaConsumer.start)
    assert "fetch_max_wait_ms=self._fetch_max_wait_ms" in start and "fetch_min_bytes=self._fetch_min_bytes" in start, (
        "aiokafka's AIOKafkaConsumer.start no longer builds its Fetcher from _fetch_max_wait_ms and _fetch_min_bytes: "
        "faust_transport's bounded fetch wait would do nothing")
    requests = inspect.getsource(Fetcher._get_actions_per_node)
    assert "self._fetch_max_wait_ms," in requests, (
        "aiokafka's Fetcher no longer builds each fetch request from its _fetch_max_wait_ms: faust_transport's paced "
        "fetch wait would do nothing")
    fetched = inspect.getsource(Fetcher.fetched_records)
    create = inspect.getsource(getattr(Fetcher, "_create_fetch_waiter", lambda: None))
    assert "self._create_fetch_waiter()" in fetched and "self._fetch_waiters.add(" in create, (
        "aiokafka's Fetcher.fetched_records no longer waits on a future in _fetch_waiters: faust_transport's "
        "wake-up of the fetch on a resumed partition would wake nothing")


def test_faust_races_each_hand_over_against_suspend_flow_wait_which_the_consumer_recognises():
    drain = re.sub(r"\s+", "", inspect.getsource(FaustConsumer._drain_messages))
    assert "self.wait_first(callback(message),self.suspend_flow.wait())" in drain, (
        "Faust's Consumer._drain_messages no longer hands a record over with "
        "wait_first(callback(message), self.suspend_flow.wait()): faust_transport's one-task hand-over is not used")
    app = faust.App("private-api-handover", broker="kafka://127.0.0.1:9", loop=asyncio.new_event_loop())
    use_bounded_fetch_wait(app)
    consumer = app.consumer
    try:
        wait = consumer.suspend_flow.wait()
        assert private_api.runs_method_of(wait, consumer.suspend_flow)
        assert not private_api.runs_method_of(wait, asyncio.Event())
        wait.close()
    finally:
        consumer._thread.thread_loop.close()
        app.loop.close()


def test_the_assignor_topic_ensure_topics_creates_is_the_one_faust_subscribes_to(tmp_path):
    """The worker creates Faust's assignor topic itself (Faust may not declare topics): its name
    must be the one Faust's assignor uses."""
    import asyncio

    from streamxai.app import create_app
    from streamxai.kafka.config import assignor_topic
    from streamxai.settings import Settings

    s = Settings(bootstrap_servers="127.0.0.1:9", state_dir=str(tmp_path), checkpoint_every=0, app_id="fraud-eu")

    async def made():
        app = create_app(s, roles=("model",))
        try:
            return app.conf.topic_allow_declare, app._leader_assignor._leader_topic.get_topic_name()
        finally:
            app.consumer._thread.thread_loop.close()

    assert asyncio.run(made()) == (False, assignor_topic(s))
