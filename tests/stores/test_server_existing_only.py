"""``create=False`` on the servers: ``roomkit audit`` and ``roomkit grants`` on a PostgreSQL
database or a Redis database that holds no roomkit store refuse it in one line (exit 2) and
create nothing there, not a table, not a key; on one that holds the store they work."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from redis import Redis
from tests.postgres_server import PASSWORD
from tests.stores.read_only import READ_ONLY_COMMANDS

from roomkit.cli import main
from roomkit.core.exceptions import StoreNotFoundError
from roomkit.stores import close_stores, open_url


@pytest.fixture(autouse=True)
def audit_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", "a-key-long-enough-to-sign-with")


def _tables(dsn: str) -> list[tuple[str, str]]:
    """Every schema and table of the database, besides the server's own."""
    with psycopg.connect(dsn) as db:
        rows = db.execute(
            "SELECT n.nspname, coalesce(c.relname, '') FROM pg_namespace n "
            "LEFT JOIN pg_class c ON c.relnamespace = n.oid "
            "WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' "
            "ORDER BY 1, 2"
        ).fetchall()
    return [(str(schema), str(table)) for schema, table in rows]


def _keys(url: str) -> tuple[int, list[bytes]]:
    with Redis.from_url(url) as raw:
        return int(raw.dbsize()), sorted(raw.keys("*"))


@pytest.mark.parametrize("kind", ["empty", "foreign"])
@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_postgres_without_the_store_is_refused_and_left_as_it_was(
    kind: str, command: list[str], database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "foreign":
        with psycopg.connect(database) as db:
            db.execute("CREATE TABLE notes (body text)")
    before = _tables(database)
    assert main([*command, "--store", database]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert " holds no roomkit store (it was left as it was)" in err
    assert "--store" in err
    assert PASSWORD not in err, "the password is not shown"
    assert _tables(database) == before


@pytest.mark.parametrize("kind", ["empty", "foreign"])
@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_redis_without_the_store_is_refused_and_left_as_it_was(
    kind: str, command: list[str], redis_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "foreign":
        with Redis.from_url(redis_database) as raw:
            raw.set("session:1", "kept")
            raw.set("roomkit:other", "a key under the prefix that no store writes")
    before = _keys(redis_database)
    assert main([*command, "--store", redis_database]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("roomkit: redis://")
    assert " holds no roomkit store (it was left as it was)" in err
    assert _keys(redis_database) == before


@pytest.mark.parametrize("server", ["postgres", "redis"])
def test_a_database_holding_the_store_is_read_as_usual(
    server: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store its desk made (its first use by a desk or an agent) opens without creating."""
    url = request.getfixturevalue("database" if server == "postgres" else "redis_database")
    assert main(["audit", "checkpoint", "--store", url]) == 2  # nothing there yet
    capsys.readouterr()

    async def make() -> None:
        requests, rooms = open_url(url)
        try:
            assert await rooms.get_room("none") is None
            assert await requests.fetch("none") is None
        finally:
            await close_stores(requests, rooms)

    asyncio.run(make())
    assert main(["audit", "verify", "--store", url]) == 0
    assert main(["grants", "list", "--store", url]) == 0
    assert capsys.readouterr().out.endswith("No grants\n")


async def test_open_url_raises_store_not_found_on_both_servers(
    database: str, redis_database: str
) -> None:
    for url in (database, redis_database):
        requests, rooms = open_url(url, create=False)
        try:
            with pytest.raises(StoreNotFoundError, match="holds no roomkit store"):
                await requests.fetch("x")
        finally:
            await close_stores(requests, rooms)
    assert _tables(database) == [("public", "")]
    assert _keys(redis_database) == (0, [])
