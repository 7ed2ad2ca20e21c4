"""A ladder's follow-ups never overtake the announcement they follow, on the virtual clock."""

from __future__ import annotations

import asyncio

from tests.notify.recorder import Holding

from roomkit.models.enums import ChannelType
from roomkit.notify import Directory, Ladder, Notifier, Person, escalate, remind
from roomkit.testing import advance
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
from roomkit.tools.human_input.tool_handler import HumanInputCall

CALL = HumanInputCall("room", "agent", ChannelType.AI, "tc-1", "alice")
PEOPLE = Directory({"alice": Person(email="alice@example.com", manager="bob")})


async def test_a_reminder_waits_for_the_announcement_on_its_way() -> None:
    handler = HumanInputHandler()
    ladder = Ladder(remind(after=300), escalate(after=400, to="manager"))
    human = HumanInputToolHandler({"ask"}, timeout=1800, handler=handler, ladder=ladder)
    surface = Holding("question_pending")
    # A lease longer than the wait, so that the announcement in flight is not taken back.
    async with Notifier(handler, [surface], directory=PEOPLE, lease=3600, poll=60):
        asking = asyncio.create_task(human.ask("ask", {"question": "Deploy?"}, call=CALL))
        await surface.holding.wait()
        await advance(600)  # both steps fall due while the announcement is on its way
        # Bob hears of the request first by its escalation; alice only once announced to.
        assert surface.seen() == [("question_escalated", "bob")]
        surface.release.set()
        await surface.wait_until(lambda seen: len(seen) == 4)
        [request] = await handler.list_pending()
        assert await handler.aresolve(request.pending_id, "yes", by="bob")
        assert await asking == "yes"
        await surface.wait_until(lambda seen: len(seen) == 6)
    seen = surface.seen()
    assert seen[:2] == [("question_escalated", "bob"), ("question_pending", "alice")]
    # Deliveries to one person run side by side once the first is out: no order between them.
    assert sorted(seen[2:4]) == [("question_escalated", "alice"), ("question_reminder", "alice")]
    assert sorted(seen[4:]) == [("question_settled", "alice"), ("question_settled", "bob")]
