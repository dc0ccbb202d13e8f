"""Import ``streamxai`` from another checkout's folders (main's, for a benchmark's same-run
baseline) in a child process. The editable install maps ``streamxai`` onto this checkout's
``pipeline/`` (and ``streamxai.agents`` / ``streamxai.schemas`` onto ``agents/`` / ``schemas/``)
through a finder that ``PYTHONPATH`` does not outrank, because the checkout has no folder named
``streamxai``; :func:`use_source` puts a finder first on ``sys.meta_path`` that maps the same
three packages onto the folders of ``src``, so that everything under them is that checkout's
code, its compiled kernels included (built there by its own ``pip install -e .``).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

#: installed package -> repository folder, as setup.py maps them
PACKAGES = {"streamxai": "pipeline", "streamxai.agents": "agents", "streamxai.schemas": "schemas"}


class _SourceFinder(importlib.abc.MetaPathFinder):
    def __init__(self, src: Path):
        self.src = src

    def find_spec(self, name, path=None, target=None):
        folder = PACKAGES.get(name)
        if folder is None:
            return None  # a submodule: found through its package's __path__, in src
        init = self.src / folder / "__init__.py"
        return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])


def use_source(src: str) -> None:
    """Make ``import streamxai`` load the code in checkout ``src`` (before anything imports it)."""
    root = Path(src).resolve()
    if not (root / "pipeline" / "__init__.py").is_file():
        raise FileNotFoundError(f"{root} is not a streamxai checkout (no pipeline/__init__.py)")
    if any(name == "streamxai" or name.startswith("streamxai.") for name in sys.modules):
        raise RuntimeError("streamxai is already imported; call use_source before importing it")
    sys.meta_path.insert(0, _SourceFinder(root))


def source_of() -> str:
    """The folder ``streamxai`` was imported from (to print what a child ran)."""
    import streamxai

    return str(Path(streamxai.__file__).resolve().parent.parent)
