"""Every store keeps grants: add, list, revoke, and one atomic use."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from tests.grants.support import Clock
from tests.servers.stores import StoreSite

from roomkit.core.exceptions import StoreError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.policy.grants import MAX_USES
from roomkit.stores.grants import Grant, GrantStore, KeepsGrants, MemoryGrants, SettlesGranting
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

GrantStores = Callable[[], GrantStore]
RESOLVED = PendingInputStatus.RESOLVED


def _grant(grant_id: str = "g-1", **fields: object) -> Grant:
    values: dict[str, object] = {
        "grant_id": grant_id,
        "tool": "pay",
        "granted_by": ("ann",),
        "expires_at": 1_800_000_100.0,
        "digest": "d" * 64,
        "actor_id": "bob",
        "max_uses": 2,
    }
    values.update(fields)
    return Grant(**values)  # type: ignore[arg-type]


async def test_a_grant_reads_back_as_it_was_made(grant_stores: GrantStores, clock: Clock) -> None:
    grants = grant_stores()
    schema = {"type": "object", "properties": {"amount": {"maximum": 100}}}
    made = _grant(schema=schema, digest=None, room_id="r1", quorum=2, source="p1")
    recorded = await grants.add(made)
    assert recorded.created_at == clock.now
    again = await grant_stores().get("g-1")
    assert again == recorded
    assert again is not None
    assert again.schema == schema
    assert again.granted_by == ("ann",)
    assert await grants.get("g-unknown") is None
    with pytest.raises(ValueError, match="recorded already"):
        await grants.add(made)


async def test_uses_are_counted_up_to_the_most(grant_stores: GrantStores) -> None:
    grants = grant_stores()
    await grants.add(_grant())
    first, second = await grants.use("g-1"), await grant_stores().use("g-1")
    assert first is not None
    assert first.uses == 1
    assert second is not None
    assert second.uses == 2
    assert await grants.use("g-1") is None
    stored = await grants.get("g-1")
    assert stored is not None
    assert stored.uses == 2
    assert stored.state(0.0) == "used up"


async def test_the_most_uses_a_grant_may_count_fit_every_store(grant_stores: GrantStores) -> None:
    """``max_uses`` up to 2^53 is what a scope takes: every store records it and counts
    against it (a 32-bit column refused anything past 2^31 - 1)."""
    grants = grant_stores()
    await grants.add(_grant(max_uses=MAX_USES))
    used = await grant_stores().use("g-1")
    assert used is not None
    assert (used.uses, used.max_uses) == (1, MAX_USES)
    [listed] = await grants.list(live=True)
    assert listed.max_uses == MAX_USES


@pytest.mark.parametrize("store_kind", ["postgres"])
async def test_a_postgres_grants_table_made_with_32_bit_counts_takes_the_most_uses(
    store_site: StoreSite,
) -> None:
    """A table made before the counts were 64-bit is widened at the grants' first add, its
    grants kept."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(store_site.url, autocommit=True) as db:
        await db.execute(f'CREATE SCHEMA IF NOT EXISTS "{store_site.prefix}"')
        await db.execute(
            f'CREATE TABLE "{store_site.prefix}".roomkit_grants (grant_id text PRIMARY KEY, '
            "tool text NOT NULL, expires_at double precision NOT NULL, max_uses integer, "
            "uses integer NOT NULL DEFAULT 0, created_at double precision NOT NULL, "
            "revoked_at double precision, revoked_by text, body text NOT NULL)"
        )
        await db.execute(
            f'INSERT INTO "{store_site.prefix}".roomkit_grants (grant_id, tool, expires_at, '
            "max_uses, uses, created_at, body) VALUES ('g-old', 'pay', 1800000100, 3, 1, "
            "1800000000, %s)",
            (_grant("g-old").body(),),
        )
    store = store_site.open()
    try:
        grants = store.grants
        await grants.add(_grant(max_uses=MAX_USES))
        used = await grants.use("g-1")
        assert used is not None
        assert used.max_uses == MAX_USES
        old = await grants.use("g-old")
        assert old is not None
        assert (old.uses, old.max_uses) == (2, 3)
    finally:
        await store.close()


async def test_an_expired_grant_is_not_used(grant_stores: GrantStores, clock: Clock) -> None:
    grants = grant_stores()
    await grants.add(_grant(max_uses=None))
    assert await grants.use("g-1") is not None
    clock.now = 1_800_000_100.0
    assert await grants.use("g-1") is None
    assert await grants.list(live=True) == []
    [listed] = await grants.list()
    assert listed.uses == 1
    assert listed.state(clock.now) == "expired"


async def test_a_grant_revoked_in_another_process_is_not_used(grant_stores: GrantStores) -> None:
    mine, theirs = grant_stores(), grant_stores()
    await mine.add(_grant(max_uses=None))
    assert await theirs.revoke("g-1", by="ann") is True
    assert await theirs.revoke("g-1", by="ann") is False
    assert await mine.use("g-1") is None
    revoked = await mine.get("g-1")
    assert revoked is not None
    assert revoked.revoked_by == "ann"
    assert revoked.revoked_at is not None
    assert await mine.revoke("g-unknown") is False


async def test_two_processes_racing_for_the_last_use_one_wins(grant_stores: GrantStores) -> None:
    first, second = grant_stores(), grant_stores()
    await first.add(_grant(max_uses=1))
    results = await asyncio.gather(*(store.use("g-1") for store in (first, second) * 3))
    assert sum(result is not None for result in results) == 1
    stored = await first.get("g-1")
    assert stored is not None
    assert stored.uses == 1


async def test_listing_is_newest_first_by_tool_and_state(
    grant_stores: GrantStores, clock: Clock
) -> None:
    grants = grant_stores()
    await grants.add(_grant("g-a"))
    clock.now += 1
    await grants.add(_grant("g-b", tool="refund"))
    clock.now += 1
    await grants.add(_grant("g-c"))
    await grants.revoke("g-c")
    assert [g.grant_id for g in await grants.list()] == ["g-c", "g-b", "g-a"]
    assert [g.grant_id for g in await grants.list(tool="pay")] == ["g-c", "g-a"]
    assert [g.grant_id for g in await grants.list(tool="pay", live=True)] == ["g-a"]


@pytest.mark.parametrize("tool", ["pa\x00y", "\x00"])
async def test_a_tool_name_holding_a_nul_lists_no_other_tools_grant(
    grant_stores: GrantStores, tool: str
) -> None:
    """A NUL in the tool asked for (``?tool=%00`` on the desk) names another tool: nothing."""
    grants = grant_stores()
    await grants.add(_grant("g-a"))
    assert await grants.list(tool=tool) == []
    assert await grants.list(tool=tool, live=True) == []


def test_a_durable_store_keeps_one_grants_facet(tmp_path: object) -> None:
    from pathlib import Path

    from roomkit.stores.sqlite import SQLiteStore
    from roomkit.tools.human_input import HumanInputHandler

    assert isinstance(tmp_path, Path)
    store = SQLiteStore(tmp_path / "grants.db")
    assert isinstance(store, KeepsGrants)
    assert HumanInputHandler(store=store).grants is store.grants
    assert isinstance(HumanInputHandler().grants, MemoryGrants)
    assert HumanInputHandler().grants is not HumanInputHandler().grants


async def test_sqlite_tells_a_constraint_other_than_the_id_from_a_grant_recorded_already(
    tmp_path: Path,
) -> None:
    """A refusal by a constraint the file holds (here a trigger's) quotes SQLite and says
    nothing was written; the grants added beside it are kept, and an id recorded already is
    still told apart."""
    path = tmp_path / "grants.db"
    async with SQLiteStore(path) as store:
        grants = store.grants
        await grants.add(_grant("g-before"))
        with closing(sqlite3.connect(path)) as db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_grants "
                "WHEN NEW.tool = 'wipe_disk' BEGIN SELECT RAISE(ABORT, 'no wipe_disk here'); END"
            )
            db.commit()

        with pytest.raises(StoreError) as refused:
            await grants.add(_grant("g-refused", tool="wipe_disk"))

        assert not isinstance(refused.value, ValueError)
        assert str(refused.value) == (
            "grant 'g-refused' could not be recorded, the database refused it: "
            "no wipe_disk here; nothing was written"
        )
        assert await grants.get("g-refused") is None
        await grants.add(_grant("g-after"))
        assert [grant.grant_id for grant in await grants.list()] == ["g-after", "g-before"]
        with pytest.raises(ValueError, match=r"^grant 'g-before' is recorded already$"):
            await grants.add(_grant("g-before"))


async def test_a_settle_records_its_grant_only_when_it_wins(
    store_site: StoreSite, clock: Clock
) -> None:
    """A durable store's settle that carries a grant records it, at the settle's now, with
    the outcome that wins; a settle that loses records none, and a grant whose id is
    recorded already is left as it is."""
    if not store_site.durable:
        pytest.skip("the memory store has no settle of its own")
    async with store_site.open(clock=clock) as store:
        assert isinstance(store, SettlesGranting)
        handler = HumanInputHandler(store=store)
        first = await handler.create_approval("pay", {"amount": 5}, approvers=["ann"])
        won = await store.settle_granting(
            _grant(), first.pending_id, RESOLVED, result="approved", settled_by="ann"
        )
        assert won is not None
        assert won.settled_by == "ann"
        assert await store.grants.get("g-1") == replace(_grant(), created_at=clock.now)
        lost = await store.settle_granting(
            _grant("g-2"), first.pending_id, RESOLVED, result="approved", settled_by="bob"
        )
        assert lost is None
        assert await store.grants.get("g-2") is None
        other = await handler.create_approval("pay", {"amount": 6}, approvers=["ann"])
        await store.settle_granting(
            _grant(tool="refund"), other.pending_id, RESOLVED, result="approved"
        )
        kept = await store.grants.get("g-1")
        assert kept is not None
        assert kept.tool == "pay"
        settled = await store.fetch(other.pending_id)
        assert settled is not None
        assert settled.status is RESOLVED
