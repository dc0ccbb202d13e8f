"""A pytest plugin (``-p helpers.package_doctests``) collecting the package's doctests under installed names."""

from __future__ import annotations

import importlib
from pathlib import Path

from _pytest.doctest import DoctestModule

ROOT = Path(__file__).resolve().parents[2]
#: repository folder -> installed package (as in setup.py)
FOLDERS = {"pipeline": "streamxai", "agents": "streamxai.agents", "schemas": "streamxai.schemas"}


def installed_name(path: Path) -> str | None:
    """The installed module name of the source file at ``path``, or None outside the package.

    >>> installed_name(ROOT / "pipeline" / "core" / "stream.py")
    'streamxai.core.stream'
    >>> installed_name(ROOT / "agents" / "__init__.py")
    'streamxai.agents'
    >>> installed_name(ROOT / "tests" / "helpers" / "levels.py") is None
    True
    """
    try:
        parts = list(path.resolve().relative_to(ROOT).with_suffix("").parts)
    except ValueError:
        return None
    if not parts or parts[0] not in FOLDERS:
        return None
    parts = FOLDERS[parts[0]].split(".") + parts[1:]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class PackageDoctests(DoctestModule):
    """The examples of one package module, imported by its installed name (``streamxai.core.ipfi``, not the
    folder name ``pipeline.core.ipfi`` that ``--doctest-modules`` would import as a second copy)."""

    def _getobj(self):
        return importlib.import_module(installed_name(self.path))


def pytest_collect_file(file_path: Path, parent):
    """Every ``.py`` file's examples, as ``--doctest-modules`` collects them (not ``__main__.py``,
    which runs a command when imported); the package's under their installed names."""
    if file_path.suffix != ".py" or file_path.name == "__main__.py":
        return None
    if installed_name(file_path) is not None:
        return PackageDoctests.from_parent(parent, path=file_path)
    return DoctestModule.from_parent(parent, path=file_path)
