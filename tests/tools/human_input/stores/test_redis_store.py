"""What only the Redis store does: a retried insert that finds itself, listings by
creation time, prefixes, a client of the caller's, Lua scripts the server forgets, cuts at
any point of a call, expiry on the server, a pub/sub feed that must notice restarts, killed
connections and a frozen server, and the faults of a server: stopped, unreachable, or
holding keys of another type.

What every durable store does is in ``test_durable_store_contract.py``."""

from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager

import pytest
from redis.asyncio import Redis
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import (
    PATIENCE,
    REJECTED,
    RESOLVED,
    RESYNC,
    SETTLED,
    Changes,
    FakeClock,
    ids,
    logged,
    make_request,
    redis_write_foreign,
)

from roomkit.core.exceptions import CorruptRecordError, StoreError, StoreUnavailableError
from roomkit.stores import PendingChange
from roomkit.stores.redis import RedisStore

LOGGER = "roomkit.tools.human_input.stores.redis"


@contextmanager
def silent_port() -> Iterator[int]:
    """A port bound but not listening: a connection to it is refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port: int = bound.getsockname()[1]
        yield port


@pytest.fixture
async def store(
    redis_server: RedisServer, prefix: str, clock: FakeClock
) -> AsyncIterator[RedisStore]:
    async with RedisStore(
        redis_server.url, prefix=prefix, clock=clock, retention_seconds=3600
    ) as store:
        yield store


# -- records ---------------------------------------------------------------------------------


async def test_an_insert_sent_twice_is_created_once(store: RedisStore) -> None:
    """A retry after a lost reply finds its own request and still reports it created."""
    request = make_request(key="retried")

    first = await store.insert(request)
    second = await store.insert(request)

    assert first[1]
    assert second[1]
    assert ids(await store.list_pending()) == [request.pending_id]


async def test_stores_with_other_prefixes_do_not_see_each_other(
    redis_server: RedisServer, store: RedisStore
) -> None:
    request, _ = await store.insert(make_request())
    async with RedisStore(redis_server.url, prefix=f"{store.prefix}-other") as other:
        assert await other.fetch(request.pending_id) is None
        assert await other.list_pending() == []


async def test_a_given_client_is_used_and_left_open(redis_server: RedisServer, prefix: str) -> None:
    client = Redis.from_url(redis_server.url)
    async with RedisStore(client=client, prefix=prefix) as store:
        request, _ = await store.insert(make_request())
        assert store.where == f"{redis_server.url}"

    assert await client.exists(f"{prefix}:p:{request.pending_id}") == 1
    await client.aclose()


# -- the check-and-set -----------------------------------------------------------------------


async def test_settles_go_on_after_the_server_forgets_its_scripts(
    store: RedisStore, raw: Redis
) -> None:
    requests = [(await store.insert(make_request()))[0] for _ in range(5)]
    await raw.script_flush()

    alone = await store.settle(requests[0].pending_id, RESOLVED, result="alone")
    await raw.script_flush()
    together = await asyncio.gather(
        *(store.settle(r.pending_id, RESOLVED, result="together") for r in requests[1:])
    )

    assert alone is not None
    assert all(outcome is not None for outcome in together)


@pytest.mark.parametrize("warm", [False, True], ids=["connecting", "connected"])
async def test_a_cancelled_call_is_cancelled_whenever_it_is_cut(
    redis_server: RedisServer, prefix: str, warm: bool
) -> None:
    """However far a read or write got, cutting it raises CancelledError in the caller."""
    for ticks in range(32):
        client = Redis.from_url(redis_server.url)
        async with RedisStore(client=client, prefix=prefix) as store:
            request, _ = await store.insert(make_request())
            if not warm:  # each call connects first
                await client.connection_pool.disconnect()
            for call in (
                store.fetch(request.pending_id),
                store.set_deadline(request.pending_id, 2e9),
                store.list_pending(),
            ):
                task = asyncio.create_task(call)
                for _ in range(ticks):
                    await asyncio.sleep(0)
                if task.cancel():
                    with pytest.raises(asyncio.CancelledError):
                        await task
                else:
                    assert task.exception() is None, ticks
        await client.aclose()


# -- retention -------------------------------------------------------------------------------


async def test_a_settled_record_and_its_key_expire_on_the_server(
    store: RedisStore, raw: Redis
) -> None:
    request, _ = await store.insert(make_request(key="expiring"))
    record_key = f"{store.prefix}:p:{request.pending_id}"
    index_key = f"{store.prefix}:k:expiring"
    assert await raw.pttl(record_key) == -1
    assert await raw.pttl(index_key) == -1

    await store.settle(request.pending_id, RESOLVED, result="x")

    for key in (record_key, index_key):
        assert 0 < await raw.pttl(key) <= 3600 * 1000


async def test_a_purge_leaves_no_key_behind(
    store: RedisStore, clock: FakeClock, raw: Redis
) -> None:
    """The record goes with its key's index; the settle already emptied the pending indexes."""
    request, _ = await store.insert(make_request(key="purged"))
    await store.settle(request.pending_id, RESOLVED, result="x")
    clock.advance(3601)

    assert await store.purge_expired() == 1
    assert await raw.keys(f"{store.prefix}:*") == []


# -- the change feed -------------------------------------------------------------------------


async def test_closing_ends_the_feed_at_any_point_of_its_connection(
    redis_server: RedisServer, prefix: str
) -> None:
    """However far the feed got in connecting, closing (or leaving) the store ends it."""
    for ticks in range(16):
        store = RedisStore(redis_server.url, prefix=prefix)
        await store.open()
        unsubscribe = store.subscribe(Changes())
        for _ in range(ticks):
            await asyncio.sleep(0)
        if ticks % 2:
            unsubscribe()
        async with asyncio.timeout(PATIENCE):
            await store.close()

        feeds = [t for t in asyncio.all_tasks() if "redis feed" in t.get_name()]
        assert feeds == [], ticks


async def test_the_feed_resyncs_after_a_restart_and_delivers_what_follows(
    server: RedisServer, prefix: str
) -> None:
    async with (
        RedisStore(server.url, prefix=prefix) as a,
        RedisStore(server.url, prefix=prefix) as b,
    ):
        before, _ = await a.insert(make_request())
        answered, _ = await a.insert(make_request())
        await a.settle(answered.pending_id, RESOLVED, result="kept")
        changes = Changes()
        b.subscribe(changes)
        await changes.arrival(RESYNC)
        mark = len(changes.seen)

        server.restart()

        await changes.arrival(RESYNC, after=mark)
        # What the server acknowledged before it went down is still there.
        kept = await b.fetch(answered.pending_id)
        assert kept is not None
        assert (kept.status, kept.result) == (RESOLVED, "kept")
        assert ids(await b.list_pending()) == [before.pending_id]
        # And the feed carries what happens next.
        await a.settle(before.pending_id, REJECTED, reason="after the restart")
        await changes.arrival(PendingChange(SETTLED, before.pending_id))


async def test_an_acknowledged_outcome_survives_a_crash(server: RedisServer, prefix: str) -> None:
    async with RedisStore(server.url, prefix=prefix) as store:
        request, _ = await store.insert(make_request())
        await store.settle(request.pending_id, RESOLVED, result="durable")

        server.restart(kill=True)

        record = await store.fetch(request.pending_id)
        assert record is not None
        assert (record.status, record.result) == (RESOLVED, "durable")


async def test_the_feed_recovers_when_its_connection_is_killed(
    redis_server: RedisServer, store: RedisStore, raw: Redis
) -> None:
    changes = Changes()
    store.subscribe(changes)
    await changes.arrival(RESYNC)
    mark = len(changes.seen)

    assert await raw.client_kill_filter(_type="pubsub") >= 1

    await changes.arrival(RESYNC, after=mark)
    async with RedisStore(redis_server.url, prefix=store.prefix) as other:
        request, _ = await other.insert(make_request())
        await other.settle(request.pending_id, RESOLVED, result="x")
    await changes.arrival(PendingChange(SETTLED, request.pending_id))


async def test_the_feed_notices_a_server_that_stops_answering(
    server: RedisServer, store: RedisStore
) -> None:
    """A frozen server keeps the socket open: only the unanswered ping reveals it."""
    store._feed._keepalive = 0.1  # a short watch, so that the test takes no time
    changes = Changes()
    store.subscribe(changes)
    with logged(LOGGER, "lost") as lost:
        await changes.arrival(RESYNC)
        mark = len(changes.seen)
        server.pause()
        try:
            async with asyncio.timeout(PATIENCE):
                await lost.wait()
        finally:
            server.resume()
        await changes.arrival(RESYNC, after=mark)

    request, _ = await store.insert(make_request())
    assert await store.fetch(request.pending_id) is not None


async def test_commands_recover_when_their_connections_are_killed(
    store: RedisStore, raw: Redis
) -> None:
    request, _ = await store.insert(make_request())

    assert await raw.client_kill_filter(_type="normal") >= 1

    record = await store.fetch(request.pending_id)
    assert record is not None
    assert await store.settle(request.pending_id, RESOLVED, result="x") is not None


# -- faults ----------------------------------------------------------------------------------


async def test_a_stopped_server_is_unavailable_until_it_is_back(
    server: RedisServer, prefix: str
) -> None:
    # No settle_retry: the settle gives up once the client's own retries are spent.
    async with RedisStore(server.url, prefix=prefix, settle_retry=0) as store:
        request, _ = await store.insert(make_request())

        server.stop()
        with pytest.raises(StoreUnavailableError, match=f"127.0.0.1:{server.port}"):
            await store.fetch(request.pending_id)
        with pytest.raises(StoreUnavailableError, match="unknown"):
            await store.settle(request.pending_id, RESOLVED, result="x")
        with pytest.raises(StoreUnavailableError):
            await store.list_pending()
        server.start()

        assert await store.settle(request.pending_id, RESOLVED, result="x") is not None


async def test_an_unreachable_server_is_named_without_its_password() -> None:
    with silent_port() as port:
        store = RedisStore(f"redis://user:s3cret@127.0.0.1:{port}/3")
        try:
            with pytest.raises(StoreUnavailableError) as caught:
                await store.open()
        finally:
            await store.close()

    message = str(caught.value)
    assert f"redis://user@127.0.0.1:{port}/3" in message
    assert "s3cret" not in message


async def test_a_key_of_another_type_is_corrupt(store: RedisStore, raw: Redis) -> None:
    await raw.set(f"{store.prefix}:p:alien", "just a string")

    with pytest.raises(CorruptRecordError, match="alien"):
        await store.fetch("alien")
    with pytest.raises(StoreError):
        await store.settle("alien", RESOLVED, result="x")
    assert await store.fetch_many(["alien"]) == []


async def test_a_corrupt_deadline_refuses_the_settle(store: RedisStore, raw: Redis) -> None:
    await redis_write_foreign(raw, store.prefix, deadline="soon")

    with pytest.raises(CorruptRecordError, match="alien"):
        await store.settle("alien", RESOLVED, result="x")
    with pytest.raises(CorruptRecordError, match="alien"):
        await store.set_deadline("alien", 1.0)


@pytest.mark.parametrize(
    ("make", "error", "name"),
    [
        (lambda url: RedisStore(42), TypeError, "url"),  # type: ignore[arg-type]
        (lambda url: RedisStore("http://example.com"), ValueError, "url"),
        (lambda url: RedisStore(url, client=Redis()), TypeError, "url or client"),
        (lambda url: RedisStore(client="redis://x"), TypeError, "client"),  # type: ignore[arg-type]
        (lambda url: RedisStore(url, prefix=""), ValueError, "prefix"),
        (lambda url: RedisStore(url, prefix=7), ValueError, "prefix"),  # type: ignore[arg-type]
        # The server expires an outcome after a finite number of milliseconds.
        (lambda url: RedisStore(url, retention_seconds=math.inf), ValueError, "retention"),
        (lambda url: RedisStore(url, settle_retry=-1), ValueError, "settle_retry"),
        (lambda url: RedisStore(url, settle_retry=math.inf), ValueError, "settle_retry"),
    ],
)
def test_a_bad_argument_is_refused_by_name(
    make: Callable[[str], RedisStore], error: type[Exception], name: str
) -> None:
    with pytest.raises(error, match=name):
        make("redis://127.0.0.1:1/0")


async def test_a_settle_hint_from_another_store_carries_the_settled_record(
    redis_server: RedisServer, prefix: str
) -> None:
    async with (
        RedisStore(redis_server.url, prefix=prefix) as a,
        RedisStore(redis_server.url, prefix=prefix) as b,
    ):
        changes = Changes()
        b.subscribe(changes)
        await changes.arrival(RESYNC)  # the feed is live
        request, _ = await a.insert(make_request())
        await a.settle(request.pending_id, RESOLVED, result="blue", settled_by="ann")
        await changes.arrival(PendingChange(SETTLED, request.pending_id))

        [hint] = [c for c in changes.seen if c.kind is SETTLED and c.record is not None]
        assert hint.record is not None
        assert (hint.record.pending_id, hint.record.status, hint.record.result) == (
            request.pending_id,
            RESOLVED,
            "blue",
        )
        assert hint.record.settled_by == "ann"
