"""A notifier that starts once a request's whole ladder is due, on every store: its steps are
worked out one at a time, in ladder order, and each person hears of them in that order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest
from tests.notify.recorder import Holding, Recorder
from tests.servers.stores import Ahead, StoreSite

from roomkit.notify import Directory, Ladder, Notice, Notifier, Person, escalate, remind
from roomkit.notify.ladders import give_ladder
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


async def expired_while_away(site: StoreSite) -> tuple[list[tuple[str, str | None]], Any]:
    """Ask alice on a ladder, with nobody waiting (the agent stopped); start a notifier only
    once the deadline has passed."""
    clock = Ahead()
    store = site.open(clock=clock)  # type: ignore[arg-type]
    try:
        handler = HumanInputHandler(store=store)
        request = await handler.create(
            "ask", {"question": "Deploy?"}, actor_id="alice", timeout=1000
        )
        await record_ladder(handler, request, LADDER)
        await clock.move(1100)  # past the escalation (900 s) and the deadline (1000 s)
        recorder = Recorder()
        async with Notifier(handler, [recorder], directory=PEOPLE, poll=0.05) as notifier:
            await notifier.wait_idle()
        return recorder.seen(), await handler.get_request(request.pending_id)
    finally:
        await store.close()


def test_a_request_past_its_deadline_is_timed_out_not_reminded(store_site: StoreSite) -> None:
    """Nobody waits on it any more: the notifier records its timeout rather than remind or
    escalate with answer links that no longer answer."""
    if not store_site.durable:
        pytest.skip("on the memory store the request's own process times it out")
    seen, request = asyncio.run(expired_while_away(store_site))
    assert seen == [], "alice never heard of it, so she hears nothing of its end either"
    assert request is not None
    assert request.status.value == "timed_out"
    assert request.approvers == ()


class Releases(Recorder):
    """A second surface; telling it a request ended releases the held reminders."""

    def __init__(self, held: Holding) -> None:
        super().__init__("plain")
        self.held = held

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        if notice.type == "question_settled":
            self.held.release.set()
        return await super().send(notice)


async def answered_while_reminded(site: StoreSite) -> list[Notice]:
    clock = Ahead()
    store = site.open(clock=clock)  # type: ignore[arg-type]
    held = Holding("question_reminder", "holding")
    try:
        handler = HumanInputHandler(store=store)
        async with Notifier(handler, [held, Releases(held)], directory=PEOPLE, poll=0.05):
            request = await handler.create("ask", {"q": "Ship?"}, actor_id="alice", timeout=1000)
            await record_ladder(handler, request, Ladder(remind(after=300)))
            await clock.move(301)
            await held.holding.wait()
            assert await handler.aresolve(request.pending_id, "yes", by="alice")
            await held.wait_until(lambda seen: ("question_settled", "alice") in seen)
        return held.notices
    finally:
        await store.close()


def test_an_ending_waits_for_a_reminder_on_its_way_to_the_same_person(
    store_site: StoreSite,
) -> None:
    """The request is answered while its reminder is being sent: the ending goes once the
    reminder is out, and carries its receipt, so the reminder's message is updated too."""
    if not store_site.durable:
        pytest.skip("the durable stores' clock is injected here")
    notices = asyncio.run(answered_while_reminded(store_site))
    kinds = [notice.type for notice in notices]
    assert kinds == ["question_pending", "question_reminder", "question_settled"]
    assert len(notices[-1].receipts) == 2, "the announcement's and the reminder's receipts"


async def both_ladders(site: StoreSite) -> list[tuple[str, str | None]]:
    """The file's ladder and the tool's both recorded for one request, as when the notifier
    hears of the request before its tool has recorded its own; every step then falls due."""
    clock = Ahead()
    store = site.open(clock=clock)  # type: ignore[arg-type]
    try:
        handler = HumanInputHandler(store=store)
        request = await handler.create("ask", {"q": "Ship?"}, actor_id="alice", timeout=2000)
        assert await give_ladder(handler, LADDER, request.pending_id)  # the file's
        await record_ladder(handler, request, Ladder(remind(after=100), remind(after=200)))
        await clock.move(1000)
        recorder = Recorder()
        async with Notifier(handler, [recorder], directory=PEOPLE, poll=0.05) as notifier:
            await recorder.wait_until(lambda seen: seen.count(("question_reminder", "alice")) >= 2)
            await notifier.wait_idle()
        return recorder.seen()
    finally:
        await store.close()


def test_a_files_ladder_gives_way_to_the_tools_own_recorded_at_the_same_time(
    store_site: StoreSite,
) -> None:
    """Only the tool's two reminders are told: none of the file's steps, its escalation to
    the manager included."""
    if not store_site.durable:
        pytest.skip("the durable stores' clock is injected here")
    seen = asyncio.run(both_ladders(store_site))
    assert seen == [
        ("question_pending", "alice"),
        ("question_reminder", "alice"),
        ("question_reminder", "alice"),
    ]
