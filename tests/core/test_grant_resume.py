"""A call a standing grant approved, cut by a crash: ``resume_pending()`` re-attaches to its
request, and the grant is not used again."""

from __future__ import annotations

import asyncio
import contextlib
import time

from tests.core.room_stores import Place
from tests.core.test_approval_resume import CALL, Outbox, kit_on, resume

from roomkit import HumanInputHandler, InboundMessage, TextContent
from roomkit.stores.grants import Grant


async def test_a_granted_call_cut_by_a_crash_takes_no_second_use_on_resume(
    place: Place,
) -> None:
    async with place.questions() as store:  # type: ignore[attr-defined]
        grant = Grant(
            grant_id="g-send",
            tool="send",
            granted_by=("alice",),
            expires_at=time.time() + 3600,
            room_id="r1",
            max_uses=2,
        )
        await store.grants.add(grant)
    first = Outbox(hang=True)
    rooms, questions = place.rooms(), place.questions()
    kit, _ = await kit_on(place, [CALL], first, rooms=rooms, questions=questions)
    await kit.create_room("r1")
    await kit.attach_channel("r1", "ai")
    turn = asyncio.create_task(
        kit.process_inbound(InboundMessage("ws", "alice", TextContent("mail bob")), room_id="r1")
    )
    await first.entered.wait()
    turn.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await turn
    await kit.close()
    await rooms.close()
    await questions.close()

    second = Outbox()
    assert await resume(place, second) == ["Done."]
    assert (first.sent, second.sent) == ([{"to": "bob"}], [])
    async with place.questions() as store:  # type: ignore[attr-defined]
        used = await store.grants.get("g-send")
        assert used is not None
        assert used.uses == 1
        [request] = await store.list_settled()
        assert request.settled_by == "grant:g-send"
        history = await HumanInputHandler(store=store).history(request.pending_id)
    assert [entry["type"] for entry in history] == [
        "created",
        "grant_used",
        "decided",
        "settled",
    ]
