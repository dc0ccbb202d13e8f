"""The layering rules of docs/pages/concepts/architecture.md, checked on the source: every ``import`` and
``from ... import`` of every module (also those inside functions), parsed with ``ast``."""

from __future__ import annotations

import re

import pytest
from helpers.imports import ROOT, modules

KAFKA_CLIENTS = ("faust", "aiokafka", "confluent_kafka", "kafka", "mode")


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(mods: dict[str, set[str]], forbidden) -> list[str]:
    return sorted(f"{m} imports {i}" for m, imps in mods.items() for i in imps if forbidden(i))


def test_core_imports_neither_kafka_nor_faust_nor_the_rest_of_the_pipeline():
    def forbidden(name: str) -> bool:
        return (any(within(name, c) for c in KAFKA_CLIENTS)
                or (within(name, "streamxai") and not within(name, "streamxai.core")
                    and not within(name, "streamxai.schemas")))
    assert violations(modules("pipeline/core"), forbidden) == []


def test_schemas_import_nothing_of_pipeline_or_agents():
    assert violations(modules("schemas"), lambda n: within(n, "streamxai") and not within(n, "streamxai.schemas")) == []


@pytest.mark.parametrize("folder", ["pipeline/core", "pipeline/handlers", "pipeline/kafka", "agents"])
def test_local_tooling_is_imported_only_by_the_top_and_itself(folder):
    assert violations(modules(folder), lambda n: within(n, "streamxai.local")) == []


def test_the_checks_see_the_imports_they_forbid():
    """A rule over an import resolution that found nothing would pass vacuously."""
    demo = modules("pipeline/local")["streamxai.local.demo"]
    assert {"streamxai.kafka.config", "streamxai.local.broker", "streamxai.worker"} <= demo
    assert violations({"streamxai.core.x": {"confluent_kafka.admin"}}, lambda n: within(n, "confluent_kafka"))


def test_kafka_plumbing_imports_only_itself_and_settings_of_pipeline():
    allowed = ("streamxai.kafka", "streamxai.settings")
    assert violations(modules("pipeline/kafka"), lambda n: within(n, "streamxai") and not within(n, "streamxai.schemas") and not any(
        within(n, a) for a in allowed)) == []


def import_cycle(mods: dict[str, set[str]]) -> list[str]:
    """One cycle among the modules of ``mods`` (as a path that ends where it starts), or [].

    >>> import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    ['a', 'b', 'c', 'a']
    >>> import_cycle({"a": {"b", "os"}, "b": set()})
    []
    """
    graph = {m: sorted(i for i in imps if i in mods and i != m) for m, imps in mods.items()}
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> list[str]:
        if m in path:
            return path[path.index(m):] + [m]
        if m in done:
            return []
        for n in graph[m]:
            found = visit(n, path + [m])
            if found:
                return found
        done.add(m)
        return []

    for m in sorted(graph):
        found = visit(m, [])
        if found:
            return found
    return []


def test_no_import_cycles():
    """No import cycles among pipeline, agents and schemas, ``TYPE_CHECKING`` imports included."""
    mods = modules("pipeline", "agents", "schemas")
    assert {"streamxai.handlers.common", "streamxai.kafka.checkpoints", "streamxai.agents._forward", "streamxai.schemas.wire"} <= set(mods)
    assert import_cycle(mods) == []


def private_imports(mods: dict[str, set[str]]) -> list[str]:
    """The imports of one module's underscore names by another (a private submodule is a module, not a name).

    >>> private_imports({"a": {"b", "b._x", "b.y"}, "b": set(), "b._sub": set(), "c": {"b._sub"}})
    ['a imports b._x']"""
    def private_name(name: str) -> bool:
        owner, _, last = name.rpartition(".")
        return (owner in mods and last.startswith("_") and not last.startswith("__") and name not in mods
                and not any(ROOT.joinpath(*owner.split(".")).glob(f"{last}.*")))
    return violations(mods, private_name)


def test_no_module_imports_another_modules_private_names():
    assert private_imports(modules("pipeline", "agents", "schemas")) == []


FOLDER_IMPORT = re.compile(r"(?:^|;)\s*(?:>>> |\.\.\. )?\s*(?:from|import) (?:pipeline|agents|schemas)\b", re.M)


@pytest.mark.parametrize("folder", ["pipeline", "agents", "schemas", "tests"])
def test_nothing_imports_a_folder_by_its_name(folder):
    """No ``import schemas`` (by folder name), in code or docstring examples: it works only in a checkout."""
    found = [f"{path.relative_to(ROOT)}: {m.group(0).strip()}" for path in sorted((ROOT / folder).rglob("*.py"))
             for m in FOLDER_IMPORT.finditer(path.read_text())]
    assert found == []


def test_the_folder_import_check_sees_what_it_forbids():
    assert FOLDER_IMPORT.search("x = 1\n    >>> from schemas import dumps\n")
    assert FOLDER_IMPORT.search("import pipeline.core\n")
    assert not FOLDER_IMPORT.search("from streamxai.schemas import dumps\n")
