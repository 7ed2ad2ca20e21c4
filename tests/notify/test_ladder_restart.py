"""A ladder across a restart, on every store: each step once, by whichever notifier runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from tests.notify.recorder import Recorder

from roomkit.models.enums import ChannelType
from roomkit.notify import Directory, Ladder, Notice, Notifier, Person, escalate, remind
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
from roomkit.tools.human_input.tool_handler import HumanInputCall

PEOPLE = Directory({"alice": Person(email="alice@example.com", manager="bob")})
ESCALATED = {("question_escalated", "alice"), ("question_escalated", "bob")}
FIRST = [("question_pending", "alice"), ("question_reminder", "alice")]


class UntilTheReminder(Recorder):
    """Records the announcement and the reminder and holds back any other notice until its
    notifier stops, which then hands it to the next notifier.

    On a busy machine the escalation may fall due before the first notifier has stopped,
    even before its reminder went out (the escalation to bob waits for no announcement to
    him); held here, it is still the next notifier that delivers it.
    """

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        if (notice.type, notice.recipient) not in FIRST:
            await asyncio.Event().wait()  # cancelled when the notifier stops
        return await super().send(notice)


async def test_each_step_runs_once_across_a_restart_of_the_notifier(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """The agent asks in one process; a notifier in another reminds, stops, and the next
    notifier escalates: no step twice, and the answer ends the wait."""
    agent, first, second = make_handler(), make_handler(), make_handler()
    ladder = Ladder(remind(after=0.2), escalate(after=0.6, to="manager"))
    human = HumanInputToolHandler({"ask"}, timeout=60, handler=agent, ladder=ladder)
    call = HumanInputCall("room", "agent", ChannelType.AI, "tc-1", "alice")
    asking = asyncio.create_task(human.ask("ask", {"question": "Merge?"}, call=call))
    before = UntilTheReminder()
    async with Notifier(first, [before], directory=PEOPLE, poll=0.05):
        await before.wait_until(lambda seen: ("question_reminder", "alice") in seen)
    after = Recorder()
    async with Notifier(second, [after], directory=PEOPLE, poll=0.05) as notifier:
        await after.wait_until(lambda seen: set(seen) >= ESCALATED)
        [request] = await second.list_pending()
        assert await second.aresolve(request.pending_id, "merged", by="bob")
        assert await asking == "merged"
        await after.wait_until(lambda seen: ("question_settled", "bob") in seen)
        await notifier.wait_idle()
    assert before.seen() == FIRST
    # Deliveries to two people run side by side: their order is not fixed.
    assert sorted(after.seen()) == [
        ("question_escalated", "alice"),
        ("question_escalated", "bob"),
        ("question_settled", "alice"),
        ("question_settled", "bob"),
    ]
