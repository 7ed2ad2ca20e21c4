"""A lazy import of an optional library fails with one line naming the extra to install."""

from __future__ import annotations

import ast
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from roomkit._extras import install_command, missing_module, requires_extra

SRC = Path(__file__).parents[1] / "src" / "roomkit"


def test_a_missing_library_names_its_extra_and_keeps_the_cause() -> None:
    with pytest.raises(ImportError) as caught, requires_extra("roomkit.notify.slack", "slack"):
        import roomkit_no_such_library  # type: ignore[import-not-found]  # noqa: F401

    error = caught.value
    assert str(error) == (
        "roomkit.notify.slack needs the slack extra (roomkit_no_such_library is not "
        f"installed): {install_command('slack')}"
    )
    assert error.name == "roomkit_no_such_library"
    assert isinstance(error.__cause__, ModuleNotFoundError)
    assert missing_module(error) == "roomkit_no_such_library"


def test_imports_that_succeed_pass_through() -> None:
    with requires_extra("roomkit.notify.slack", "slack"):
        import json

    assert json.dumps([]) == "[]"


def guarded_imports() -> list[tuple[str, str, str]]:
    """``(module file, extra, top-level package)`` for each import inside a
    ``with requires_extra(what, extra):`` block of roomkit's source."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.With):
                continue
            call = node.items[0].context_expr
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id == "requires_extra"
                and isinstance(call.args[1], ast.Constant)
            ):
                continue
            for statement in node.body:
                if isinstance(statement, ast.Import):
                    names = [alias.name for alias in statement.names]
                elif isinstance(statement, ast.ImportFrom) and statement.level == 0:
                    names = [statement.module or ""]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top != "roomkit":
                        found.append((str(path.relative_to(SRC)), call.args[1].value, top))
    return found


def installed_by(extra: str) -> set[str]:
    """The distributions ``pip install 'roomkit-hitl[extra]'`` brings, read from the
    metadata of those installed here."""
    extras = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(text) for text in extras["optional-dependencies"][extra]]
    seen: set[str] = set()
    while wanted:
        requirement = wanted.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            nested = Requirement(text)
            extras = ["", *requirement.extras]
            if nested.marker is None or any(nested.marker.evaluate({"extra": e}) for e in extras):
                wanted.append(nested)
    return seen


def test_each_extra_installs_the_libraries_its_guarded_imports_need() -> None:
    """An import that names an extra when its library is missing is one that extra installs:
    the error's advice, followed, fixes the error."""
    providers = metadata.packages_distributions()
    wrong = [
        (where, extra, top)
        for where, extra, top in guarded_imports()
        if not {canonicalize_name(dist) for dist in providers.get(top, [])} & installed_by(extra)
    ]
    assert guarded_imports()
    assert wrong == []
