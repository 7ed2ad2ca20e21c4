"""A keyed tool call nobody answered, served again by several processes at once, on every
durable store: each returns the ladder's default, and the request's history records it once.

The memory store keys no call (nothing outlives the process to re-attach to), so each call
there has a request of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from tests.servers.stores import Ahead, StoreSite

from roomkit.models.enums import ChannelType
from roomkit.tools import texts
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
from roomkit.tools.human_input.ladder import Ladder, default
from roomkit.tools.human_input.tool_handler import HumanInputCall

LADDER = Ladder(on_expiry=default("grey"))
CALL = HumanInputCall("room-1", "ai", ChannelType.AI, "call-1", "alice")
ARGUMENTS = {"question": "Which colour?"}
SERVERS = 4


def tools(handler: HumanInputHandler) -> HumanInputToolHandler:
    return HumanInputToolHandler({"ask"}, timeout=60, handler=handler, ladder=LADDER)


async def served_at_once(
    handlers: Sequence[HumanInputHandler], later: Callable[[float], Awaitable[None]]
) -> tuple[list[str], list[dict[str, Any]]]:
    """Ask the call, as a process that then stopped did; let its deadline pass; serve the
    call again through every handler at once. The results, and the ``defaulted`` entries of
    the request's history."""
    first = handlers[0]
    request = await first.create(
        "ask",
        ARGUMENTS,
        room_id=CALL.room_id,
        tool_call_id=CALL.tool_call_id,
        channel_id=CALL.channel_id,
        channel_type=CALL.channel_type,
        actor_id=CALL.actor_id,
        key=f"{CALL.room_id}:{CALL.channel_id}:{CALL.tool_call_id}",
        timeout=60,
    )
    # Each handler's store connected already: the servers go through their steps in step.
    await asyncio.gather(*(handler.history(request.pending_id) for handler in handlers))
    await later(120)
    # Timed out already: the servers re-attach to it, read the timeout and record the default.
    await first.expire_overdue([request])
    results = await asyncio.gather(
        *(tools(handler).ask("ask", ARGUMENTS, call=CALL) for handler in handlers)
    )
    history = await first.history(request.pending_id)
    return list(results), [entry for entry in history if entry["type"] == "defaulted"]


async def on_durable_store(site: StoreSite) -> tuple[list[str], list[dict[str, Any]]]:
    clock = Ahead()
    # A store each, as separate processes have.
    stores = [site.open(clock=clock) for _ in range(SERVERS)]  # type: ignore[arg-type]
    try:
        return await served_at_once([HumanInputHandler(store=s) for s in stores], clock.move)
    finally:
        for store in stores:
            await store.close()


@pytest.mark.parametrize("store_kind", ["sqlite", "redis", "postgres"], indirect=True)
def test_servers_at_once_record_the_default_once(store_site: StoreSite) -> None:
    """Every server returns the default; the history holds one ``defaulted`` entry."""
    results, entries = asyncio.run(on_durable_store(store_site))
    assert results == [texts.human_input_defaulted("ask", 60, "grey")] * SERVERS
    assert [entry["answer"] for entry in entries] == ["grey"]
