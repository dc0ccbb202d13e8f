"""The test tree itself: pytest imports test modules by base name (no packages under tests/),
so two test files with one name in different folders stop the whole run at collection; and
a test module imports no other test module (what several share is in tests/helpers/)."""

from collections import Counter
from pathlib import Path

from helpers.imports import imports_of

TESTS = Path(__file__).resolve().parents[1]


def test_test_modules_have_distinct_names():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []


def test_modules_import_no_test_module():
    """Every module of unit/ and integration/ (tests, conftest): importing one of them from
    another runs its tests twice or couples them; shared code lives in the helpers package."""
    own = {p.stem for folder in ("unit", "integration") for p in (TESTS / folder).glob("*.py")}
    assert {"test_layout", "conftest"} <= own
    found = sorted(
        f"{p.relative_to(TESTS)} imports {name}"
        for p in TESTS.rglob("*.py")
        for name in imports_of(p.read_text(), p.stem)
        if name.split(".")[0] in own
    )
    assert found == []
