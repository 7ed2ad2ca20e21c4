"""A closed PostgreSQL or Redis store stays closed until it is opened again, as SQLite's
does: a call after ``close()`` used to connect anew behind the caller's back (the pool, the
change feed), and nothing would close those connections again."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable

import psycopg
import pytest
from redis.asyncio import Redis
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.postgres_kit import new_schema
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import make_request
from tests.tools.human_input.stores.test_sqlite_closed import closed_under_a_wait

from roomkit.core.exceptions import StoreClosedError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.outbox import outbox_for
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler

QUESTION = {"question": "Ship it?"}

Store = PostgresStore | RedisStore


class Site:
    """A store on one kind of server, whose sessions carry a name of their own."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.kind: str = request.param
        if self.kind == "postgres":
            self.server: PostgresServer | RedisServer = request.getfixturevalue("postgres_server")
            self.name = str(request.getfixturevalue("postgres_schema"))
        else:
            self.server = request.getfixturevalue("redis_server")
            self.name = new_schema()

    def make(self, **options: float) -> Store:
        if isinstance(self.server, PostgresServer):
            dsn = f"{self.server.dsn}?application_name={self.name}"
            return PostgresStore(dsn, schema=self.name, **options)
        url = f"{self.server.url}?client_name={self.name}"
        return RedisStore(url, prefix=self.name, **options)

    async def sessions(self) -> int:
        """How many sessions of the site's stores the server has that this process still
        holds open.

        A server drops a session from its list only once it has read the client's goodbye
        and its backend has ended (a PostgreSQL backend is a process that exits on its own
        time, later still on a loaded machine), which lags the client's close. So a session
        counts only while this process holds its socket (its client port among this
        process's sockets to the server): one the store left open does, one it closed does
        not, whenever the server gets to it; no wait can be long enough, and none is needed.
        """
        # Asked once the asking connection is closed: no socket of the store open now
        # shares its port, and one the server still lists from before is not held.
        ports = await self._client_ports()
        held = _held_ports(self.server.port)
        return len(ports) if held is None else sum(1 for port in ports if port in held)

    async def _client_ports(self) -> list[int]:
        """The client ports of the sessions of the site's stores the server lists."""
        if isinstance(self.server, RedisServer):
            admin = Redis.from_url(self.server.url)
            try:
                clients = await admin.client_list()
            finally:
                await admin.aclose()
            named = [client for client in clients if client.get("name") == self.name]
            return [int(str(client["addr"]).rsplit(":", 1)[1]) for client in named]
        async with await psycopg.AsyncConnection.connect(self.server.dsn, autocommit=True) as db:
            cursor = await db.execute(
                "SELECT client_port FROM pg_stat_activity WHERE application_name = %s",
                (self.name,),
            )
            return [int(port) for (port,) in await cursor.fetchall()]


def _held_ports(server_port: int) -> set[int] | None:
    """The local ports of this process's TCP sockets to ``server_port`` on this machine;
    ``None`` where ``/proc`` cannot tell (every session listed counts then)."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # a descriptor closed while the folder is read
            link = os.readlink(f"/proc/self/fd/{fd}")
            if link.startswith("socket:["):
                mine.add(link[len("socket:[") : -1])
    held = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local, remote, inode = fields[1], fields[2], fields[9]
                if inode in mine and int(remote.rsplit(":", 1)[1], 16) == server_port:
                    held.add(int(local.rsplit(":", 1)[1], 16))
    return held


@pytest.fixture(params=["postgres", "redis"])
def site(request: pytest.FixtureRequest) -> Site:
    return Site(request)


async def test_every_call_after_close_is_refused_until_open(site: Site) -> None:
    store = site.make()
    await store.open()
    request = make_request()
    await store.insert(request)
    await store.close()

    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.fetch(request.pending_id),
        lambda: store.insert(make_request()),
        lambda: store.list_pending(),
        lambda: store.settle(request.pending_id, PendingInputStatus.RESOLVED, result="yes"),
        lambda: store.read_history(request.pending_id),
        lambda: store.spend_once("link", until=None),
        # the notifier's outbox, on the store's connections
        lambda: outbox_for(HumanInputHandler(store=store)).next_due(),
    ]
    for call in calls:
        with pytest.raises(StoreClosedError, match=r"is closed: call its open\(\)"):
            await call()
    assert await site.sessions() == 0

    await store.open()
    fetched = await store.fetch(request.pending_id)
    assert fetched is not None
    assert fetched.pending_id == request.pending_id
    await store.close()
    assert await site.sessions() == 0


async def test_a_wait_on_a_store_closed_under_it_ends_and_opens_nothing(site: Site) -> None:
    store = site.make(backstop_interval=0.02)
    await closed_under_a_wait(store)

    # A listener that comes now starts no feed, until the store opens again.
    store.subscribe(lambda change: None)
    assert not [task for task in asyncio.all_tasks() if f"{site.kind} feed" in task.get_name()]
    assert await site.sessions() == 0
    await store.open()
    assert [task for task in asyncio.all_tasks() if f"{site.kind} feed" in task.get_name()]
    await store.close()
