"""What every module imports (``import`` and ``from ... import``, in functions too), read with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["FOLDERS", "ROOT", "module_name", "imports_of", "modules"]

#: the checkout: the folder that holds pipeline/, agents/, schemas/ and tests/
ROOT = Path(__file__).resolve().parents[2]


#: repository folder -> the installed package it is (as in setup.py)
FOLDERS = {"pipeline": "streamxai", "agents": "streamxai.agents", "schemas": "streamxai.schemas"}


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` (under :data:`ROOT`): its installed name for
    the package's folders.

    >>> module_name(ROOT / "agents" / "model_agent.py"), module_name(ROOT / "pipeline" / "__init__.py")
    ('streamxai.agents.model_agent', 'streamxai')
    """
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] in FOLDERS:
        parts = FOLDERS[parts[0]].split(".") + parts[1:]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """Absolute names of the modules ``source`` (the text of ``module``) imports.

    >>> sorted(imports_of("import os\\nfrom ..kafka import io\\nfrom .x import y", "streamxai.local.demo"))
    ['os', 'streamxai.kafka', 'streamxai.kafka.io', 'streamxai.local.x', 'streamxai.local.x.y']
    """
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            # ``from pkg import sub`` may import a submodule: keep both names
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def modules(*folders: str) -> dict[str, set[str]]:
    """``{module: the names it imports}`` for every module under ``folders`` (relative to ROOT)."""
    out = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = module_name(path)
            out[name] = imports_of(path.read_text(), name, path.name == "__init__.py")
    assert out, f"no modules under {folders}"
    return out
