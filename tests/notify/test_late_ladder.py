"""A notifier that starts once a request's whole ladder is due, on every store: its steps are
worked out one at a time, in ladder order, and each person hears of them in that order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from tests.notify.recorder import Recorder
from tests.servers.stores import StoreSite

from roomkit.notify import Directory, Ladder, Notifier, Person, escalate, remind
from roomkit.testing import advance, run_virtual
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import record_ladder

PEOPLE = Directory({"alice": Person(email="alice@example.com", manager="bob")})
LADDER = Ladder(remind(after=300), escalate(after=900, to="manager"))
DUE = {
    ("question_reminder", "alice"),
    ("question_escalated", "alice"),
    ("question_escalated", "bob"),
}


class Ahead:
    """A durable store's clock: the wall clock, moved ahead by the test."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead

    async def move(self, seconds: float) -> None:
        self.ahead += seconds


async def late_notifier(
    handler: HumanInputHandler, later: Callable[[float], Awaitable[None]], concurrency: int
) -> list[tuple[str, str | None]]:
    """Ask alice on a ladder, let all of it fall due, then run a notifier until bob, to whom
    it escalated, answers; what the notifier sent, in order."""
    request = await handler.create("ask", {"question": "Deploy?"}, actor_id="alice")
    await record_ladder(handler, request, LADDER)
    await later(1000)  # the reminder (300 s) and the escalation (900 s) are due
    recorder = Recorder()
    notifier = Notifier(handler, [recorder], directory=PEOPLE, poll=0.05, concurrency=concurrency)
    async with notifier:
        await recorder.wait_until(lambda seen: set(seen) >= DUE)
        assert await handler.aresolve(request.pending_id, "yes", by="bob")
        await recorder.wait_until(lambda seen: ("question_settled", "bob") in seen)
        await notifier.wait_idle()
    return recorder.seen()


async def on_durable_store(site: StoreSite, concurrency: int) -> list[tuple[str, str | None]]:
    clock = Ahead()
    store = site.open(clock=clock)  # type: ignore[arg-type]
    try:
        return await late_notifier(HumanInputHandler(store=store), clock.move, concurrency)
    finally:
        await store.close()


async def on_memory_store(concurrency: int) -> list[tuple[str, str | None]]:
    return await late_notifier(HumanInputHandler(), advance, concurrency)


@pytest.mark.parametrize("concurrency", [64, 1])
def test_a_late_notifier_tells_a_ladder_in_order(store_site: StoreSite, concurrency: int) -> None:
    """Started once the announcement, the reminder and the escalation are all due, in one
    claim or one by one: bob hears only of the escalation, alice of each step in turn.

    The memory store's clock is the event loop's, so it runs on the virtual clock; a
    durable store's is injected, on the real loop.
    """
    if store_site.durable:
        seen = asyncio.run(on_durable_store(store_site, concurrency))
    else:
        seen = run_virtual(on_memory_store(concurrency))
    assert [kind for kind, to in seen if to == "alice"] == [
        "question_pending",
        "question_reminder",
        "question_escalated",
        "question_settled",
    ]
    assert [kind for kind, to in seen if to == "bob"] == ["question_escalated", "question_settled"]
