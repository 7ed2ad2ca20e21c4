"""A request's announcement is worked out before its ladder's steps, whichever notifier holds
it, on every store: a person a request is escalated to hears of it once, by the escalation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tests.notify.recorder import Recorder
from tests.notify.test_late_ladder import Ahead
from tests.servers.stores import StoreSite

from roomkit.notify import Directory, Ladder, Notifier, Person, escalate
from roomkit.stores.outbox import STEPS, OutboxItem, now_of, step_id
from roomkit.testing import advance, run_virtual
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import record_ladder

PEOPLE = Directory({"alice": Person(email="alice@example.com", manager="bob")})
POLL = 60.0
"""The notifier's poll: a step it hands back is due again that much later on the store's clock."""


async def escalated_while_held(
    handler: HumanInputHandler, later: Callable[[float], Awaitable[None]]
) -> list[tuple[str, str | None]]:
    """Another notifier claims alice's announcement and goes quiet; the escalation to bob
    falls due while it holds it. What a running notifier then sends, once that claim ends."""
    request = await handler.create("ask", {"question": "Deploy?"}, actor_id="alice")
    await record_ladder(handler, request, Ladder(escalate(after=60, to="manager")))
    outbox, now = handler.outbox, now_of(handler)
    announce = step_id(request.pending_id, "announce")
    body = {"job": "announce"}
    await outbox.add([OutboxItem(announce, request.pending_id, now, body, created=now)])
    [held] = await outbox.claim("gone", now, 3600, 0, lanes={STEPS: 1})
    assert held.item_id == announce
    await later(120)  # the escalation is due; the other notifier's lease runs on
    recorder = Recorder()
    async with Notifier(handler, [recorder], directory=PEOPLE, poll=POLL) as notifier:
        await notifier.wait_idle()  # the escalation was claimed
        # The other notifier stops: it hands the announcement back, due at once.
        assert await outbox.renew(announce, "gone", now_of(handler))
        await notifier.wait_idle()
        await later(POLL + 1)  # what was handed back for a poll is due again
        await notifier.wait_idle()
    return recorder.seen()


async def on_durable_store(site: StoreSite) -> list[tuple[str, str | None]]:
    clock = Ahead()
    store = site.open(clock=clock)  # type: ignore[arg-type]
    try:
        return await escalated_while_held(HumanInputHandler(store=store), clock.move)
    finally:
        await store.close()


def test_an_escalation_waits_for_the_announcement_another_notifier_holds(
    store_site: StoreSite,
) -> None:
    """Bob hears of the request once, by its escalation: the announcement, worked out after
    it, would tell him of it again as a new question.

    The memory store's clock is the event loop's, so it runs on the virtual clock; a
    durable store's is injected, on the real loop.
    """
    if store_site.durable:
        seen = asyncio.run(on_durable_store(store_site))
    else:
        seen = run_virtual(escalated_while_held(HumanInputHandler(), advance))
    assert [kind for kind, to in seen if to == "alice"] == [
        "question_pending",
        "question_escalated",
    ]
    assert [kind for kind, to in seen if to == "bob"] == ["question_escalated"]
