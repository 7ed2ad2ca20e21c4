"""The shared listening connection of the Postgres stores: a store that joins it is live at
once, a store is told it is live only once its LISTEN has run, and no notification is lost
while stores join and leave."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import psycopg
from tests.servers.postgres_server import PostgresServer
from tests.tools.human_input.stores.postgres_kit import new_schema
from tests.tools.human_input.stores.store_kit import (
    CREATED,
    PATIENCE,
    RESYNC,
    Changes,
    make_request,
)

from roomkit.stores import PendingChange
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.postgres._listen import Hub


class Inbox:
    """A hub callback that records payloads and lets a test await one."""

    def __init__(self) -> None:
        self.payloads: list[str | None] = []
        self._waits: dict[str | None, asyncio.Event] = {}

    def __call__(self, payload: str | None) -> None:
        self.payloads.append(payload)
        if payload in self._waits:
            self._waits[payload].set()

    async def arrival(self, payload: str | None) -> None:
        """Wait until ``payload`` has been delivered (``None``: the resync of a LISTEN)."""
        if payload in self.payloads:
            return
        event = self._waits.setdefault(payload, asyncio.Event())
        async with asyncio.timeout(PATIENCE):
            await event.wait()


class Relay:
    """A TCP relay to the server whose way in can be held: what the client sends waits at
    the gate while it is shut (``held`` is set once something waits there)."""

    def __init__(self, port: int) -> None:
        self._port = port
        self.gate = asyncio.Event()
        self.gate.set()
        self.held = asyncio.Event()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for pipe in self._pipes:
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._port)
        for pipe in (self._pipe(reader, up_writer, gated=True), self._pipe(up_reader, writer)):
            task = asyncio.create_task(pipe)
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, gated: bool = False
    ) -> None:
        try:
            while data := await reader.read(65536):
                if gated and not self.gate.is_set():
                    self.held.set()
                    await self.gate.wait()
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()


async def test_a_channel_joining_while_others_are_listened_resyncs_after_its_own_listen(
    postgres_server: PostgresServer,
) -> None:
    """A channel that joins while the connection LISTENs to another is told to resync only
    once its own LISTEN has run: a notification sent after that reaches it."""
    async with Relay(postgres_server.port) as relay:
        dsn = postgres_server.dsn.replace(f":{postgres_server.port}/", f":{relay.port}/")
        hub = Hub(dsn, {"autocommit": True}, "test")
        first, second, late, marker = Inbox(), Inbox(), Inbox(), Inbox()

        def told(payload: str | None) -> None:
            if payload is None:
                relay.gate.clear()  # hold whatever the connection sends next
            late(payload)

        hub.join("first", first)
        await first.arrival(None)
        try:
            relay.gate.clear()
            hub.join("second", second)
            await relay.held.wait()  # LISTEN "second" waits at the gate
            hub.join("late", told)
            relay.gate.set()
            await late.arrival(None)
            async with await psycopg.AsyncConnection.connect(
                postgres_server.dsn, autocommit=True
            ) as sender:
                await sender.execute("SELECT pg_notify('late', 'sent once told')")
                relay.gate.set()
                # Told after a LISTEN round that follows any LISTEN held at the gate.
                hub.join("marker", marker)
                await marker.arrival(None)
                await sender.execute("SELECT pg_notify('late', 'end')")
            await late.arrival("end")
        finally:
            relay.gate.set()
            for channel, deliver in (
                ("first", first),
                ("second", second),
                ("late", told),
                ("marker", marker),
            ):
                await hub.leave(channel, deliver)
    assert late.payloads == [None, "sent once told", "end"]


async def test_a_store_joining_the_shared_connection_is_live_before_its_next_notification(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    """Each store whose feed starts after another's is told to resync (its LISTEN has run)
    before the shared connection hands out a change made after the store subscribed."""
    schema = postgres_schema
    async with AsyncExitStack() as stack:
        writer = await stack.enter_async_context(PostgresStore(postgres_server.dsn, schema=schema))
        watcher = await stack.enter_async_context(PostgresStore(postgres_server.dsn, schema=schema))
        watched = Changes()
        watcher.subscribe(watched)
        await watched.arrival(RESYNC)
        for _ in range(3):
            joining = await stack.enter_async_context(
                PostgresStore(postgres_server.dsn, schema=new_schema())
            )
            joined = Changes()
            joining.subscribe(joined)
            request, _ = await writer.insert(make_request())
            # The watcher hears the writer through the shared connection only.
            await watched.arrival(PendingChange(CREATED, request.pending_id))
            assert RESYNC in joined.seen


async def test_stores_starting_their_feeds_at_once_each_hear_the_next_change(
    postgres_server: PostgresServer,
) -> None:
    """A feed told to resync is listening: a change made right after reaches it."""

    async def follow(stack: AsyncExitStack) -> None:
        schema = new_schema()
        store = await stack.enter_async_context(PostgresStore(postgres_server.dsn, schema=schema))
        writer = await stack.enter_async_context(PostgresStore(postgres_server.dsn, schema=schema))
        changes = Changes()
        store.subscribe(changes)
        await changes.arrival(RESYNC)
        request, _ = await writer.insert(make_request())
        await changes.arrival(PendingChange(CREATED, request.pending_id))

    async with AsyncExitStack() as stack:
        await asyncio.gather(*(follow(stack) for _ in range(8)))


async def test_no_notification_is_lost_while_channels_join_and_leave(
    postgres_server: PostgresServer,
) -> None:
    """Every join and leave wakes the connection's wait; notifications arriving meanwhile
    all reach their listener, in the order they were sent."""
    hub = Hub(postgres_server.dsn, {"autocommit": True}, "test")
    steady = Inbox()
    hub.join("steady", steady)
    await steady.arrival(None)
    sent = [str(n) for n in range(60)]
    joined: list[tuple[str, Inbox]] = []
    try:
        async with await psycopg.AsyncConnection.connect(
            postgres_server.dsn, autocommit=True
        ) as sender:
            for n, payload in enumerate(sent):
                await sender.execute("SELECT pg_notify('steady', %s)", (payload,))
                # Wakes the connection while the notification is on its way to it.
                joiner = Inbox()
                hub.join(f"joiner{n}", joiner)
                joined.append((f"joiner{n}", joiner))
                if n % 3 == 2:
                    channel, leaving = joined.pop(0)
                    await hub.leave(channel, leaving)
            await sender.execute("SELECT pg_notify('steady', 'end')")
        await steady.arrival("end")
        for _, joiner in joined:
            await joiner.arrival(None)
    finally:
        for channel, joiner in joined:
            await hub.leave(channel, joiner)
        await hub.leave("steady", steady)
    assert [payload for payload in steady.payloads if payload is not None] == [*sent, "end"]
    assert hub.connections == 0
