"""Calls made at once on an unopened store share one attempt to open it.

The server here takes connections and never answers. One call's attempt to open the store
fails after its timeouts; calls made at once join that one attempt and fail with it, so the
server sees the connections of one attempt, not of one attempt per call (made side by side,
or queued one after the other behind a lock).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from tests.tools.human_input.stores.store_kit import make_request

from roomkit.core.exceptions import StoreError
from roomkit.models.room import Room
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisRoomStore, RedisStore

CALLS = 8


@dataclass
class SilentServer:
    """A loopback server that takes connections and never answers."""

    port: int = 0
    accepted: list[asyncio.StreamWriter] = field(default_factory=list)

    async def hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted.append(writer)
        await reader.read()  # until the client hangs up


@pytest.fixture
async def silent() -> AsyncIterator[SilentServer]:
    held = SilentServer()
    server = await asyncio.start_server(held.hold, "127.0.0.1", 0)
    held.port = server.sockets[0].getsockname()[1]
    try:
        yield held
    finally:
        for writer in held.accepted:
            writer.close()
        server.close()
        await server.wait_closed()


Call = Callable[[], Awaitable[object]]
Store = RedisStore | RedisRoomStore | PostgresStore


def redis_requests(port: int) -> tuple[Store, Call]:
    store = RedisStore(f"redis://127.0.0.1:{port}/0?socket_timeout=0.1&socket_connect_timeout=0.1")
    return store, lambda: store.insert(make_request())


def redis_rooms(port: int) -> tuple[Store, Call]:
    store = RedisRoomStore(
        f"redis://127.0.0.1:{port}/0?socket_timeout=0.1&socket_connect_timeout=0.1"
    )
    return store, lambda: store.create_room(Room(id="r"))


def postgres_requests(port: int) -> tuple[Store, Call]:
    store = PostgresStore(f"postgresql://u:p@127.0.0.1:{port}/db", connect_timeout=1)
    return store, lambda: store.insert(make_request())


@pytest.mark.parametrize("calls_on", [redis_requests, redis_rooms, postgres_requests])
async def test_calls_made_at_once_wait_out_one_attempt_together(
    silent: SilentServer, calls_on: Callable[[int], tuple[Store, Call]]
) -> None:
    first, alone = calls_on(silent.port)
    second, together = calls_on(silent.port)
    try:
        with pytest.raises(StoreError):
            await alone()
        one_attempt = len(silent.accepted)

        failed = await asyncio.gather(*(together() for _ in range(CALLS)), return_exceptions=True)

        assert all(isinstance(error, StoreError) for error in failed), failed
        assert len(silent.accepted) - one_attempt == one_attempt
    finally:
        await first.close()
        await second.close()
