"""The test tree: no two test files share a base name, no test module imports another, and tests/unit/
mirrors the package."""

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
    own = {p.stem for folder in ("unit", "integration") for p in (TESTS / folder).rglob("*.py")}
    assert {"test_layout", "conftest"} <= own
    found = sorted(
        f"{p.relative_to(TESTS)} imports {name}"
        for p in TESTS.rglob("*.py")
        for name in imports_of(p.read_text(), p.stem)
        if name.split(".")[0] in own
    )
    assert found == []


def test_unit_test_folders_mirror_the_package():
    """``tests/unit/core/change/`` holds the tests of ``pipeline/core/change/`` (``streamxai.core.change``);
    ``tests/unit/agents/`` and ``tests/unit/schemas/`` those of ``agents/`` and ``schemas/``."""
    root = TESTS.parent
    folders = {p.parent.relative_to(TESTS / "unit") for p in (TESTS / "unit").rglob("test_*.py")}
    assert len(folders) > 5
    missing = sorted(str(f) for f in folders if str(f) != "." and not (
        (root / "pipeline" / f).is_dir() or (root / f).is_dir() and f.parts[0] in ("agents", "schemas")))
    assert missing == []
