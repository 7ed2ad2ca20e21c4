"""A question nobody answered, read by several resumers at once, on every store: each
resumes with the ladder's default, and the request's history records it once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tests.servers.stores import Ahead, StoreSite

from roomkit.adapters._pauses import Asker, Pause
from roomkit.testing import advance, run_virtual
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, default

LADDER = Ladder(on_expiry=default("grey"))
PAUSE = Pause("thread-1:ask", "question", "ask", {"question": "Which colour?"})
RESUMERS = 4


def asker(handler: HumanInputHandler) -> Asker:
    return Asker(
        handler, approvals=None, timeout=60, actor="alice", room="", channel="test", ladder=LADDER
    )


async def resumed_at_once(
    handlers: Sequence[HumanInputHandler], later: Callable[[float], Awaitable[None]]
) -> tuple[list[Any], list[dict[str, Any]]]:
    """Ask, let the deadline pass, then read the verdict through every handler at once; the
    verdicts, and the ``defaulted`` entries of the request's history."""
    request = await asker(handlers[0]).open(PAUSE)
    # Each handler's store connected already: the resumers go through their steps in step.
    await asyncio.gather(*(handler.history(request.pending_id) for handler in handlers))
    await later(120)
    # Timed out already: the resumers only read it, and record the default.
    await handlers[0].expire_overdue([request])
    verdicts = await asyncio.gather(
        *(asker(handler).settled(request.pending_id, PAUSE) for handler in handlers)
    )
    history = await handlers[0].history(request.pending_id)
    return list(verdicts), [entry for entry in history if entry["type"] == "defaulted"]


async def on_durable_store(site: StoreSite) -> tuple[list[Any], list[dict[str, Any]]]:
    clock = Ahead()
    # A store each, as separate processes have.
    stores = [site.open(clock=clock) for _ in range(RESUMERS)]  # type: ignore[arg-type]
    try:
        return await resumed_at_once([HumanInputHandler(store=s) for s in stores], clock.move)
    finally:
        for store in stores:
            await store.close()


async def on_memory_store() -> tuple[list[Any], list[dict[str, Any]]]:
    return await resumed_at_once([HumanInputHandler()] * RESUMERS, advance)


def test_resumers_at_once_record_the_default_once(store_site: StoreSite) -> None:
    """Every resumer gets the default; the history holds one ``defaulted`` entry."""
    if store_site.durable:
        verdicts, entries = asyncio.run(on_durable_store(store_site))
    else:
        verdicts, entries = run_virtual(on_memory_store())
    assert [(verdict.kind, verdict.answer) for verdict in verdicts] == [
        ("defaulted", "grey")
    ] * RESUMERS
    assert [entry["answer"] for entry in entries] == ["grey"]
