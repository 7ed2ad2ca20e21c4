"""A SQLite store's grants are a part of the store: its writes, its sessions, its file."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from roomkit.core.exceptions import StoreClosedError, StoreUnavailableError
from roomkit.models.pending_input import PendingInput
from roomkit.stores.grants import Grant
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input._granting import inserts_ungranted


def _request(pending_id: str) -> PendingInput:
    return PendingInput(
        pending_id=pending_id,
        tool_name="pay",
        arguments={"amount": 40},
        room_id="room-1",
        tool_call_id=f"call-{pending_id}",
        channel_id="ai-1",
    )


def _grant(grant_id: str) -> Grant:
    return Grant(
        grant_id=grant_id,
        tool="pay",
        granted_by=("ann",),
        expires_at=4_000_000_000.0,
        digest="d" * 64,
        actor_id="bob",
        max_uses=1,
    )


async def test_grants_and_requests_written_together_all_land(tmp_path: Path) -> None:
    """Grant writes share the store's write transactions with its requests' writes."""
    async with SQLiteStore(tmp_path / "store.db") as store:
        results = await asyncio.gather(
            *(store.grants.add(_grant(f"g-{n}")) for n in range(5)),
            *(store.insert(_request(f"p-{n}")) for n in range(5)),
        )
        assert [grant.grant_id for grant in results[:5]] == [f"g-{n}" for n in range(5)]
        used = await asyncio.gather(*(store.grants.use("g-0") for _ in range(3)))
        assert sum(grant is not None for grant in used) == 1
        assert len(await store.list_pending()) == 5
    async with SQLiteStore(tmp_path / "store.db") as again:
        stored = await again.grants.get("g-0")
        assert stored is not None
        assert stored.uses == 1


async def test_a_grants_table_the_store_cannot_use_fails_only_the_grants(
    tmp_path: Path,
) -> None:
    """A ``roomkit_grants`` made by something else fails the grants' calls with a message
    saying what to do, and the requests written at the same moment are stored."""
    path = tmp_path / "broken.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE roomkit_grants (grant_id TEXT PRIMARY KEY)")
    async with SQLiteStore(path) as store:
        added, inserted = await asyncio.gather(
            store.grants.add(_grant("g-1")), store.insert(_request("p-1")), return_exceptions=True
        )
        assert isinstance(added, StoreUnavailableError)
        assert "roomkit_grants" in str(added)
        assert "move it aside" in str(added)
        assert not isinstance(inserted, BaseException)
        assert inserted[1] is True
        with pytest.raises(StoreUnavailableError, match="roomkit_grants"):
            await store.grants.list()
        assert await store.fetch("p-1") is not None


async def test_the_grants_of_a_closed_store_are_refused(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    await store.grants.add(_grant("g-1"))
    await store.close()
    with pytest.raises(StoreClosedError):
        await store.grants.get("g-1")
    with pytest.raises(StoreClosedError):
        await store.grants.use("g-1")


async def test_an_insert_that_looks_for_grants_writes_nothing_when_one_is_live(
    tmp_path: Path,
) -> None:
    """``insert_ungranted`` reads the live grants on the request's tool in its own write:
    with one live (made by another store on the file), nothing is written; with none live
    (a grant on another tool, used up, revoked), the request is inserted."""
    path = tmp_path / "store.db"
    async with SQLiteStore(path) as store, SQLiteStore(path) as other:
        fresh = await store.insert_ungranted(_request("before-any-grant"))
        await other.grants.add(_grant("g-live"))
        refused = await store.insert_ungranted(_request("p-live"))
        assert await other.grants.use("g-live") is not None  # its one use: used up
        await other.grants.add(replace(_grant("g-revoked"), max_uses=None))
        await other.grants.revoke("g-revoked")
        await other.grants.add(replace(_grant("g-other"), tool="refund"))
        after = await store.insert_ungranted(_request("p-none-live"))

        assert fresh is not None
        assert fresh[1] is True
        assert refused is None
        assert await store.fetch("p-live") is None
        assert after is not None
        assert after[0].pending_id == "p-none-live"


async def test_an_insert_that_looks_for_grants_in_a_foreign_table_writes_nothing(
    tmp_path: Path,
) -> None:
    """A ``roomkit_grants`` table the grants cannot read may hold a grant: the insert that
    looks writes nothing, and the grants' own calls say what is wrong with the table."""
    path = tmp_path / "broken.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE roomkit_grants (grant_id TEXT PRIMARY KEY)")
    async with SQLiteStore(path) as store:
        assert await store.insert_ungranted(_request("p-1")) is None
        assert await store.fetch("p-1") is None
        inserted, created = await store.insert(_request("p-1"))
        assert created is True
        assert inserted.pending_id == "p-1"


async def test_an_insert_that_looks_for_grants_finds_none_once_their_table_is_gone(
    tmp_path: Path,
) -> None:
    """The look for grants reads the table once it has found it; when the table goes (the
    file's grants dropped by another connection), the next look finds no grant and the
    request is inserted, and a table made again is read again."""
    path = tmp_path / "store.db"
    async with SQLiteStore(path) as store:
        await store.grants.add(_grant("g-live"))
        assert await store.insert_ungranted(_request("p-granted")) is None
        with closing(sqlite3.connect(path)) as db:
            db.execute("DROP TABLE roomkit_grants")
        gone = await store.insert_ungranted(_request("p-gone"))
        with closing(sqlite3.connect(path)) as db, db:
            db.execute("CREATE TABLE roomkit_grants (grant_id TEXT PRIMARY KEY)")
        foreign = await store.insert_ungranted(_request("p-foreign"))

        assert gone is not None
        assert gone[1] is True
        assert foreign is None
        assert await store.fetch("p-foreign") is None


def test_whether_a_store_inserts_ungranted_is_decided_by_its_class() -> None:
    """A SQLite store looks for grants in its insert; a store without that write does not."""

    class Plain:
        async def insert(self, request: PendingInput) -> None:
            return None

    sqlite_store = SQLiteStore(":memory:")

    assert inserts_ungranted(sqlite_store) is True
    assert inserts_ungranted(Plain()) is False
    assert inserts_ungranted(sqlite_store) is True
