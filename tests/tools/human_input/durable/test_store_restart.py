"""Redis or PostgreSQL restarted, or the waiters' connections cut, while 1,000 requests
wait.

Every answered request is delivered to its own waiter, and none twice. Redis runs with
``appendfsync always`` and PostgreSQL with ``synchronous_commit=on``, so what a server
acknowledged before a restart is there after it. Each test has a server of its own, so
that restarting it disturbs no other test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from redis.asyncio import Redis
from tests.servers.postgres_server import PostgresServer
from tests.servers.stores import fresh_prefix
from tests.tools.human_input.durable.restart_kit import (
    Desk,
    FeedWatch,
    answer_all,
    delivered,
    start_waiting,
)
from tests.tools.human_input.stores.redis_server import RedisServer, running_redis

from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler

WAITERS = "roomkit-waiters"
"""The client name of the waiting side's connections, so that they can be cut alone."""


class Site:
    """A server of one kind, and the stores a test opens on it, under one key prefix or
    schema."""

    def __init__(self, server: RedisServer | PostgresServer, prefix: str) -> None:
        self.server = server
        self.prefix = prefix
        self.bound = 50.0 if isinstance(server, RedisServer) else 100.0
        """Seconds a test may take on this kind of server."""

    async def open(self, *, waiters: bool = False) -> tuple[HumanInputHandler, Any]:
        """A handler on a store of its own; ``waiters`` names its connections to be cut."""
        store: RedisStore | PostgresStore
        if isinstance(self.server, RedisServer):
            named = f"?client_name={WAITERS}" if waiters else ""
            store = RedisStore(f"{self.server.url}{named}", prefix=self.prefix)
        else:
            named = f"?application_name={WAITERS}" if waiters else ""
            # A call made while the server is away gives up after 1 s (not the default 5 s),
            # a settle whose outcome the outage hid runs again for 0.5 s (not 5 s: the server
            # comes back only once the desk was refused, so no retry in between can land),
            # and the desk tries again: the test waits less, and proves the same.
            store = PostgresStore(
                f"{self.server.dsn}{named}",
                schema=self.prefix,
                connect_timeout=1,
                settle_retry=0.5,
            )
        await store.open()
        return HumanInputHandler(store=store), store

    def stop(self, how: str) -> None:
        """Stop the server: ``shutdown`` or ``crash`` (Redis), ``fast`` or ``immediate``."""
        if isinstance(self.server, RedisServer):
            self.server.stop(kill=how == "crash")
        else:
            self.server.stop(mode=how)

    async def cut_waiters(self) -> int:
        """Close the waiting side's connections from the server; how many there were."""
        if isinstance(self.server, RedisServer):
            admin = Redis.from_url(self.server.url)
            try:
                clients = await admin.client_list()
                cut = [client["id"] for client in clients if client.get("name") == WAITERS]
                for client_id in cut:
                    assert await admin.client_kill_filter(_id=client_id) == 1
            finally:
                await admin.aclose()
            return len(cut)
        async with await psycopg.AsyncConnection.connect(self.server.dsn, autocommit=True) as db:
            cursor = await db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (WAITERS,),
            )
            return len(await cursor.fetchall())


@pytest.fixture
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Site]:
    if request.param == "redis":
        with running_redis(tmp_path) as redis:
            yield Site(redis, fresh_prefix())
    else:
        server = request.getfixturevalue("postgres_restartable")
        yield Site(server, request.getfixturevalue("postgres_schema"))


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("site", "how"),
    [("redis", "shutdown"), ("redis", "crash"), ("postgres", "fast"), ("postgres", "immediate")],
    indirect=["site"],
)
async def test_every_answer_reaches_its_waiter_across_a_restart(site: Site, how: str) -> None:
    asker, asker_store = await site.open()
    desk_handler, desk_store = await site.open()
    desk = Desk(desk_handler)
    feed = FeedWatch(asker)
    try:
        async with asyncio.timeout(site.bound):
            await feed.live_after(0)
            waits = await start_waiting(asker)

            await asyncio.to_thread(site.stop, how)
            answering = asyncio.ensure_future(answer_all(desk, list(waits)))
            # The server is back only once the desk has found it gone.
            await desk.refused.wait()
            await asyncio.to_thread(site.server.start)
            told = await answering

            await delivered(waits, told, desk, desk_store)
            # The feed listens again before the handler closes.
            await feed.live_after(1)
    finally:
        await asker.close()
        await asker_store.close()
        await desk_store.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("site", ["redis", "postgres"], indirect=True)
async def test_every_answer_reaches_its_waiter_when_its_connections_are_cut(site: Site) -> None:
    asker, asker_store = await site.open(waiters=True)
    desk_handler, desk_store = await site.open()
    desk = Desk(desk_handler)
    feed = FeedWatch(asker)
    try:
        async with asyncio.timeout(site.bound):
            await feed.live_after(0)
            waits = await start_waiting(asker)

            # The waiting side holds connections for reads and one for the change feed.
            assert await site.cut_waiters() >= 2
            told = await answer_all(desk, list(waits))

            await delivered(waits, told, desk, desk_store)
            await feed.live_after(1)
    finally:
        await asker.close()
        await asker_store.close()
        await desk_store.close()
