"""The worker's CPU profile (``tests/benchmarks/_cpu_profile.py``) names what each sample was
doing. An agent awaits its handler inside its send (``_send(outbox, _handle(...))``), so a
stack holds both; a sample in the handler is the handler's, one in the producer is the send's."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _cpu_profile import _part  # noqa: E402

AGENT = ["/x/agents/_forward.py:forward", "/x/agents/_forward.py:_send"]


def test_a_handler_awaited_inside_the_send_is_the_handlers():
    stack = [*AGENT, "/x/agents/_forward.py:_handle", "/x/pipeline/handlers/explain.py:on_message",
             "/x/pipeline/core/explainers.py:explain_one"]
    assert _part("explain", stack) == "explain: handler (core)"
    on_loop = [*AGENT, "/x/agents/_forward.py:_handle", "/x/pipeline/handlers/common.py:on_message_on_loop",
               "/x/pipeline/core/explainers.py:explain_one"]  # what the agent loop calls on the event loop
    assert _part("explain", on_loop) == "explain: handler (core)"


def test_the_producer_under_the_send_is_the_send():
    stack = [*AGENT, "/x/agents/_forward.py:send", "/venv/faust/transport/producer.py:send"]
    assert _part("explain", stack) == "explain: send"


def test_deciding_whether_to_rebuild_is_receiving_and_outside_an_agent_is_the_layer():
    stack = [*AGENT, "/x/agents/_forward.py:_handle", "/x/pipeline/handlers/base.py:needs_recovery"]
    assert _part("model", stack) == "model: receive, loop"
    assert _part("", ["/venv/asyncio/base_events.py:_run_once"]) == "outside the agents: asyncio"
