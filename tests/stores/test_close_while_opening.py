"""A store closed while an opening that every caller left still waits on a server that does
not answer: the close ends the attempt instead of sitting out its connect timeout (Ctrl-C on a
command whose store does not answer exits at once)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import pytest
from tests.tools.human_input.stores.store_kit import make_request

from roomkit.core.exceptions import StoreError
from roomkit.stores.postgres import PostgresStore

GUARD = 60.0
"""Seconds the close may take here: a guard, not a measurement, far inside the hour the
attempt would wait for its connection."""


class SilentPort(NamedTuple):
    """A loopback port that takes connections and never answers."""

    port: int
    taken: asyncio.Event
    """Set once a connection is taken."""
    holding: set[asyncio.Task[Any]]
    """The server's tasks that hold the connections taken."""


@pytest.fixture
async def silent_port() -> AsyncIterator[SilentPort]:
    silent = SilentPort(0, asyncio.Event(), set())
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        task = asyncio.current_task()
        assert task is not None
        silent.holding.add(task)
        silent.taken.set()
        await reader.read()  # until the client hangs up

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield silent._replace(port=server.sockets[0].getsockname()[1])
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_close_ends_an_opening_no_call_waits_on(
    silent_port: SilentPort,
) -> None:
    port, taken, _ = silent_port
    store = PostgresStore(f"postgresql://u:p@127.0.0.1:{port}/db", connect_timeout=3600)
    call = asyncio.create_task(store.insert(make_request()))
    await taken.wait()
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    async with asyncio.timeout(GUARD):
        await store.close()


async def test_an_opening_a_call_still_waits_on_runs_on_for_it(
    silent_port: SilentPort,
) -> None:
    """The close leaves it be: the call gets the attempt's own outcome, not a cancellation."""
    port, taken, _ = silent_port
    store = PostgresStore(f"postgresql://u:p@127.0.0.1:{port}/db", connect_timeout=1)
    call = asyncio.create_task(store.insert(make_request()))
    await taken.wait()
    await store.close()
    with pytest.raises(StoreError, match="cannot connect"):
        await call


async def test_an_open_given_up_on_leaves_no_attempt_running(silent_port: SilentPort) -> None:
    """A timeout around ``async with store:`` ends the opening with it: the caller gets no
    store to close, and nothing of the opening runs on (to start a pool no one closes)."""
    store = PostgresStore(f"postgresql://u:p@127.0.0.1:{silent_port.port}/db", connect_timeout=3600)
    before = asyncio.all_tasks()
    opening = asyncio.create_task(store.open())
    await silent_port.taken.wait()
    opening.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await opening
    assert asyncio.all_tasks() - before - silent_port.holding == set()
