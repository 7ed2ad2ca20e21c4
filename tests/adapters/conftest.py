"""The adapters' tests: a handler on memory or SQLite, and a person who answers on cue.

These tests do real I/O (SQLite files, the frameworks' own threads), so they run on the real
event loop; waits end on the handler's announcements and the stores' deadlines, never on
sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.door_peer import durable_place
from tests.core.room_stores import DURABLE, Place

from roomkit.models.pending_input import PendingInputEvent
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler


class Desk:
    """The requests a handler announces, in order, for a test to answer."""

    def __init__(self, handler: HumanInputHandler) -> None:
        self.handler = handler
        self.asked: asyncio.Queue[PendingInputEvent] = asyncio.Queue()

        async def announce(event: PendingInputEvent) -> None:
            await self.asked.put(event)

        handler.on_input_required = announce

    async def next(self) -> PendingInputEvent:
        """The next request announced."""
        return await asyncio.wait_for(self.asked.get(), 30)

    async def next_of(self, running: asyncio.Task[Any]) -> PendingInputEvent:
        """The next request announced while ``running`` goes on; the run's own error when
        it fails before anyone is asked."""
        asked = asyncio.ensure_future(self.next())
        await asyncio.wait({running, asked}, return_when=asyncio.FIRST_COMPLETED)
        if running.done() and not asked.done():
            asked.cancel()
            running.result()  # the run failed before anyone was asked: its error
        return await asked


@pytest.fixture(params=DURABLE)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """A deployment's data on each durable store, for the doors' tests across processes."""
    return durable_place(request, tmp_path)


@pytest.fixture(params=["memory", "sqlite"])
async def handler(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[HumanInputHandler]:
    """A handler on the memory store, then on SQLite."""
    if request.param == "memory":
        yield HumanInputHandler()
        return
    store = SQLiteStore(tmp_path / "requests.db", backstop_interval=0.02)
    yield HumanInputHandler(store=store)
    await store.close()


@pytest.fixture
def desk(handler: HumanInputHandler) -> Desk:
    return Desk(handler)
