"""What the restart tests share: 1,000 requests waited on, a desk that answers them while
the server goes away and comes back, and the checks that every answer reached its waiter."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.tools.human_input.durable.cross_process_peer import parked

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores import PendingChange, PendingChangeKind
from roomkit.tools.human_input import HumanInputHandler

REQUESTS = 1_000
ROOMS = 50
ANSWERING_BOUND = 40.0
"""Seconds the desk keeps retrying an answer the server refused."""


class FeedWatch:
    """Counts the RESYNCs a handler's change feed sends: one each time it goes live."""

    def __init__(self, handler: HumanInputHandler) -> None:
        self.resyncs = 0
        self._moved = asyncio.Event()
        handler.subscribe(self)

    def __call__(self, change: PendingChange) -> None:
        if change.kind is PendingChangeKind.RESYNC:
            self.resyncs += 1
            self._moved.set()

    async def live_after(self, resyncs: int) -> None:
        """Return once the feed has gone live more than ``resyncs`` times."""
        while self.resyncs <= resyncs:
            self._moved.clear()
            await self._moved.wait()


class Desk:
    """Answers requests, retrying while the server is away; remembers what it was told."""

    def __init__(self, handler: HumanInputHandler) -> None:
        self.handler = handler
        self.refused = asyncio.Event()
        """Set when the store could not be reached at least once."""
        self.in_doubt: set[str] = set()
        """Requests for which an attempt failed: it may have landed before its reply was lost."""

    async def answer(self, pending_id: str) -> bool:
        deadline = asyncio.get_running_loop().time() + ANSWERING_BOUND
        while True:
            try:
                return await self.handler.aresolve(pending_id, answer_for(pending_id), by="desk")
            except StoreUnavailableError:
                # The client already backs off between its own retries: try again at once.
                self.refused.set()
                self.in_doubt.add(pending_id)
                if asyncio.get_running_loop().time() > deadline:
                    raise


def answer_for(pending_id: str) -> str:
    return f"answer to {pending_id}"


async def start_waiting(asker: HumanInputHandler) -> dict[str, asyncio.Task[str]]:
    """Create the requests across the rooms and wait on each; return once all are parked."""
    requests = await asyncio.gather(
        *(
            asker.create("AskUserQuestion", {"question": f"q{n}"}, room_id=f"room-{n % ROOMS}")
            for n in range(REQUESTS)
        )
    )
    waits = {
        request.pending_id: asyncio.create_task(asker.wait(request.pending_id, timeout=None))
        for request in requests
    }
    await parked(asker, REQUESTS)
    assert not any(task.done() for task in waits.values())
    return waits


async def delivered(
    waits: dict[str, asyncio.Task[str]], told: dict[str, bool], desk: Desk, store: Any
) -> None:
    """Every wait returned its own answer, and every answer was the desk's one win."""
    results = await asyncio.gather(*waits.values(), return_exceptions=True)
    errors = [result for result in results if isinstance(result, BaseException)]
    if errors:
        # A wait that died is an undelivered answer: the first error says why.
        raise errors[0]
    assert dict(zip(waits, results, strict=True)) == {
        pending_id: answer_for(pending_id) for pending_id in waits
    }
    assert len(set(results)) == REQUESTS
    for pending_id, won in told.items():
        if not won:
            # Told False: an earlier attempt landed and only its reply was lost.
            assert pending_id in desk.in_doubt, pending_id
            record = await store.fetch(pending_id)
            assert record is not None
            assert (record.result, record.settled_by) == (answer_for(pending_id), "desk")
    assert await desk.handler.list_pending() == []


async def answer_all(desk: Desk, pending_ids: list[str]) -> dict[str, bool]:
    told = await asyncio.gather(*(desk.answer(pending_id) for pending_id in pending_ids))
    return dict(zip(pending_ids, told, strict=True))
