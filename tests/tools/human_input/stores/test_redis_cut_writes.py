"""A Redis write that the store's ``timeout=`` cuts may still run once the server answers.

The relay freezes the server (SIGSTOP) just before a chosen command reaches it: the store
gives up on the command after its ``timeout``, and the server runs it when it runs again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail

pytestmark = pytest.mark.timeout(60)

SHORT = 0.5
"""The store's timeout: a call to the frozen server fails after it."""


@pytest.fixture
async def handler(relay: Relay, prefix: str) -> AsyncIterator[HumanInputHandler]:
    store = RedisStore(relay.url, prefix=prefix, timeout=SHORT)
    handler = HumanInputHandler(store=store)
    yield handler
    await handler.close()
    await store.close()


async def shown(handler: HumanInputHandler, pending_id: str) -> list[tuple[str, str]]:
    return [
        (entry["surface"], entry["actor"])
        for entry in await handler.history(pending_id)
        if entry["type"] == "shown"
    ]


async def ran(handler: HumanInputHandler, pending_id: str) -> None:
    """Return once the server has run the cut ``shown`` append (one trip to a worker thread
    between two reads, as the tests' waits on statistics do). The commands the frozen server
    held run in its first turn once it runs again, before any sent after."""
    while not await shown(handler, pending_id):
        await asyncio.to_thread(lambda: None)


async def warmed(handler: HumanInputHandler) -> None:
    """Have the server hold every script the trail runs, and the pool a few connections:
    what the frozen server runs late is the write itself, not a NOSCRIPT refusal."""
    warm = await handler.create("AskUserQuestion", {"question": "Warm?"}, room_id="r")
    assert await ShownTrail(handler).record([warm.pending_id], "desk", "warm-up") == 1
    assert await handler.ledger.spend_once("warm-up", until=None)
    await handler.ledger.refund_spent("warm-up")
    await asyncio.gather(*(handler.get_request(warm.pending_id) for _ in range(4)))


async def test_a_shown_entry_cut_by_the_timeout_is_not_written_twice(
    server: RedisServer, relay: Relay, handler: HumanInputHandler
) -> None:
    """The append of the ``shown`` entry is cut, and runs when the server does: showing the
    request again, here or in another process, records nothing more."""
    await warmed(handler)
    request = await handler.create("AskUserQuestion", {"question": "Where?"}, room_id="r")
    trail = ShownTrail(handler)
    relay.call_before(b"frozen-actor", server.pause)
    try:
        assert await trail.record([request.pending_id], "desk", "frozen-actor") == 0
    finally:
        server.resume()
    await ran(handler, request.pending_id)

    assert await ShownTrail(handler).record([request.pending_id], "desk", "bob") == 0
    assert await trail.record([request.pending_id], "desk", "carol") == 0
    assert await trail.record([request.pending_id], "desk", "dan") == 0
    assert await shown(handler, request.pending_id) == [("desk", "frozen-actor")]


async def test_a_shown_entry_that_did_not_land_is_written_at_the_next_showing(
    server: RedisServer, relay: Relay, handler: HumanInputHandler
) -> None:
    """The server stopped before the append reached it: the trail that spent the mark writes
    the entry when it shows the request again."""
    await warmed(handler)
    request = await handler.create("AskUserQuestion", {"question": "Where?"}, room_id="r")
    trail = ShownTrail(handler)
    relay.call_before(b"lost-actor", server.stop)
    assert await trail.record([request.pending_id], "desk", "lost-actor") == 0
    await asyncio.to_thread(server.start)

    assert await trail.record([request.pending_id], "desk", "bob") == 1
    assert await trail.record([request.pending_id], "desk", "carol") == 0
    assert await shown(handler, request.pending_id) == [("desk", "bob")]
