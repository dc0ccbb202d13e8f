"""A flood of bad input is not a flood of log lines, while every dead letter still goes to the topic."""

from __future__ import annotations

import logging

from streamxai.handlers.dead_letters import dead_letter
from streamxai.schemas import Source


def test_dead_letters_of_one_reason_log_a_bounded_number_of_lines(caplog):
    caplog.set_level(logging.WARNING, logger="streamxai")
    outs = [dead_letter(b"{", b"k", ValueError("not json"), "model", Source("t", 0, i), reason="trial_flood")
            for i in range(1000)]
    assert len(outs) == 1000 and all(o.topic == "dead-letters" for o in outs)
    lines = [r.getMessage() for r in caplog.records if "trial_flood" in r.getMessage()]
    assert 1 <= len(lines) <= 20, len(lines)
    assert lines[0].startswith("dead letter (model, trial_flood): t[0]@0: ValueError: not json")
    # another reason is not held back by this one's flood
    dead_letter(b"{", b"k", ValueError("other"), "model", Source("t", 0, 1000), reason="trial_other")
    assert any("trial_other" in r.getMessage() for r in caplog.records)


def test_a_dead_letter_line_names_the_error_the_model_raised(caplog):
    """A model's OverflowError is named in the worker's log line as in the dead letter."""
    caplog.set_level(logging.WARNING, logger="streamxai")
    dead_letter(b"{}", b"k", OverflowError(34, "Numerical result out of range"), "model", Source("t", 1, 6004),
                reason="trial_overflow")
    (line,) = [r.getMessage() for r in caplog.records if "trial_overflow" in r.getMessage()]
    assert line == ("dead letter (model, trial_overflow): t[1]@6004: OverflowError: (34, 'Numerical result out of "
                    "range')"), line
