"""One contract, every store: the listing of recent outcomes, newest first, on the memory
store, SQLite and a real redis-server alike; retention and bounds, store by store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from pathlib import Path
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import (
    REJECTED,
    RESOLVED,
    Backend,
    FakeClock,
    RedisBackend,
    SQLiteBackend,
    Store,
    ids,
    make_request,
)

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import MemoryStore
from roomkit.stores.base import (
    SETTLED_LIMIT,
    DurableSettledHistory,
    SettledHistory,
)


class MemoryLike:
    """The memory store behind the durable stores' async calls, for the shared tests."""

    def __init__(self, store: MemoryStore, clock: FakeClock) -> None:
        self.store = store
        self.clock = clock

    async def insert(self, request: PendingInput) -> tuple[PendingInput, bool]:
        self.store.add(request)
        return request, True

    async def settle(
        self, pending_id: str, status: PendingInputStatus, **outcome: Any
    ) -> PendingInput | None:
        return self.store.settle(pending_id, status, **outcome)

    async def list_settled(
        self, *, actor_ids: Collection[str | None] | None = None, limit: int = 50
    ) -> list[PendingInput]:
        return self.store.list_settled(actor_ids=actor_ids, limit=limit)


Listing = MemoryLike | Store


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[Listing]:
    if request.param == "memory":
        yield MemoryLike(MemoryStore(), clock)
        return
    backend: Backend
    if request.param == "sqlite":
        backend = SQLiteBackend(tmp_path / "pending.db")
    else:
        url = request.getfixturevalue("redis_server").url
        backend = RedisBackend(url, request.getfixturevalue("prefix"))
    async with backend.make(clock=clock, retention_seconds=3600) as made:
        yield made
    await backend.close()


async def settled(
    store: Listing, clock: FakeClock, status: PendingInputStatus = RESOLVED, **fields: Any
) -> str:
    """Insert a request and settle it a second after the previous one; returns its id."""
    record, _ = await store.insert(make_request(**fields))
    clock.advance(1)
    won = await store.settle(record.pending_id, status, result="yes", reason="no")
    assert won is not None
    return record.pending_id


def test_every_store_offers_the_listing() -> None:
    from roomkit.stores.redis import RedisStore
    from roomkit.stores.sqlite import SQLiteStore

    assert isinstance(MemoryStore(), SettledHistory)
    assert issubclass(SQLiteStore, DurableSettledHistory)
    assert issubclass(RedisStore, DurableSettledHistory)


async def test_outcomes_list_newest_first_with_what_was_answered(
    store: Listing, clock: FakeClock
) -> None:
    first = await settled(store, clock, RESOLVED, actor_id="alice")
    second = await settled(store, clock, REJECTED, actor_id="bob")
    third = await settled(store, clock, RESOLVED, actor_id=None)
    still_open, _ = await store.insert(make_request(actor_id="alice"))

    listed = await store.list_settled()

    assert ids(listed) == [third, second, first]
    assert still_open.pending_id not in ids(listed)
    assert (listed[2].status, listed[2].result) == (RESOLVED, "yes")
    assert (listed[1].status, listed[1].reject_reason) == (REJECTED, "no")


async def test_actor_ids_keep_the_named_actors_and_none_the_unassigned(
    store: Listing, clock: FakeClock
) -> None:
    alices = [await settled(store, clock, actor_id="alice") for _ in range(2)]
    await settled(store, clock, actor_id="bob")
    anyone = await settled(store, clock, actor_id=None)

    assert ids(await store.list_settled(actor_ids=["alice"])) == alices[::-1]
    assert ids(await store.list_settled(actor_ids=["alice", None])) == [anyone, *alices[::-1]]
    assert ids(await store.list_settled(actor_ids=[None])) == [anyone]
    assert await store.list_settled(actor_ids=["carol"]) == []
    assert await store.list_settled(actor_ids=[]) == []


async def test_the_limit_keeps_the_newest(store: Listing, clock: FakeClock) -> None:
    made = [await settled(store, clock, actor_id="alice") for _ in range(5)]

    assert ids(await store.list_settled(limit=2)) == made[:2:-1]
    assert ids(await store.list_settled(actor_ids=["alice"], limit=3)) == made[:1:-1]


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"limit": 0}, ValueError, "limit must be from 1"),
        ({"limit": SETTLED_LIMIT + 1}, ValueError, "limit must be from 1"),
        ({"limit": True}, TypeError, "limit must be an int"),
        ({"limit": 2.0}, TypeError, "limit must be an int"),
        ({"actor_ids": "alice"}, TypeError, r"pass \[actor_id\]"),
        ({"actor_ids": [1]}, TypeError, "str or None"),
    ],
)
async def test_bad_listing_arguments_say_what_to_pass(
    store: Listing, arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        await store.list_settled(**arguments)


async def test_the_memory_store_lists_what_its_retention_keeps(clock: FakeClock) -> None:
    memory = MemoryLike(MemoryStore(retention=2), clock)
    made = [await settled(memory, clock) for _ in range(3)]

    assert ids(await memory.list_settled()) == made[:0:-1]
    assert await MemoryLike(MemoryStore(retention=0), clock).list_settled() == []


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_a_durable_store_lists_only_what_is_within_the_retention(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> None:
    backend: Backend = (
        SQLiteBackend(tmp_path / "pending.db")
        if kind == "sqlite"
        else RedisBackend(
            request.getfixturevalue("redis_server").url, request.getfixturevalue("prefix")
        )
    )
    try:
        async with backend.make(clock=clock, retention_seconds=60) as store:
            old = await settled(store, clock)
            clock.advance(30)
            new = await settled(store, clock)
            assert ids(await store.list_settled()) == [new, old]
            clock.advance(30)
            assert ids(await store.list_settled()) == [new]
            other = backend.make(clock=clock, retention_seconds=60)
            assert ids(await other.list_settled()) == [new]
    finally:
        await backend.close()


async def test_the_redis_indexes_stay_bounded(
    request: pytest.FixtureRequest, clock: FakeClock
) -> None:
    backend = RedisBackend(
        request.getfixturevalue("redis_server").url, request.getfixturevalue("prefix")
    )
    try:
        async with backend.make(clock=clock, retention_seconds=3600) as store:
            for _ in range(SETTLED_LIMIT + 5):
                await settled(store, clock, actor_id="alice")
            listed = await store.list_settled(actor_ids=["alice"], limit=SETTLED_LIMIT)
            assert len(listed) == SETTLED_LIMIT
            for index in ("settled", "sa:alice"):
                assert await backend.raw.zcard(f"{backend.prefix}:{index}") == SETTLED_LIMIT
                assert 0 < await backend.raw.pttl(f"{backend.prefix}:{index}") <= 3_600_000
    finally:
        await backend.close()
