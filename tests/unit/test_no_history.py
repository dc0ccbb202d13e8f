"""Code, tests, deployment files and docs say what is, in the present tense: no work-round or issue references
and no history asides (CHANGELOG.md is not scanned); hits are ``path:line: text``, and self-tests check
each pattern."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.imports import ROOT

#: (name, pattern, the file suffixes it skips)
PATTERNS: list[tuple[str, re.Pattern[str], frozenset[str]]] = [
    # "stop N", "issue N", "Round #N" (N a number); not a command-line flag such as ``--rounds N``
    ("work round or issue", re.compile(r"(?<![-\w])(?:stop|issue|round)s? #?\d+", re.I), frozenset()),
    # "#17"; stylesheets, scripts and JSON are skipped, where ``#222`` is a colour
    ("#number reference", re.compile(r"(?<![\w&#/])#\d+\b(?![0-9a-f])", re.I),
     frozenset({".css", ".js", ".html", ".json", ".svg"})),
    # "(before, it waited…)", "…. Before, the worker spun": the aside that opens a sentence or a
    # bracket and goes on with its subject; not ``f(before, after)``, ``(before, self.x)``,
    # "seen before, or" or a line that goes on "before, in or after a batch"
    ("before, … aside",
     re.compile(r"(?:^|[.;:(#]|\"\"\")\s*[Bb]efore,\s+"
                r"(?:a|an|the|this|that|these|those|it|its|they|we|each|every|one|no|[a-z]*[A-Z]\w*)\s+\w"),
     frozenset()),
    # "defect 4", "fault 2": numbered findings of a review the reader cannot see
    ("numbered finding", re.compile(r"(?<![-\w])(?:defect|fault)s? #?\d+", re.I), frozenset()),
    # "(was: …)", "\"\"\"Was: …": what the code did, told beside what it does; not "as it was: …"
    ("was: aside", re.compile(r"(?:\(|^\s*(?:\"\"\"|#)?\s*|#\s*|[.;]\s+)was:\s", re.I), frozenset()),
    # "found by the trial", "Found by a new user": how a case was found, not what it checks
    ("found by", re.compile(r"\bfound (?:by|in) (?:the |a |this )?(?:trial|use\b|new[- ]user|trying|acting)", re.I),
     frozenset()),
    ("before this change", re.compile(r"\bbefore this change\b", re.I), frozenset()),
    ("previously", re.compile(r"\bpreviously\b", re.I), frozenset()),
    ("formerly", re.compile(r"\bformerly\b", re.I), frozenset()),
    # "it used to wait", "used to be"; not the passive "the seed (that is) used to build it"
    ("used to", re.compile(r"\b(?:it|this|that|they|we|which|who|there)\s+used\s+to\b|\bused\s+to\s+be\b", re.I),
     frozenset()),
    # "no longer" is present tense in "a partition no longer assigned"; history only with a
    # "now" before it or a "since …" after it in the same sentence
    ("no longer … since / now no longer",
     re.compile(r"\bnow\s+no\s+longer\b|\bno\s+longer\b[^.\n]*\bsince\s+(?:the\s+)?(?:change|version|v?\d)", re.I),
     frozenset()),
]

#: what is scanned, one case each; README.md is rewritten on another branch
AREAS = {
    "pipeline": ["pipeline"],
    "agents": ["agents"],
    "schemas": ["schemas"],
    "tests": ["tests"],
    "deploy": ["deploy"],
    "ci": [".ci"],
    "top-level files": ["setup.py", "pyproject.toml"],
    "docs": ["docs"],
    "README": ["README.md"],
}

#: folders that hold build output, virtual environments or vendored third-party files
SKIPPED_DIRS = {"__pycache__", "target", "vendor", "node_modules", "build", "dist", "site",
                ".pytest_cache", ".mypy_cache", ".ruff_cache"}

#: this file: its self-tests quote what the patterns catch
THIS_FILE = Path(__file__).resolve()


def _files(names: list[str]) -> list[Path]:
    found = []
    for name in names:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(p for p in sorted(path.rglob("*")) if p.is_file() and not _skipped(p.relative_to(ROOT)))
    return [p for p in found if p.resolve() != THIS_FILE]


def _skipped(rel: Path) -> bool:
    return any(part in SKIPPED_DIRS or part.startswith(".venv") or part.endswith(".egg-info")
               for part in rel.parts[:-1])


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def hits_in(text: str, suffix: str = ".py") -> list[tuple[int, str, str]]:
    """``(line number, pattern name, line)`` for every line of ``text`` a pattern matches."""
    return [(n, name, line.strip())
            for n, line in enumerate(text.splitlines(), 1)
            for name, pattern, skips in PATTERNS
            if suffix not in skips and pattern.search(line)]


def hits(names: list[str]) -> list[str]:
    found = []
    for path in _files(names):
        text = _text(path)
        if text is None:
            continue
        found += [f"{path.relative_to(ROOT)}:{n}: [{name}] {line}" for n, name, line in hits_in(text, path.suffix)]
    return found


@pytest.mark.parametrize("area", list(AREAS))
def test_no_history(area):
    assert hits(AREAS[area]) == []


def test_the_scan_reads_the_package():
    """A scan that found no files would pass vacuously."""
    files = _files(AREAS["pipeline"])
    assert ROOT / "pipeline" / "__init__.py" in files
    assert not any(_skipped(p.relative_to(ROOT)) for p in files)


@pytest.mark.parametrize(("name", "caught", "legitimate"), [
    # the numbers are filled in by the test ({n}), so that a plain grep of the tree finds none here
    ("work round or issue", "A batch is flushed at 1 MiB (stop {n}).", "The worker stops after the last event."),
    ("work round or issue", "Labels arrive later (issue {n}).", "An issue with the broker is logged once."),
    ("work round or issue", "Tuned in round {n} of the work.", "Scores are rounded to {n} decimals."),
    ("work round or issue", "As in Issues #{n} and #14.", "[--rounds {n}] runs the benchmark three times."),
    ("#number reference", "See #17 for the measurements.", "Item 3 of the list: 17 events."),
    ("numbered finding", "Checked in test_faults (defect 4).", "A fault in one stream leaves the others running."),
    ("before, … aside", "It fails at once (before, it waited 30 s).",
     "The pair (before, after) goes to close_kind(before, after)."),
    ("before, … aside", "The worker waits. Before, it spun.",
     "A message seen before, or a seq at or before the last one, is skipped."),
    ("before, … aside", "Checks. Before, iPDP kept one list.", "A restart before, in or after a batch loses nothing."),
    ("before this change", "Before this change the worker blocked.", "The model learns before the explainers see the event."),
    ("was: aside", "The seq is sent (was: the position).", "Left out, as it was: the child computes it."),
    ("was: aside", '"""Was: a row short of its label cell was sent.', "if not was:"),
    ("found by", "A label of 2 (found by the trial).", "A rise found by the loss's own test opens it."),
    ("previously", "The cut was previously set at the alert.", "The cut is set where the new regime starts."),
    ("formerly", "A module formerly named drift.", "A module named for what it does."),
    # "<noun> used to <verb>" reads either way ("the seed used to build it"): only these are caught
    ("used to", "It used to send one message per event.", "The seed used to build the stream is fixed."),
    ("used to", "The limit used to be 64 KiB.", "The key used to sign checkpoints is a secret."),
    ("no longer … since / now no longer", "It now no longer waits for the producer.",
     "A partition no longer assigned loses its gauge."),
])
def test_each_pattern_catches_history_and_leaves_a_present_tense_sentence(name, caught, legitimate):
    caught, legitimate = caught.format(n=27), legitimate.format(n=3)
    assert name in {found for _, found, _ in hits_in(caught)}
    assert hits_in(legitimate) == []


def test_colours_are_not_references():
    assert hits_in("color: #222; background: #1f3a5f;", ".css") == []
    assert hits_in("# 1. the first step", ".py") == []
