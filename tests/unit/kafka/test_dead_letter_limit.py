"""The dead-letter size check is best effort: a cluster not answering the topic's configs in time is skipped with one line."""

from __future__ import annotations

import concurrent.futures
import logging

import pytest
from streamxai.kafka.config import _check_dead_letter_limit
from streamxai.schemas import ConfigError
from streamxai.settings import Settings


class _Configs:
    """What the admin client's ``describe_configs`` gives: one future per resource."""

    def __init__(self, result: object):
        self.result_ = result

    def describe_configs(self, resources: list) -> dict:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        if isinstance(self.result_, BaseException):
            fut.set_exception(self.result_)
        else:
            fut.set_result(self.result_)
        return {r: fut for r in resources}


class _Entry:
    def __init__(self, value: str):
        self.value = value


def test_a_cluster_that_does_not_answer_skips_the_check_with_one_line(caplog):
    s = Settings(features=["a"])
    with caplog.at_level(logging.WARNING, logger="streamxai"):
        _check_dead_letter_limit(s, _Configs(concurrent.futures.TimeoutError()), timeout=0.1)
    (line,) = [r.getMessage() for r in caplog.records]
    assert s.topic("dead-letters") in line and "max.message.bytes" in line and "not checked" in line, line


def test_a_topic_too_small_for_a_dead_letter_is_still_refused():
    s = Settings(features=["a"])
    with pytest.raises(ConfigError, match="max_dead_letter_bytes"):
        _check_dead_letter_limit(s, _Configs({"max.message.bytes": _Entry("1000")}), timeout=0.1)
