"""The outbox keeps a request's deliveries for a retention after its ending, then the
store's purge drops them: SQLite and PostgreSQL on an injected clock; Redis expires them,
and the memory outbox drops them as it adds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.notify.receiver import SECRET, Receiver
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit.notify import Notifier, Webhook
from roomkit.stores.outbox import MemoryOutbox, OutboxItem, outbox_for
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

WEEK = 7 * 86_400.0
START = 1_900_000_000.0


class Clock:
    """The stores' clock, moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


StoreFactory = Callable[..., Any]


@pytest.fixture(params=["sqlite", "postgres"])
async def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, store_prefix: str
) -> AsyncIterator[StoreFactory]:
    """Opens a store of the test's kind on the given clock, with the given options."""
    opened: list[Any] = []

    def factory(clock: Clock, **options: Any) -> Any:
        if request.param == "sqlite":
            store: Any = SQLiteStore(tmp_path / "pending.db", clock=clock, **options)
        else:
            dsn = request.getfixturevalue("postgres_server").dsn
            store = PostgresStore(dsn, schema=store_prefix, clock=clock, **options)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.close()


async def settle_one_and_keep_one_open(handler: HumanInputHandler) -> tuple[str, str]:
    """Announce two requests to a webhook, settle the first and tell its ending."""
    async with Receiver() as receiver, Notifier(handler, [Webhook(receiver.url, SECRET)]) as it:
        settled = await handler.create("ask", {"question": "Done?"}, actor_id="alice")
        open_ = await handler.create("ask", {"question": "Open?"}, actor_id="alice")
        await receiver.wait_for(2)
        assert await handler.aresolve(settled.pending_id, "yes")
        await receiver.wait_for(3)
        await it.wait_idle()
    return settled.pending_id, open_.pending_id


async def test_a_settled_requests_deliveries_go_a_week_after_its_ending(
    make_store: StoreFactory,
) -> None:
    clock = Clock()
    store = make_store(clock)
    handler = HumanInputHandler(store=store)
    settled, open_ = await settle_one_and_keep_one_open(handler)
    outbox = outbox_for(handler)
    kept = await outbox.items_for(settled)
    assert {i.body["job"] for i in kept} == {"announce", "settle", "deliver"}
    assert all(i.done for i in kept)

    clock.now += WEEK - 1
    await store.purge_expired()
    assert len(await outbox.items_for(settled)) == len(kept)

    clock.now += 2
    await store.purge_expired()
    assert await outbox.items_for(settled) == []
    # A request still open keeps what it was told, however old.
    assert [i.body["job"] for i in await outbox.items_for(open_)][:1] == ["announce"]
    assert await outbox.unended() == [open_]


async def test_the_outbox_retention_is_an_option(make_store: StoreFactory) -> None:
    clock = Clock()
    store = make_store(clock, outbox_retention_seconds=60)
    handler = HumanInputHandler(store=store)
    settled, _ = await settle_one_and_keep_one_open(handler)
    clock.now += 61
    await store.purge_expired()
    assert await outbox_for(handler).items_for(settled) == []


async def test_an_ending_still_retrying_keeps_its_request(make_store: StoreFactory) -> None:
    """A delivery of the ending not yet done holds back the purge of its request."""
    clock = Clock()
    store = make_store(clock)
    handler = HumanInputHandler(store=store)
    settled, _ = await settle_one_and_keep_one_open(handler)
    outbox = outbox_for(handler)
    # A delivery of the same request, still to do (due after the purge).
    late = OutboxItem(f"{settled}.late", settled, clock.now + 2 * WEEK, {"job": "deliver"})
    await outbox.add([late])
    clock.now += WEEK + 1
    await store.purge_expired()
    assert [i.item_id for i in await outbox.items_for(settled) if not i.done] == [f"{settled}.late"]
    assert len(await outbox.items_for(settled)) > 1


def test_a_negative_outbox_retention_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outbox_retention_seconds"):
        SQLiteStore(tmp_path / "p.db", outbox_retention_seconds=-1)


async def test_redis_expires_a_requests_items_once_it_ended_and_nothing_is_left_to_do(
    redis_server: RedisServer, store_prefix: str
) -> None:
    store = RedisStore(redis_server.url, prefix=store_prefix, outbox_retention_seconds=600)
    try:
        handler = HumanInputHandler(store=store)
        settled, open_ = await settle_one_and_keep_one_open(handler)
        client, outbox = store._client, f"{store_prefix}:outbox:"
        assert 0 < await client.pttl(f"{outbox}req:{settled}") <= 600_000
        assert 0 < await client.pttl(f"{outbox}item:{settled}.announce") <= 600_000
        # An open request keeps the record of what it was told, however long it waits.
        assert await client.pttl(f"{outbox}req:{open_}") == -1
        assert await client.pttl(f"{outbox}item:{open_}.announce") == -1
        assert await outbox_for(handler).unended() == [open_]
    finally:
        await store.close()


async def test_the_memory_outbox_drops_a_week_old_ending_when_it_adds() -> None:
    outbox = MemoryOutbox()
    old = [OutboxItem(f"r1.{job}", "r1", 0.0, {"job": job}) for job in ("announce", "settle")]
    await outbox.add(old)
    for item in old:
        await outbox.complete(item.item_id, {})
    assert await outbox.unended() == []
    await outbox.add([OutboxItem("r2.announce", "r2", WEEK + 61, created=WEEK + 61)])
    assert await outbox.items_for("r1") == []
    assert await outbox.unended() == ["r2"]
