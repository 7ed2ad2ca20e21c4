"""A ``roomkit`` command loads what it runs on and nothing more.

Each runs in a fresh interpreter, as ``python -m roomkit`` does, and reports the modules it
then holds: a command on a SQLite store loads that back end alone, never the memory, Redis
or PostgreSQL one, and no command here loads a channel, a provider, the tools or the desk.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.cli.test_help_loads import UNUSED
from tests.fresh_python import fresh_python

from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

# Runs `python -m roomkit` with argv, then prints its exit status and the modules it holds.
_RUN_THEN_MODULES = """
import json, runpy, sys
sys.argv = ["roomkit", *json.loads(sys.argv[1])]
try:
    runpy.run_module("roomkit", run_name="__main__", alter_sys=True)
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

ON_A_STORE = (
    *(package for package in UNUSED if package not in {"roomkit.stores", "pydantic"}),
    "roomkit.stores.memory",
    "roomkit.stores.redis",
    "roomkit.stores.postgres",
    "redis",
)
"""What a command on a SQLite store loads none of: it runs on that back end and the
history's models, which need pydantic."""


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    monkeypatch.delenv("ROOMKIT_DESK_SECRET", raising=False)


def _run(argv: list[str]) -> tuple[int, list[str]]:
    """The exit status of ``roomkit *argv`` in a fresh interpreter, and its modules."""
    done = fresh_python("-c", _RUN_THEN_MODULES, json.dumps(argv))
    assert done.stdout, done.stderr
    ran = json.loads(done.stdout.splitlines()[-1])  # after the command's own output
    return ran["code"], ran["modules"]


def _among(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    """The modules of ``modules`` that are ``packages`` or lie inside them."""
    below = tuple(f"{package}." for package in packages)
    return [name for name in modules if name in packages or name.startswith(below)]


def _answered_store(path: Path) -> None:
    """A SQLite store at ``path`` with one request asked and answered."""

    async def make() -> None:
        async with SQLiteStore(path) as store:
            handler = HumanInputHandler(store=store)
            request = await handler.create("ask_human", {"question": "Ship?"}, actor_id="ann")
            assert await handler.aresolve(request.pending_id, "yes", by="ann")
            assert await handler.wait(request.pending_id) == "yes"

    asyncio.run(make())


@pytest.mark.parametrize(
    "command", [["audit", "verify"], ["audit", "export"], ["grants", "list"]], ids=" ".join
)
def test_a_command_on_a_sqlite_store_loads_that_store_alone(
    command: list[str], tmp_path: Path
) -> None:
    database = tmp_path / "desk.db"
    _answered_store(database)
    argv = [*command, "--store", f"sqlite:///{database}"]
    code, modules = _run([*argv, "--data-dir", str(tmp_path)] if command[0] == "audit" else argv)
    assert code == 0
    assert "roomkit.stores.sqlite" in modules
    assert _among(modules, ON_A_STORE) == []


def test_issuing_a_token_loads_no_part_of_the_kit(tmp_path: Path) -> None:
    code, modules = _run(["token", "alice", "--data-dir", str(tmp_path)])
    assert code == 0
    assert "roomkit.auth.tokens" in modules
    assert _among(modules, UNUSED) == []


def test_listing_the_desk_s_questions_loads_its_http_client_alone() -> None:
    """``roomkit pending list`` on a desk it cannot reach still loads only httpx."""
    code, modules = _run(["pending", "list", "--url", "http://127.0.0.1:9"])
    assert code != 0
    assert "httpx" in modules
    assert _among(modules, tuple(p for p in UNUSED if p != "httpx")) == []


def test_revoking_on_a_sqlite_store_loads_that_store_alone(tmp_path: Path) -> None:
    """``roomkit revoke`` writes to the store's own ledger: it loads no part of the tools."""
    database = tmp_path / "desk.db"
    _answered_store(database)
    argv = ["revoke", "--actor", "alice", "--store", f"sqlite:///{database}"]
    code, modules = _run([*argv, "--data-dir", str(tmp_path)])
    assert code == 0
    assert "roomkit.stores.sqlite" in modules
    assert _among(modules, ON_A_STORE) == []
