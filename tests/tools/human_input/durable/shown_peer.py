"""A surface in a process of its own that shows one request, for the tests that kill it
mid-way or run two at once.

    main(STORE_URL, PREFIX, PENDING_ID, SURFACE, ACTOR, HOLD)

opens the store at STORE_URL (``sqlite:///path``, ``redis://...``, ``postgresql://...``),
prints ``ready``, and on a line ``show`` records that SURFACE showed the request to ACTOR
(:class:`~roomkit.tools.human_input.shown.ShownTrail`), then prints ``wrote N``. HOLD stops
it at one step, to be killed there or let go on:

- ``append``: the history's append is never sent; it prints ``held`` there and waits for
  good (the handler's ``record`` and ``record_at`` both, whichever the trail uses).
- ``mark``: the ledger's spend is never sent (``held``, then waits for good).
- ``read``: the first read of the request's history returns, then it prints ``read`` and
  goes on at the next line it reads.
- ``none``: it holds nowhere.

The tests run ``main`` in a process forked from one that imported this module
(:mod:`tests.forked_processes`).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from tests.tools.human_input.durable.store_fixtures import open_store

from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail


def say(line: str) -> None:
    print(line, flush=True)


async def heard() -> str:
    return (await asyncio.to_thread(sys.stdin.readline)).strip()


async def held(*args: Any, **kwargs: Any) -> Any:
    say("held")
    await asyncio.Event().wait()


def hold_at(handler: HumanInputHandler, hold: str) -> None:
    """Patch ``handler`` (this process's alone) to stop at ``hold``."""
    if hold == "append":
        handler.record = held  # type: ignore[method-assign]
        handler.record_at = held  # type: ignore[method-assign]
    elif hold == "mark":
        handler.ledger.spend_once = held  # type: ignore[method-assign]
    elif hold == "read":
        read = handler.history
        reads = 0

        async def read_then_wait(pending_id: str) -> list[dict[str, Any]]:
            nonlocal reads
            reads += 1
            history = await read(pending_id)
            if reads == 1:
                say("read")
                await heard()
            return history

        handler.history = read_then_wait  # type: ignore[method-assign]


async def main(url: str, prefix: str, pending_id: str, surface: str, actor: str, hold: str) -> None:
    store = open_store(url, prefix)
    handler = HumanInputHandler(store=store)
    hold_at(handler, hold)
    say("ready")
    assert await heard() == "show"
    written = await ShownTrail(handler).record([pending_id], surface, actor)
    say(f"wrote {written}")
    await handler.close()
    await store.close()
