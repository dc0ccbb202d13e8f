"""The terminal live view says what a data fault asks to check, in the alert line's words: the
labels for a fault of the labels, a feature's inputs (and how much the model relied on it) else."""

from __future__ import annotations

from streamxai.local.live_view import episode_lines
from streamxai.local.output_reader import parse_episode


def _fault_lines(fault: dict) -> list[str]:
    ep = parse_episode({"first_seq": 900, "cut_seq": 800, "kind": "data_fault", "alert": True,
                        "changes": [{"explainer": "inputs", "feature": fault["feature"], "level_before": 1.0,
                                     "level_after": 2.0, "cut_seq": 800}], "faults": [fault]})
    return [line.strip() for line in episode_lines(ep) if "check" in line]


def test_a_fault_of_the_labels_asks_to_check_the_labels():
    lines = _fault_lines({"feature": "label", "what": "stopped", "reliance": None,
                          "detail": "no label since 800 (100 events)"})
    assert lines == ["check the labels: no label since 800 (100 events)"], lines


def test_a_fault_of_a_feature_asks_to_check_its_inputs_and_says_how_much_it_mattered():
    lines = _fault_lines({"feature": "nswprice", "what": "scaled", "reliance": 0.8,
                          "detail": "scaled about x1e+03 since 800"})
    assert lines == ["check the inputs of nswprice: scaled about x1e+03 since 800"
                     " (relied on at 80% of the top feature)"], lines
