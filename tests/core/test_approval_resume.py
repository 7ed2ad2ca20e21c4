"""An approved call after a crash: ``resume_pending()`` runs it once, and never twice.

The first process stops (its turn task cut, as a kill would) at a chosen point; a second
process on the same durable store re-drives the turn. Every durable deployment runs this.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from tests.core.room_stores import Place

from roomkit import (
    AITool,
    Approval,
    HookTrigger,
    HumanInputHandler,
    HumanInputToolHandler,
    InboundMessage,
    PendingInputEvent,
    RoomKit,
    TextContent,
)
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.approvals import approve

SEND = AITool(
    name="send",
    description="Send it.",
    parameters={"type": "object", "properties": {"to": {"type": "string"}}},
)
CALL = AIResponse(tool_calls=[AIToolCall(id="tc-1", name="send", arguments={"to": "bob"})])


class Outbox:
    def __init__(self, *, hang: bool = False) -> None:
        self.sent: list[dict[str, Any]] = []
        self.entered = asyncio.Event()
        self.hang = hang

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.sent.append(arguments)
        self.entered.set()
        if self.hang:
            await asyncio.Event().wait()
        return "sent"


async def kit_on(
    place: Place, responses: list[Any], outbox: Outbox, **stores: Any
) -> tuple[RoomKit, HumanInputToolHandler]:
    human = HumanInputToolHandler(
        {"Ask"},
        handler=HumanInputHandler(store=stores["questions"]),
        approvals={"send": Approval()},
    )
    kit = RoomKit(store=stores["rooms"])
    channel = AIChannel(
        "ai",
        provider=MockAIProvider(ai_responses=responses),
        human_input_handler=human,
        tools=[SEND],
        tool_handler=outbox,
    )
    kit.register_channel(channel)
    return kit, human


async def crash_during(place: Place, outbox: Outbox, *, decide: bool) -> str:
    """Run a turn until its approval is raised (and, with ``decide``, decided and the tool
    entered); cut it there, as a kill would. Returns the approval's id."""
    rooms, questions = place.rooms(), place.questions()
    kit, human = await kit_on(place, [CALL], outbox, rooms=rooms, questions=questions)
    await kit.create_room("r1")
    await kit.attach_channel("r1", "ai")
    raised: asyncio.Queue[PendingInputEvent] = asyncio.Queue()

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def seen(event: PendingInputEvent, ctx: Any) -> None:
        raised.put_nowait(event)
        if decide:
            await human.handler.aresolve(event.pending_id, approve(), by="alice")

    turn = asyncio.create_task(
        kit.process_inbound(InboundMessage("ws", "alice", TextContent("mail bob")), room_id="r1")
    )
    event = await raised.get()
    if decide:
        await outbox.entered.wait()
    turn.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await turn
    await kit.close()
    await rooms.close()
    await questions.close()
    return event.pending_id


async def resume(place: Place, outbox: Outbox) -> list[str]:
    rooms, questions = place.rooms(), place.questions()
    done = [AIResponse(content="Done.")]
    kit, _ = await kit_on(place, done, outbox, rooms=rooms, questions=questions)
    try:
        replies = await kit.resume_pending()
        return [reply.content.body for reply in replies]
    finally:
        await kit.close()
        await rooms.close()
        await questions.close()


async def test_an_approval_given_after_a_crash_runs_the_call_once_on_resume(
    place: Place,
) -> None:
    first = Outbox()
    pending_id = await crash_during(place, first, decide=False)
    async with place.questions() as store:  # type: ignore[attr-defined]
        assert await HumanInputHandler(store=store).aresolve(pending_id, approve(), by="alice")

    second = Outbox()
    assert await resume(place, second) == ["Done."]
    assert (first.sent, second.sent) == ([], [{"to": "bob"}])
    assert await resume(place, Outbox()) == []
    async with place.questions() as store:  # type: ignore[attr-defined]
        history = await HumanInputHandler(store=store).history(pending_id)
    assert [entry["type"] for entry in history] == ["created", "decided", "settled", "executed"]


async def test_a_run_cut_by_a_crash_is_not_run_again_on_resume(place: Place) -> None:
    first = Outbox(hang=True)
    await crash_during(place, first, decide=True)

    second = Outbox()
    assert await resume(place, second) == ["Done."]
    assert (first.sent, second.sent) == ([{"to": "bob"}], [])
