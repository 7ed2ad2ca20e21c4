"""Histories whose heads were never signed (written before this version, or by a process
without the audit key): verify names them, and ``roomkit audit checkpoint --adopt`` signs
them as they stand, once they hold, so that every later edit shows."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
import redis
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.trail_places import (
    KEY,
    TRAIL_DB,
    Place,
    PostgresPlace,
    RedisPlace,
    SQLitePlace,
    answered_by_bob,
    postgres_database,
)

from roomkit.cli import main


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def place(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Place]:
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path / "no-data-dir"))
    if request.param == "sqlite":
        yield SQLitePlace(tmp_path / "old.db")
    elif request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        yield PostgresPlace(postgres_database(server.dsn))
    else:
        redis_server: RedisServer = request.getfixturevalue("redis_server")
        url = redis_server.url.rsplit("/", 1)[0] + f"/{TRAIL_DB}"
        with closing(redis.Redis.from_url(url)) as raw:
            raw.flushdb()
        yield RedisPlace(url)


def answered(place: Place) -> list[str]:
    """Two questions asked and answered by a process without the key; their ids."""

    async def work() -> list[str]:
        async with place.open() as store:
            return await answered_by_bob(store)

    return asyncio.run(work())


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def upgraded(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """Verify refuses the store of an earlier version, left as it was, until a store that
    writes (a desk's, an agent's) opens it once and brings it up to date."""
    code, _, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 2
    assert "made by an earlier version" in err

    async def work() -> None:
        async with place.open():
            pass

    asyncio.run(work())


def named_then_adopted(place: Place, old: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Verify names the history without a signed head; once adopted, the trail holds."""
    code, _, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 1
    assert f"the history of {old!r} has no signed head" in err
    assert run(capsys, "audit", "checkpoint", "--adopt", "--store", place.url)[0] == 0
    assert run(capsys, "audit", "verify", "--store", place.url)[0] == 0


def test_unsigned_histories_are_named_until_adopted_then_kept(
    place: Place, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = answered(place)
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    code, _, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 1
    assert f"the history of {first!r} has no signed head" in err
    # A history that does not hold is not vouched for.
    rows = place.rows(second)
    place.set_rows(second, [(0, rows[0][1].replace('"Ask"', '"Asked"')), rows[1]])
    code, out, err = run(capsys, "audit", "checkpoint", "--adopt", "--store", place.url)
    assert code == 0
    assert "Signed 1 head as it stands" in out
    assert "1 history does not hold and was left" in err
    place.set_rows(second, rows)
    code, out, err = run(capsys, "audit", "checkpoint", "--adopt", "--store", place.url)
    assert (code, err) == (0, "")
    assert "Signed 1 head as it stands\nWrote checkpoint #1 of 1 changed head" in out
    code, out, err = run(capsys, "audit", "verify", "--store", place.url)
    assert (code, err) == (0, "")
    place.set_rows(first, place.rows(first)[:1])
    code, _, err = run(capsys, "audit", "verify", "--store", place.url)
    assert code == 1
    assert f"the history of {first!r} holds 1 entries and its signed head says 2" in err


def test_a_sqlite_file_from_before_signed_heads_gains_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    place = SQLitePlace(tmp_path / "old.db")
    (old, _) = answered(place)
    with closing(sqlite3.connect(place.path)) as db, db:
        db.execute("DROP TABLE roomkit_checkpoints")
        db.execute("DROP INDEX IF EXISTS roomkit_chains_unchecked")
        for column in ("length", "head", "epoch", "mac", "checked"):
            db.execute(f"ALTER TABLE roomkit_chains DROP COLUMN {column}")
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    upgraded(place, capsys)
    named_then_adopted(place, old, capsys)


def test_postgres_tables_of_version_6_gain_the_signed_heads(
    postgres_server: PostgresServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    place = PostgresPlace(postgres_database(postgres_server.dsn))
    (old, _) = answered(place)
    with psycopg.connect(place.url, autocommit=True) as db:
        db.execute("DROP TABLE roomkit_checkpoints")
        db.execute(
            "ALTER TABLE roomkit_chains DROP COLUMN length, DROP COLUMN head, "
            "DROP COLUMN epoch, DROP COLUMN mac, DROP COLUMN checked"
        )
        # Version 6 came before the change log (version 8) too.
        db.execute("ALTER TABLE roomkit_pending DROP COLUMN changed_tx")
        db.execute("DELETE FROM roomkit_schema WHERE version >= 7")
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    upgraded(place, capsys)
    named_then_adopted(place, old, capsys)
    with psycopg.connect(place.url) as db:
        versions = db.execute("SELECT version FROM roomkit_schema ORDER BY version").fetchall()
    assert versions[-4:] == [(7,), (8,), (9,), (10,)]
