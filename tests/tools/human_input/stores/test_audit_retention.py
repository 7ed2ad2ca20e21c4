"""``audit_retention``: a request's history outlives its record, and goes once it has been
closed that long after its last entry; an open request's history never goes. SQLite and
PostgreSQL purge on the store's (injected) clock; Redis has the server expire the key."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio import Redis
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import (
    RESOLVED,
    Backend,
    FakeClock,
    RedisBackend,
    make_request,
)

from roomkit import HumanInputHandler
from roomkit.stores import new_entry, settled_entry
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve

HOUR = 3600.0
DAY = 86_400.0


async def opened_and_closed(store: Any) -> tuple[str, str]:
    """One request still open and one settled, each with a history; their ids."""
    open_, _ = await store.insert(make_request(), history=[new_entry("created")])
    closed, _ = await store.insert(make_request(), history=[new_entry("created")])
    entries = [settled_entry("resolved", actor="ann")]
    assert await store.settle(closed.pending_id, RESOLVED, result="a", history=entries)
    return open_.pending_id, closed.pending_id


async def test_histories_outlive_their_records_and_go_after_the_audit_retention(
    backend: Backend, clock: FakeClock
) -> None:
    if isinstance(backend, RedisBackend):
        pytest.skip("the Redis server expires histories on its own clock (tested below)")
    async with backend.make(clock=clock, retention_seconds=HOUR, audit_retention=DAY) as store:
        open_id, closed_id = await opened_and_closed(store)
        clock.advance(2 * HOUR)
        await store.purge_expired()
        # The record went with its retention; its history stays.
        assert await store.fetch(closed_id) is None
        assert len(await store.read_history(closed_id)) == 2
        # An entry after the settle (a run) counts the retention from itself.
        clock.advance(DAY - 3 * HOUR)
        await store.append_history(closed_id, new_entry("executed"))
        clock.advance(2 * HOUR)
        await store.purge_expired()
        assert len(await store.read_history(closed_id)) == 3
        clock.advance(DAY)
        await store.purge_expired()
        assert await store.read_history(closed_id) == []
        # Still open: kept however old.
        assert [entry["type"] for entry in await store.read_history(open_id)] == ["created"]
        assert closed_id not in await store.history_texts()


async def test_without_an_audit_retention_every_history_is_kept(
    backend: Backend, clock: FakeClock
) -> None:
    async with backend.make(clock=clock, retention_seconds=HOUR) as store:
        _, closed_id = await opened_and_closed(store)
        clock.advance(1000 * DAY)
        await store.purge_expired()
        assert len(await store.read_history(closed_id)) == 2
        assert store.audit_retention is None


async def test_redis_expires_a_closed_requests_history_by_the_audit_retention(
    redis_server: RedisServer, prefix: str, raw: Redis
) -> None:
    async with RedisStore(
        redis_server.url, prefix=prefix, retention_seconds=HOUR, audit_retention=DAY
    ) as store:
        open_id, closed_id = await opened_and_closed(store)
        await store.append_history(open_id, new_entry("shown", surface="desk"))
        closed_ttl = await raw.pttl(f"{prefix}:h:{closed_id}")
        open_ttl = await raw.pttl(f"{prefix}:h:{open_id}")
        record_ttl = await raw.pttl(f"{prefix}:p:{closed_id}")
        await raw.persist(f"{prefix}:h:{closed_id}")
        await store.append_history(closed_id, new_entry("executed"))
        again_ttl = await raw.pttl(f"{prefix}:h:{closed_id}")
    assert open_ttl == -1  # an open request's history has no expiry
    assert record_ttl <= HOUR * 1000 < closed_ttl <= DAY * 1000
    assert HOUR * 1000 < again_ttl <= DAY * 1000  # an append after the settle sets it again


async def test_a_quorums_history_goes_after_the_vote_that_closed_it(
    backend: Backend, clock: FakeClock
) -> None:
    if isinstance(backend, RedisBackend):
        pytest.skip("the Redis server expires histories on its own clock (tested below)")
    async with backend.make(clock=clock, retention_seconds=HOUR, audit_retention=DAY) as store:
        handler = HumanInputHandler(store=store)
        held = await handler.create_approval("pay", {"n": 1}, approvers=["ann", "bob"], quorum=2)
        assert await handler.aresolve(held.pending_id, approve(), by="ann")
        clock.advance(2 * DAY)
        await store.purge_expired()
        # Open, with a vote in: kept however old.
        assert len(await store.read_history(held.pending_id)) == 2
        assert await handler.aresolve(held.pending_id, approve(), by="bob")
        clock.advance(DAY - HOUR)
        await store.purge_expired()
        types = [entry["type"] for entry in await store.read_history(held.pending_id)]
        assert (types[0], types.count("voted"), types.count("settled")) == ("created", 2, 1)
        clock.advance(2 * HOUR)
        await store.purge_expired()
        assert await store.read_history(held.pending_id) == []


async def test_redis_expires_a_quorums_history_from_the_vote_that_closed_it(
    redis_server: RedisServer, prefix: str, raw: Redis
) -> None:
    async with RedisStore(
        redis_server.url, prefix=prefix, retention_seconds=HOUR, audit_retention=DAY
    ) as store:
        handler = HumanInputHandler(store=store)
        held = await handler.create_approval("pay", {"n": 1}, approvers=["ann", "bob"], quorum=2)
        key = f"{prefix}:h:{held.pending_id}"
        assert await handler.aresolve(held.pending_id, approve(), by="ann")
        open_ttl = await raw.pttl(key)
        assert await handler.aresolve(held.pending_id, approve(), by="bob")
        closed_ttl = await raw.pttl(key)
        types = [entry["type"] for entry in await store.read_history(held.pending_id)]
    assert open_ttl == -1
    assert HOUR * 1000 < closed_ttl <= DAY * 1000
    assert (types[0], types.count("voted"), types.count("settled")) == ("created", 2, 1)


@pytest.mark.parametrize("kind", [SQLiteStore, RedisStore, PostgresStore])
@pytest.mark.parametrize(
    ("audit", "error", "words"),
    [
        (60.0, ValueError, "at least retention_seconds"),
        (-1, ValueError, "audit_retention must be >= 0"),
        ("a day", TypeError, "audit_retention must be a number"),
    ],
)
def test_a_bad_audit_retention_is_refused(
    kind: type[Any], audit: object, error: type[Exception], words: str
) -> None:
    where = "redis://127.0.0.1:1/0" if kind is RedisStore else "unused.db"
    if kind is PostgresStore:
        where = "postgresql://127.0.0.1:1/none"
    with pytest.raises(error, match=words):
        kind(where, retention_seconds=HOUR, audit_retention=audit)
