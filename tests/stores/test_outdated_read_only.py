"""A store made by an earlier version, opened only to read (``create=False``: ``roomkit audit``
and ``roomkit grants``), is left byte for byte as it was: a SQLite file or PostgreSQL tables
are refused in one line naming the command that brings them up to date (exit 2), not
migrated; Redis keeps no schema, and its keys are read as they are."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from redis import Redis
from tests.postgres_server import PASSWORD
from tests.stores.read_only import READ_ONLY_COMMANDS

from roomkit import HumanInputHandler
from roomkit.cli import main
from roomkit.core.exceptions import StoreFormatError, StoreOutdatedError
from roomkit.stores import close_stores, open_url
from roomkit.stores.sqlite import SQLiteStore


@pytest.fixture(autouse=True)
def audit_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", "a-key-long-enough-to-sign-with")
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path / "no-data-dir"))


def _answered(url: str) -> None:
    """A question asked and answered in the store ``url`` names, made as a desk makes it."""

    async def work() -> None:
        requests, rooms = open_url(url)
        try:
            handler = HumanInputHandler(store=requests)
            asked = await handler.create("Ask", {"question": "?"})
            assert await handler.aresolve(asked.pending_id, "yes", by="bob")
        finally:
            await close_stores(requests, rooms)

    asyncio.run(work())


def _refused(command: list[str], url: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``command`` on ``url``: refused in one line (exit 2); the line."""
    assert main([*command, "--store", url]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "holds a roomkit store made by an earlier version" in err
    assert "it was left as it was" in err
    assert "Start `roomkit desk` once with the same --store" in err
    return err


# -- SQLite ---------------------------------------------------------------------------------

EARLIER_FILES = {
    "before signed heads": (
        [
            "DROP TABLE roomkit_checkpoints",
            *(
                f"ALTER TABLE roomkit_chains DROP COLUMN {column}"
                for column in ("length", "head", "epoch", "mac", "checked")
            ),
        ],
        "no table roomkit_checkpoints",
    ),
    "before quorums": (
        [
            f'ALTER TABLE roomkit_pending DROP COLUMN "{column}"'
            for column in ("quorum", "veto", "voters", "votes")
        ],
        "no column quorum, no column veto, no column voters and 1 more",
    ),
}
EARLIER_INDEXES = [
    "DROP INDEX roomkit_pending_open",
    "CREATE INDEX roomkit_pending_by_status ON roomkit_pending (status, seq)",
]
"""A file of an earlier version whose tables are today's: only its indexes differ."""


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def _earlier_sqlite_file(folder: Path, kind: str) -> Path:
    path = folder / "earlier.db"
    _answered(f"sqlite:///{path}")
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        for statement in EARLIER_INDEXES if kind == "indexes" else EARLIER_FILES[kind][0]:
            db.execute(statement)
    return path


@pytest.mark.parametrize("kind", sorted(EARLIER_FILES))
@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_an_earlier_sqlite_file_is_refused_and_left_byte_for_byte(
    kind: str, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    path = _earlier_sqlite_file(folder, kind)
    before = _files(folder)
    err = _refused(command, f"sqlite:///{path}", capsys)
    assert err.startswith(f"roomkit: {path} holds")
    assert f"({EARLIER_FILES[kind][1]})" in err
    assert _files(folder) == before


@pytest.mark.parametrize("command", [c for c in READ_ONLY_COMMANDS if c[1] != "checkpoint"])
def test_an_earlier_sqlite_file_whose_indexes_alone_differ_reads_as_it_is(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Indexes only make reads faster: the command reads the file, and leaves it as it was."""
    folder = tmp_path / "store"
    folder.mkdir()
    path = _earlier_sqlite_file(folder, "indexes")
    before = _files(folder)
    assert main([*command, "--store", f"sqlite:///{path}"]) == 0
    assert capsys.readouterr().err == ""
    assert _files(folder) == before


def test_an_earlier_sqlite_file_raises_outdated_then_reads_once_upgraded(
    tmp_path: Path,
) -> None:
    path = _earlier_sqlite_file(tmp_path, "before signed heads")
    before = path.read_bytes()

    async def refused() -> StoreOutdatedError:
        store = SQLiteStore(path, create=False)
        try:
            with pytest.raises(StoreOutdatedError, match="earlier version") as caught:
                await store.list_pending()
        finally:
            await store.close()
        return caught.value

    async def upgraded() -> int:
        async with SQLiteStore(path):  # a writing store brings it up to date
            pass
        async with SQLiteStore(path, create=False) as store:
            return len(await store.list_settled())

    error = asyncio.run(refused())
    assert isinstance(error, StoreFormatError)
    assert error.found == "no table roomkit_checkpoints"
    assert path.read_bytes() == before
    assert asyncio.run(upgraded()) == 1


# -- PostgreSQL -----------------------------------------------------------------------------


def _postgres_state(dsn: str) -> list[object]:
    """Every table's columns and rows, every index and the version rows, as read."""
    with psycopg.connect(dsn) as db:
        state: list[object] = db.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY 1, 2"
        ).fetchall()
        state += db.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
        tables = db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
        for (table,) in tables:
            rows = db.execute(f'SELECT * FROM public."{table}"').fetchall()
            state.append((table, sorted(map(repr, rows))))
    return state


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_earlier_postgres_tables_are_refused_and_not_migrated(
    command: list[str], database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _answered(database)
    with psycopg.connect(database, autocommit=True) as db:
        # Version 7 came before the change log.
        db.execute("ALTER TABLE roomkit_pending DROP COLUMN changed_tx")
        db.execute("DELETE FROM roomkit_schema WHERE version >= 8")
    before = _postgres_state(database)
    err = _refused(command, database, capsys)
    assert "(tables of version 7; this roomkit uses 10)" in err
    assert PASSWORD not in err, "the password is not shown"
    assert _postgres_state(database) == before
    _answered(database)  # a writing store migrates it
    assert main(["grants", "list", "--store", database]) == 0
    assert capsys.readouterr().out.endswith("No grants\n")


# -- Redis ----------------------------------------------------------------------------------


def _redis_state(url: str) -> dict[bytes, tuple[bytes | None, int]]:
    """Every key, its value as the server dumps it, and whether it expires."""
    with Redis.from_url(url) as raw:
        return {key: (raw.dump(key), raw.ttl(key) > 0) for key in sorted(raw.keys("*"))}


@pytest.mark.parametrize("command", [["audit", "verify"], ["audit", "export"], ["grants", "list"]])
def test_an_earlier_redis_store_is_read_as_it_is(
    command: list[str], redis_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Redis keeps no schema to migrate: a store from before signed heads and quorums is read
    as it is, and its keys are left as they were."""
    _answered(redis_database)
    with Redis.from_url(redis_database) as raw:
        for key in raw.keys("roomkit:ha:*"):
            raw.delete(key)
        raw.delete("roomkit:hd")
        for key in raw.keys("roomkit:p:*"):
            raw.hdel(key, "quorum", "veto", "voters", "votes")
    before = _redis_state(redis_database)
    assert main([*command, "--store", redis_database]) in (0, 1)
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    assert _redis_state(redis_database) == before
