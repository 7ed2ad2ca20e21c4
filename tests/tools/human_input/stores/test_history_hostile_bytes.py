"""A history entry no store writes, left where the store keeps it (by a damaged disk, another
tool, or a hand with write access): ``handler.history(id)`` raises a
:class:`~roomkit.core.exceptions.CorruptRecordError` naming the request and the entry, as
``roomkit audit verify`` names it, never a ``UnicodeDecodeError``, a JSON error or a store
said to be unavailable; and the request still settles, its entries appended after that one.

SQLite keeps any bytes a hand edit casts to text and Redis any bytes at all; PostgreSQL keeps
UTF-8 text only, so there an entry can be no JSON but never bytes that are not UTF-8.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from redis.asyncio import Redis
from tests.tools.human_input.stores.postgres_kit import PostgresBackend
from tests.tools.human_input.stores.store_kit import (
    Backend,
    FakeClock,
    RedisBackend,
    SQLiteBackend,
)

from roomkit import HumanInputHandler
from roomkit.core.exceptions import CorruptRecordError
from roomkit.stores import check_trail, new_entry


async def _asked(backend: Backend) -> str:
    """A question with two entries: ``created`` and ``shown``."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        asked = await handler.create("Ask", {"question": "?"}, room_id="r1")
        await handler.record(asked.pending_id, new_entry("shown", surface="desk"))
        return asked.pending_id


async def _overwrite(backend: Backend, pending_id: str, seq: int, raw: bytes) -> None:
    """Store ``raw`` as the request's entry ``seq``, where the store keeps it."""
    if isinstance(backend, SQLiteBackend):
        with closing(sqlite3.connect(backend.path)) as db, db:
            db.execute(
                "UPDATE roomkit_history SET entry = CAST(? AS TEXT) "
                "WHERE pending_id = ? AND seq = ?",
                (raw, pending_id, seq),
            )
    elif isinstance(backend, RedisBackend):
        client = Redis.from_url(backend.url)
        try:
            await client.lset(f"{backend.prefix}:h:{pending_id}", seq, raw)  # type: ignore[arg-type]
        finally:
            await client.aclose()
    else:
        assert isinstance(backend, PostgresBackend)
        async with await psycopg.AsyncConnection.connect(backend.dsn, autocommit=True) as pg:
            await pg.execute(
                f'UPDATE "{backend.schema}".roomkit_history SET entry = %s '
                "WHERE pending_id = %s AND seq = %s",
                (raw.decode(), pending_id, seq),
            )


async def _history_error(backend: Backend, pending_id: str) -> str:
    async with backend.make() as store:
        with pytest.raises(CorruptRecordError) as raised:
            await HumanInputHandler(store=store).history(pending_id)
    return str(raised.value)


async def test_an_entry_of_bytes_that_are_not_utf8_is_named(backend: Backend) -> None:
    """The request and the entry are named, with the command that checks the trail."""
    if isinstance(backend, PostgresBackend):
        pytest.skip("PostgreSQL keeps only UTF-8 text")
    pending_id = await _asked(backend)
    await _overwrite(backend, pending_id, 1, b'{"\xff":1}')
    said = await _history_error(backend, pending_id)
    assert f"the history of {pending_id!r} cannot be read at entry 1: it is not UTF-8" in said
    assert "roomkit audit verify" in said


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"{not json", "it is not JSON"),
        (b"[1]", "it is not a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "it is JSON nested too deeply to read"),
        # PostgreSQL's escape for a text holding NUL, before JSON nested too deeply.
        (b"\x01" + b"[" * 100_000 + b"]" * 100_000, "it is not JSON"),
    ],
)
async def test_an_entry_that_is_no_json_object_is_named(
    backend: Backend, raw: bytes, why: str
) -> None:
    """On every durable store, PostgreSQL too, as ``roomkit audit verify`` says it."""
    pending_id = await _asked(backend)
    await _overwrite(backend, pending_id, 0, raw)
    said = await _history_error(backend, pending_id)
    assert re.search(rf"history of {re.escape(repr(pending_id))} cannot be read at entry 0", said)
    assert why in said, said


async def test_the_entries_are_read_as_before(backend: Backend) -> None:
    """Entries a store wrote, non-ASCII ones too, read back whole."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        asked = await handler.create("Ask", {"question": "¿qué? 問"}, room_id="r1")
        await handler.record(asked.pending_id, new_entry("shown", surface="bureau é"))
        history = await handler.history(asked.pending_id)
    assert [entry["seq"] for entry in history] == [0, 1]
    assert history[1]["surface"] == "bureau é"


async def test_a_request_whose_last_entry_is_not_utf8_still_settles(backend: Backend) -> None:
    """The settle's entries are appended after it, and the check names where the chain breaks."""
    if isinstance(backend, PostgresBackend):
        pytest.skip("PostgreSQL keeps only UTF-8 text")
    pending_id = await _asked(backend)
    await _overwrite(backend, pending_id, 1, b'{"\xff":1}')
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        assert await handler.aresolve(pending_id, "yes", by="bob")
        assert await handler.wait(pending_id) == "yes"
        trail = await store.trail.read()
    assert len(trail.chains[pending_id]) == 3
    problems = check_trail(trail, None, now=time.time()).problems
    assert problems == [f"the history of {pending_id!r} breaks at entry 1: it is not UTF-8 text"]


async def test_an_entry_numbered_with_text_fails_its_request_alone(tmp_path: Path) -> None:
    """SQLite keeps text a hand edit leaves in ``seq``: the request's reads, appends, settles
    and timeout say so, and leave it as it was; the other requests carry on.

    PostgreSQL keeps ``seq`` in an integer column, and Redis numbers entries by their place
    in a list: neither can hold such an entry.
    """
    backend = SQLiteBackend(tmp_path / "pending.db")
    clock = FakeClock()
    async with backend.make(clock=clock) as store:
        handler = HumanInputHandler(store=store)
        broken = (
            await handler.create("Ask", {"question": "?"}, room_id="r1", timeout=60)
        ).pending_id
        await handler.record(broken, new_entry("shown", surface="desk"))
        sound = (await handler.create("Ask", {"question": "?"}, room_id="r1")).pending_id
    with closing(sqlite3.connect(backend.path)) as db, db:
        db.execute(
            "UPDATE roomkit_history SET seq = 'x' WHERE pending_id = ? AND seq = 1", (broken,)
        )
    says = f"the history of {broken!r} cannot be read: an entry is numbered 'x'"
    async with backend.make(clock=clock) as store:
        handler = HumanInputHandler(store=store)
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: handler.history(broken),
            lambda: handler.record(broken, new_entry("shown", surface="desk")),
            lambda: handler.aresolve(broken, "yes", by="bob"),
        ]
        for call in calls:
            with pytest.raises(CorruptRecordError, match=re.escape(says)) as raised:
                await call()
            assert "roomkit audit verify" in str(raised.value)
        assert await backend.stored_status(broken) == "pending"
        # Its deadline passes: its wait ends with the same error, and the sweeper goes on.
        clock.advance(120)
        with pytest.raises(CorruptRecordError, match=re.escape(says)):
            await handler.wait(broken)
        waiting = asyncio.create_task(handler.wait(sound))
        assert await handler.aresolve(sound, "yes", by="bob")
        assert await waiting == "yes"
        assert [entry["seq"] for entry in await handler.history(sound)] == [0, 1]
    await backend.close()
