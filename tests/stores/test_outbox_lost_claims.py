"""A claim on a SQLite, PostgreSQL or Redis outbox that lands while its caller never hears
of it hands what it took to its owner's next claim, not when its lease lapses, leased anew
as long as that claim's, be it longer or shorter than the lost one's: its owner works on
them that long, and nobody else takes them meanwhile. A hand-over whose reply is lost too
hands them to the claim after it at once, whatever the leases of the three claims.

On PostgreSQL and Redis a relay lets the claim reach the server, drops the reply and cuts
the connection: the claim is committed and its caller gets a
:class:`~roomkit.core.exceptions.StoreUnavailableError` (the Redis client tries no second
time). SQLite has no wire to cut: the claim is made while another write runs, so that it
goes in the store's next batch of writes, and its caller is cancelled as that batch's
transaction goes to the store's thread (by the store's clock, read just before the
transaction's BEGIN). A batch runs every write it took, whatever befalls their callers: the
claim commits and its caller hears only the cancellation. (A claim made alone runs in its
caller's task, and a cancellation there lands after the commit only if the BEGIN took the
write lock at once, without a second trip to the thread.)
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from tests.postgres_server import PostgresServer
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.test_reassignment_kills import through

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.outbox import Outbox, OutboxItem
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore

OWNER = "owner-lost-reply"
REMIND = OutboxItem("p1.remind0", "p1", 0.0, {"job": "remind"}, created=0.0)
SLACK = OutboxItem("p1.slack0", "p1", 0.0, {"surface": "slack", "to": "ann"}, created=0.0)
LANES: list[Mapping[str, int] | None] = [None, {"slack": 1}]
LEASES = [60.0, 30.0]
"""The next claim's lease: as long as the lost claim's, and shorter (ending before it)."""
CHAINS = [(30.0, 60.0, 7.0), (120.0, 60.0, 7.0), (120.0, 30.0, 7.0), (120.0, 60.0, 70.0)]
"""After a claim at 5.0 for 60 seconds, a hand-over at 6.0 for the first lease, then the next
claim for the second at the third time: the hand-over's lease ends before the lost claim's,
after it and the next claim's, and after the lost claim's is over."""
Relayed = tuple[Relay, PostgresStore | RedisStore]
Lose = Callable[[float, float], Awaitable[None]]
"""A claim of :data:`OWNER` at a time, for a lease, whose caller never hears of it."""


class CancellingClock:
    """A store's clock that, once armed, cancels a task at its first reading taken once the
    write the task was made behind has ended: the reading of the batch of writes after that
    one, just before the batch's transaction goes to the store's thread."""

    def __init__(self) -> None:
        self.armed: tuple[asyncio.Task[Any], asyncio.Task[Any]] | None = None
        """The task to cancel, and the write it was made behind."""

    def __call__(self) -> float:
        if self.armed is not None and self.armed[1].done():
            victim, _ = self.armed
            self.armed = None
            victim.cancel()
        return 1_700_000_000.0


async def cancel_as_it_commits(
    clock: CancellingClock, outbox: Outbox, claim: Coroutine[Any, Any, list[OutboxItem]]
) -> None:
    """Make ``claim`` on a SQLite outbox while another write runs, so that it goes in the
    batch after that write; its caller is cancelled as the batch's transaction starts, and
    the batch commits it all the same."""
    ahead = asyncio.create_task(outbox.renew("p0.none", OWNER, 0.0))
    lost = asyncio.create_task(claim)
    clock.armed = lost, ahead
    with pytest.raises(asyncio.CancelledError):
        await lost
    assert await ahead is False, "the write ahead of it had nothing to renew"


def claimed(items: list[OutboxItem]) -> list[tuple[str, float]]:
    return [(item.item_id, item.due) for item in items]


async def lose_reply(
    relay: Relay,
    store: PostgresStore | RedisStore,
    now: float,
    lanes: Mapping[str, int] | None = None,
    *,
    lease: float = 60.0,
) -> None:
    """A claim of :data:`OWNER` at ``now`` that reaches the server, whose reply is lost."""
    relay.lose_reply_to(OWNER.encode())
    with pytest.raises(StoreUnavailableError):
        await store.outbox.claim(OWNER, now, lease, 10, lanes=lanes)
    assert relay.lost.is_set(), "the claim reached the server"


async def hands_both_over(outbox: Outbox, lanes: Mapping[str, int] | None, lease: float) -> None:
    """Leased at 5.0 for 60 seconds by a claim never heard of, both items come to
    :data:`OWNER`'s claim at 6.0 for ``lease``, leased as long as it: nobody takes them until
    then, they do not come again."""
    until = 6.0 + lease
    taken = claimed(await outbox.claim(OWNER, 6.0, lease, 10, lanes=lanes))
    assert sorted(taken) == [("p1.remind0", until), ("p1.slack0", until)]
    assert await outbox.next_due() == until, "the store holds them as long as it says"
    assert await outbox.claim(OWNER, 7.0, lease, 10, lanes=lanes) == []
    assert await outbox.claim("another", until - 0.5, 60.0, 10, lanes=lanes) == []


async def comes_after_two_lost(outbox: Outbox, lose: Lose, chain: tuple[float, ...]) -> None:
    """A claim lost, then the hand-over of what it took lost too, each with a lease of its
    own: the next claim takes the item at once, whenever the leases end."""
    handing, lease, now = chain
    await outbox.add([REMIND])
    await lose(5.0, 60.0)
    await lose(6.0, handing)
    assert await outbox.next_due() == 6.0 + handing, "the hand-over committed: leased anew"
    assert claimed(await outbox.claim(OWNER, now, lease, 10)) == [("p1.remind0", now + lease)]
    assert await outbox.claim("another", now + lease - 0.5, 60.0, 10) == []


@pytest.fixture(params=["postgres", "redis"])
async def relayed(request: pytest.FixtureRequest) -> AsyncIterator[Relayed]:
    """A PostgreSQL or Redis store reaching its server through a relay."""
    if request.param == "postgres":
        postgres: PostgresServer = request.getfixturevalue("postgres_server")
        async with Relay(postgres.port) as relay:
            dsn = through(postgres.dsn, relay.port)
            schema = request.getfixturevalue("postgres_schema")
            async with PostgresStore(dsn, schema=schema) as store:
                yield relay, store
        return
    redis: RedisServer = request.getfixturevalue("redis_server")
    async with Relay(redis.port) as relay:
        client = Redis.from_url(relay.url, retry=Retry(NoBackoff(), 0))
        try:
            async with RedisStore(client=client, prefix=fresh_prefix()) as store:
                # The server learns the claims' scripts now: the reply a test loses is a
                # claim's, not the server's word that it does not know the script yet.
                for lanes in (None, {}):
                    await store.outbox.claim("warm-up", 0.0, 60.0, 10, lanes=lanes)
                yield relay, store
        finally:
            await client.aclose()


@pytest.mark.parametrize("lease", LEASES)
@pytest.mark.parametrize("lanes", LANES)
async def test_a_cancelled_claim_that_committed_hands_its_items_to_the_next(
    tmp_path: Path, lanes: Mapping[str, int] | None, lease: float
) -> None:
    clock = CancellingClock()
    async with SQLiteStore(tmp_path / "lost.db", clock=clock) as store:
        outbox = store.outbox
        await outbox.add([REMIND, SLACK])
        await cancel_as_it_commits(clock, outbox, outbox.claim(OWNER, 5.0, 60.0, 10, lanes=lanes))
        assert await outbox.next_due() == 65.0, "the claim committed: every item is leased"
        await hands_both_over(outbox, lanes, lease)


@pytest.mark.parametrize("lease", LEASES)
@pytest.mark.parametrize("lanes", LANES)
async def test_a_claim_whose_reply_was_lost_hands_its_items_to_the_next(
    relayed: Relayed, lanes: Mapping[str, int] | None, lease: float
) -> None:
    relay, store = relayed
    outbox = store.outbox
    await outbox.add([REMIND, SLACK])
    await lose_reply(relay, store, 5.0, lanes)
    assert await outbox.next_due() == 65.0, "the claim committed: every item is leased"
    await hands_both_over(outbox, lanes, lease)


async def test_a_hand_over_whose_reply_was_lost_hands_them_over_at_the_next_claim(
    relayed: Relayed,
) -> None:
    """Leased anew by the claim that lost its reply too, they come with the one after."""
    relay, store = relayed
    await store.outbox.add([REMIND])
    for now in (5.0, 6.0):  # the claim, then the claim it hands its items to
        await lose_reply(relay, store, now)
    assert await store.outbox.next_due() == 66.0, "the hand-over committed: leased anew"
    assert claimed(await store.outbox.claim(OWNER, 7.0, 60.0, 10)) == [("p1.remind0", 67.0)]


@pytest.mark.parametrize("chain", CHAINS)
async def test_a_lost_claim_and_its_lost_hand_over_hand_over_at_once_whatever_the_leases(
    tmp_path: Path, chain: tuple[float, ...]
) -> None:
    clock = CancellingClock()
    async with SQLiteStore(tmp_path / "lost.db", clock=clock) as store:
        outbox = store.outbox

        async def lose(now: float, lease: float) -> None:
            await cancel_as_it_commits(clock, outbox, outbox.claim(OWNER, now, lease, 10))

        await comes_after_two_lost(outbox, lose, chain)


@pytest.mark.parametrize("chain", CHAINS)
async def test_a_lost_reply_and_its_lost_hand_over_hand_over_at_once_whatever_the_leases(
    relayed: Relayed, chain: tuple[float, ...]
) -> None:
    relay, store = relayed

    async def lose(now: float, lease: float) -> None:
        await lose_reply(relay, store, now, lease=lease)

    await comes_after_two_lost(store.outbox, lose, chain)


async def test_a_lost_claim_whose_lease_is_over_is_forgotten(
    relayed: Relayed,
) -> None:
    """Its items are due again for everyone: the owner's next claim takes them as new."""
    relay, store = relayed
    outbox = store.outbox
    await outbox.add([REMIND])
    await lose_reply(relay, store, 5.0)
    assert claimed(await outbox.claim(OWNER, 70.0, 60.0, 10)) == [("p1.remind0", 130.0)]


async def test_an_outbox_table_made_before_claim_tokens_gains_their_column(
    tmp_path: Path,
) -> None:
    """A file whose outbox table has no ``claim`` column: its items are claimed all the same."""
    path = tmp_path / "older.db"
    async with SQLiteStore(path) as store:
        await store.outbox.add([REMIND])
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("ALTER TABLE roomkit_outbox DROP COLUMN claim")
    async with SQLiteStore(path) as store:
        assert await store.outbox.next_due() == 0.0
        assert claimed(await store.outbox.claim(OWNER, 5.0, 60.0, 10)) == [("p1.remind0", 65.0)]
