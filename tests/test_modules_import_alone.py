"""Every module of roomkit imports on its own, first, in an interpreter holding no roomkit.

``import roomkit`` loads nothing of the kit, so a program's first import may be any module
(``from roomkit.stores.sqlite import SQLiteStore``). A cycle of imports fails only when it is
entered at the wrong module: the import statements that run as modules load must hold no
cycle at all. A fresh interpreter for each of some 500 modules takes minutes, so the cycles
are looked for in the statements themselves, and the modules a cycle once ran through are
imported alone as well.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fresh_python import SOURCES, fresh_python


def _modules() -> dict[str, Path]:
    """Every module under ``src/roomkit``, by name."""
    modules = {}
    for path in sorted((SOURCES / "roomkit").rglob("*.py")):
        parts = path.relative_to(SOURCES).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _loading_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run as a module loads: not in a function, nor under
    ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                yield from _loading_imports(node.body)
            yield from _loading_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _loading_imports(block)
            for handler in node.handlers:
                yield from _loading_imports(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _loading_imports(node.body)


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The roomkit modules that loading ``name`` loads directly, with the packages they are
    in (but its own, which are loaded before it)."""
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: list[str] = []
    for node in _loading_imports(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
            continue
        base = node.module or ""
        if node.level:
            parent = here.split(".")[: len(here.split(".")) - node.level + 1]
            base = ".".join([*parent, *filter(None, [node.module])])
        targets += [f"{base}.{alias.name}" for alias in node.names]
    found = set()
    for target in targets:
        while target not in modules and "." in target:
            target = target.rpartition(".")[0]
        if target not in modules or target == name:
            continue
        found.add(target)
        package = target
        while "." in package:
            package = package.rpartition(".")[0]
            if not (name == package or name.startswith(f"{package}.")):
                found.add(package)
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in import order), or ``None`` when it has none."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        while stack:
            following = next(stack[-1], None)
            if following is None:
                done.add(path.pop())
                stack.pop()
            elif following in path:
                return [*path[path.index(following) :], following]
            elif following not in done:
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return None


def test_no_module_imports_itself_through_others() -> None:
    """The imports that run as modules load hold no cycle."""
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert len(graph) > 400, sorted(graph)
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize(
    "module", ["roomkit.stores._history", "roomkit.stores._quorum", "roomkit.routing"]
)
def test_a_module_a_cycle_ran_through_imports_alone(module: str) -> None:
    """It imports first, in a fresh interpreter."""
    done = fresh_python("-c", f"import {module}")
    assert done.returncode == 0, done.stderr
