"""``roomkit.core`` sits under every other package but ``models``: it imports none of them."""

from __future__ import annotations

import ast
from pathlib import Path

import roomkit

PACKAGE = Path(roomkit.__file__).parent
# What core may import from the package: itself and the plain data under it.
UNDER_CORE = {"core", "models"}


def _runtime_imports(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    """The absolute names a module imports when it runs (not under ``if TYPE_CHECKING:``)."""
    found: list[tuple[int, str]] = []
    here = module.split(".") if is_package else module.split(".")[:-1]

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                name = ".".join([*base, *([node.module] if node.module else [])])
                found.extend((node.lineno, f"{name}.{alias.name}") for alias in node.names)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    block = getattr(node, field, None)
                    if isinstance(block, list):
                        visit([n for n in block if isinstance(n, ast.stmt | ast.ExceptHandler)])

    visit(tree.body)
    return found


def _upward(path: Path) -> list[str]:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    is_package = relative.name == "__init__"
    module = ".".join(relative.parts[:-1] if is_package else relative.parts)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for line, name in _runtime_imports(tree, module, is_package)
        if name.startswith("roomkit.") and name.split(".")[1] not in UNDER_CORE
    ]


def test_core_imports_only_core_and_models() -> None:
    """Every module of ``roomkit.core`` imports only ``roomkit.core`` and ``roomkit.models``."""
    modules = sorted((PACKAGE / "core").rglob("*.py"))
    assert modules
    upward = [line for path in modules for line in _upward(path)]
    assert upward == []


def test_the_check_sees_an_upward_import() -> None:
    """The check finds an upward import in a function body and in a relative import, and
    lets a type-only one through."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from roomkit.models.room import Room\n"
        "from . import hooks\n"
        "if TYPE_CHECKING:\n"
        "    from roomkit.tools.human_input import HumanInputHandler\n"
        "def late():\n"
        "    from roomkit.channels.base import Channel\n"
        "    from ..tools import compose\n"
    )
    tree = ast.parse(source)
    names = [name for _, name in _runtime_imports(tree, "roomkit.core.probe", False)]
    assert names == [
        "typing.TYPE_CHECKING",
        "roomkit.models.room.Room",
        "roomkit.core.hooks",
        "roomkit.channels.base.Channel",
        "roomkit.tools.compose",
    ]
