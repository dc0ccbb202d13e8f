"""How ``pytest -n N --dist loadgroup`` shares tests out: tests sharing a module-scoped fixture, or a session
fixture other than the broker and its clients, go to one process, so the fixture runs once."""

from __future__ import annotations

import pytest

#: session fixtures each xdist process sets up for itself (tests/integration/conftest.py)
PER_PROCESS = frozenset({"broker", "bootstrap", "admin"})


def shared_fixture_group(item: pytest.Item) -> str | None:
    """The group of tests ``item`` must run with, or None when it can run anywhere."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name, defs in info.name2fixturedefs.items():
        fixture = defs[-1]
        if fixture.scope == "function" or name in PER_PROCESS or not fixture.baseid:
            continue  # per test, started by every process, or one of pytest's own
        if fixture.scope == "session":
            return f"session:{name}"
        return f"module:{item.nodeid.split('::', 1)[0]}"
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
