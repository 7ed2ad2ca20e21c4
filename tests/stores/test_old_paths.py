"""Every import path the stores had before they moved to ``roomkit.stores`` still works.

Each old module gives the very objects of its new home, public names and the private ones
the tests used alike; an old path in ``roomkit.core`` imports its new home only when a name
is first read from it. The old paths are kept for users: the package, its benchmarks and its
examples import from the new homes.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MOVED = [
    ("roomkit.core._json_fields", "roomkit.stores._json_fields"),
    ("roomkit.core._postgres_rooms", "roomkit.stores.postgres._room_sql"),
    ("roomkit.core._redis_rooms", "roomkit.stores.redis._room_records"),
    ("roomkit.core._sql_rooms", "roomkit.stores._sql_rooms"),
    ("roomkit.core._sqlite_rows", "roomkit.stores._sql_rows"),
    ("roomkit.core.postgres_link", "roomkit.stores.postgres._link"),
    ("roomkit.core.postgres_store", "roomkit.stores.postgres._rooms"),
    ("roomkit.core.redis_link", "roomkit.stores.redis._link"),
    ("roomkit.core.redis_store", "roomkit.stores.redis._rooms"),
    ("roomkit.core.sqlite_connect", "roomkit.stores.sqlite._connect"),
    ("roomkit.core.sqlite_store", "roomkit.stores.sqlite._rooms"),
    ("roomkit.tools.human_input.stores._audit_keys", "roomkit.stores._audit_keys"),
    ("roomkit.tools.human_input.stores._batching", "roomkit.stores._batching"),
    ("roomkit.tools.human_input.stores._checkpoints", "roomkit.stores._checkpoints"),
    ("roomkit.tools.human_input.stores._durable_base", "roomkit.stores._durable_base"),
    ("roomkit.tools.human_input.stores._history", "roomkit.stores._history"),
    ("roomkit.tools.human_input.stores._ledger", "roomkit.stores._ledger"),
    ("roomkit.tools.human_input.stores._listener_feed", "roomkit.stores._listener_feed"),
    ("roomkit.tools.human_input.stores._memory_trail", "roomkit.stores.memory._trail"),
    ("roomkit.tools.human_input.stores._outbox_postgres", "roomkit.stores.postgres._outbox"),
    ("roomkit.tools.human_input.stores._outbox_redis", "roomkit.stores.redis._outbox"),
    ("roomkit.tools.human_input.stores._outbox_sqlite", "roomkit.stores.sqlite._outbox"),
    ("roomkit.tools.human_input.stores._postgres_batch", "roomkit.stores.postgres._batch"),
    ("roomkit.tools.human_input.stores._postgres_changes", "roomkit.stores.postgres._changes"),
    ("roomkit.tools.human_input.stores._postgres_clock", "roomkit.stores.postgres._clock"),
    ("roomkit.tools.human_input.stores._postgres_feed", "roomkit.stores.postgres._feed"),
    ("roomkit.tools.human_input.stores._postgres_history", "roomkit.stores.postgres._history"),
    ("roomkit.tools.human_input.stores._postgres_insert", "roomkit.stores.postgres._insert"),
    ("roomkit.tools.human_input.stores._postgres_listen", "roomkit.stores.postgres._listen"),
    ("roomkit.tools.human_input.stores._postgres_schema", "roomkit.stores.postgres._schema"),
    ("roomkit.tools.human_input.stores._postgres_text", "roomkit.stores.postgres._text"),
    ("roomkit.tools.human_input.stores._postgres_trail", "roomkit.stores.postgres._trail"),
    ("roomkit.tools.human_input.stores._postgres_vote", "roomkit.stores.postgres._votes"),
    ("roomkit.tools.human_input.stores._quorum", "roomkit.stores._quorum"),
    ("roomkit.tools.human_input.stores._records", "roomkit.stores._records"),
    ("roomkit.tools.human_input.stores._redis_batch", "roomkit.stores.redis._batch"),
    ("roomkit.tools.human_input.stores._redis_changes", "roomkit.stores.redis._changes"),
    ("roomkit.tools.human_input.stores._redis_feed", "roomkit.stores.redis._feed"),
    ("roomkit.tools.human_input.stores._redis_history", "roomkit.stores.redis._history"),
    ("roomkit.tools.human_input.stores._redis_ledger", "roomkit.stores.redis._ledger"),
    ("roomkit.tools.human_input.stores._redis_scripts", "roomkit.stores.redis._scripts"),
    ("roomkit.tools.human_input.stores._redis_trail", "roomkit.stores.redis._trail"),
    ("roomkit.tools.human_input.stores._redis_vote", "roomkit.stores.redis._votes"),
    ("roomkit.tools.human_input.stores._sql_columns", "roomkit.stores._sql_columns"),
    ("roomkit.tools.human_input.stores._sqlite_batch", "roomkit.stores.sqlite._batch"),
    ("roomkit.tools.human_input.stores._sqlite_feed", "roomkit.stores.sqlite._feed"),
    ("roomkit.tools.human_input.stores._sqlite_history", "roomkit.stores.sqlite._history"),
    ("roomkit.tools.human_input.stores._sqlite_ledger", "roomkit.stores.sqlite._ledger"),
    ("roomkit.tools.human_input.stores._sqlite_link", "roomkit.stores.sqlite._link"),
    ("roomkit.tools.human_input.stores._sqlite_schema", "roomkit.stores.sqlite._schema"),
    ("roomkit.tools.human_input.stores._sqlite_trail", "roomkit.stores.sqlite._trail"),
    ("roomkit.tools.human_input.stores._sqlite_wake", "roomkit.stores.sqlite._wake"),
    ("roomkit.tools.human_input.stores._trail", "roomkit.stores._trail"),
    ("roomkit.tools.human_input.stores._trail_check", "roomkit.stores._trail_check"),
    ("roomkit.tools.human_input.stores.base", "roomkit.stores.base"),
    ("roomkit.tools.human_input.stores.memory", "roomkit.stores.memory._requests"),
    ("roomkit.tools.human_input.stores.outbox", "roomkit.stores.outbox"),
    ("roomkit.tools.human_input.stores.postgres", "roomkit.stores.postgres._requests"),
    ("roomkit.tools.human_input.stores.redis", "roomkit.stores.redis._requests"),
    ("roomkit.tools.human_input.stores.sqlite", "roomkit.stores.sqlite._requests"),
]
"""Each old module path, and its new home."""

OLD = {old for old, _ in MOVED} | {"roomkit.tools.human_input.stores"}
"""Every old module, the old package with them."""


def _old_imports(path: Path) -> list[str]:
    """The old modules an import statement of ``path`` names, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name in OLD]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            named = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            found += [name for name in named if name in OLD]
    return found


def _names(module: object) -> list[str]:
    return [name for name in vars(module) if not (name.startswith("__") and name.endswith("__"))]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_an_old_path_gives_the_objects_of_its_new_home(old: str, new: str) -> None:
    moved = importlib.import_module(old)
    home = importlib.import_module(new)
    names = _names(home)
    assert names
    assert [name for name in names if getattr(moved, name) is not getattr(home, name)] == []


def test_an_old_path_names_the_new_home_of_a_missing_name() -> None:
    moved = importlib.import_module("roomkit.core.redis_link")
    with pytest.raises(AttributeError, match=re.escape("roomkit.stores.redis._link")):
        _ = moved.no_such_name


def test_the_old_package_gives_the_objects_of_roomkit_stores() -> None:
    import roomkit.stores
    import roomkit.tools.human_input.stores as old

    assert old.__all__
    assert [
        name for name in old.__all__ if getattr(old, name) is not getattr(roomkit.stores, name)
    ] == []
    assert set(old.__all__) <= set(roomkit.stores.__all__)


def test_the_desk_opens_stores_with_open_url() -> None:
    import roomkit.stores
    from roomkit.desk.stores import close_stores, open_stores

    assert open_stores is roomkit.stores.open_url
    assert close_stores is roomkit.stores.close_stores


def test_an_old_core_path_imports_its_new_home_only_when_used() -> None:
    """``import roomkit.core.<old>`` loads no database client; reading a name does."""
    probe = (
        "import sys\n"
        "import roomkit.core.postgres_link, roomkit.core.redis_store, roomkit.core.sqlite_connect\n"
        "before = sorted(n for n in ('psycopg', 'redis', 'aiosqlite') if n in sys.modules)\n"
        "roomkit.core.redis_store.RedisRoomStore\n"
        "print(before, 'redis' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["[]", "True"]


def test_the_project_imports_the_stores_from_their_new_home() -> None:
    """The old modules are for users: the kit, its benchmarks and examples import none."""
    paths = [
        *ROOT.glob("src/roomkit/**/*.py"),
        *ROOT.glob("bench/*.py"),
        *ROOT.glob("examples/*.py"),
    ]
    old_modules = {ROOT.joinpath("src", *name.split(".")) for name in OLD}
    users = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in paths
        if path.with_suffix("") not in old_modules and path.parent not in old_modules
        for name in _old_imports(path)
    }
    assert sorted(users) == []
