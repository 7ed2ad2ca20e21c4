"""A ladder for every request: what a notifier's file gives requests whose tool has none.

A tool declares its own ladder (``HumanInputToolHandler(ladder=...)``), recorded in the
outbox when it asks. A notifier run from a TOML file (``roomkit notify``, ``roomkit desk
--notify``) has the file's ``[ladder]``: :func:`following` records its reminder and escalation
for each request that opens while it runs, and for those open when it starts, unless the
request has ladder steps already. Recording is idempotent, so several processes following
one store record each step once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, record_ladder

__all__ = ["following", "give_ladder"]

logger = logging.getLogger("roomkit.notify")

_STEPS = ("remind", "escalate")


_RETRY = 0.1
"""Seconds before a ladder that could not be given is tried again; doubling up to
:data:`_RETRY_MOST` while it keeps failing."""
_RETRY_MOST = 30.0


@asynccontextmanager
async def following(handler: HumanInputHandler, ladder: Ladder | None) -> AsyncIterator[None]:
    """Give ``ladder``'s steps to each open request of ``handler`` while the block runs.

    Nothing happens when ``ladder`` is ``None`` or has no step.
    """
    if ladder is None or not ladder.steps:
        yield
        return
    changes: deque[PendingChange] = deque([PendingChange(PendingChangeKind.RESYNC)])
    wake = asyncio.Event()
    wake.set()

    def on_change(change: PendingChange) -> None:
        changes.append(change)
        wake.set()

    unsubscribe = handler.subscribe(on_change)
    task = asyncio.create_task(_follow(handler, ladder, changes, wake), name="roomkit-ladder")
    try:
        yield
    finally:
        unsubscribe()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _follow(
    handler: HumanInputHandler, ladder: Ladder, changes: deque[PendingChange], wake: asyncio.Event
) -> None:
    retry = _RETRY
    while True:
        await wake.wait()
        wake.clear()
        while changes:
            change = changes.popleft()
            try:
                if change.kind is PendingChangeKind.CREATED:
                    await give_ladder(handler, ladder, change.pending_id)
                elif change.kind is PendingChangeKind.RESYNC:
                    for request in await handler.list_pending():
                        await give_ladder(handler, ladder, request.pending_id)
            except Exception as error:
                # A ladder is never worth stopping the notifier for; what failed is owed
                # still: every open request is looked at again after a pause (a request
                # with its steps already is left as it is).
                logger.warning("ladder: could not give %s its steps (%s)", change.pending_id, error)
                changes.appendleft(PendingChange(PendingChangeKind.RESYNC))
                await asyncio.sleep(retry)
                retry = min(retry * 2, _RETRY_MOST)
            else:
                retry = _RETRY


async def give_ladder(handler: HumanInputHandler, ladder: Ladder, pending_id: str) -> bool:
    """Record ``ladder``'s steps for the request, unless it is settled, unknown, or has ladder
    steps of its own; ``True`` when they were recorded."""
    request = await handler.get_request(pending_id)
    if request is None or request.status is not PendingInputStatus.PENDING:
        return False
    items = await handler.outbox.items_for(pending_id)
    if any(item.body.get("job") in _STEPS for item in items):
        return False
    # The tool's own ladder may be recorded meanwhile (its asker records it just after the
    # request): these steps then give way to it when they come due.
    await record_ladder(handler, request, ladder, fallback=True)
    return True
