"""A store closed while an opening that every caller left still waits on a server that does
not answer: the close ends the attempt instead of sitting out its connect timeout (Ctrl-C on a
command whose store does not answer exits at once)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from tests.tools.human_input.stores.store_kit import make_request

from roomkit.core.exceptions import StoreError
from roomkit.stores.postgres import PostgresStore

GUARD = 60.0
"""Seconds the close may take here: a guard, not a measurement, far inside the hour the
attempt would wait for its connection."""


@pytest.fixture
async def silent_port() -> AsyncIterator[tuple[int, asyncio.Event]]:
    """A loopback port that takes connections and never answers; the event is set once one
    is taken."""
    taken = asyncio.Event()
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        taken.set()
        await reader.read()  # until the client hangs up

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], taken
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_close_ends_an_opening_no_call_waits_on(
    silent_port: tuple[int, asyncio.Event],
) -> None:
    port, taken = silent_port
    store = PostgresStore(f"postgresql://u:p@127.0.0.1:{port}/db", connect_timeout=3600)
    call = asyncio.create_task(store.insert(make_request()))
    await taken.wait()
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    async with asyncio.timeout(GUARD):
        await store.close()


async def test_an_opening_a_call_still_waits_on_runs_on_for_it(
    silent_port: tuple[int, asyncio.Event],
) -> None:
    """The close leaves it be: the call gets the attempt's own outcome, not a cancellation."""
    port, taken = silent_port
    store = PostgresStore(f"postgresql://u:p@127.0.0.1:{port}/db", connect_timeout=1)
    call = asyncio.create_task(store.insert(make_request()))
    await taken.wait()
    await store.close()
    with pytest.raises(StoreError, match="cannot connect"):
        await call
