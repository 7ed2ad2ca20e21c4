"""Two kits alive at once over one human-input handler, under one channel id.

A service may build a kit per request (or per tenant) over one shared
``HumanInputToolHandler``. Each kit routes the handler for its agent's id; the last one takes
the id over. A question is announced to the kit whose turn asked it, and a kit's close
withdraws only its own questions.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from roomkit import (
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    InboundResult,
    RoomKit,
    TextContent,
)
from roomkit.channels.ai import AIChannel
from roomkit.models.pending_input import PendingInputEvent, PendingInputStatus
from roomkit.providers.ai.base import AIResponse, AITool
from roomkit.providers.ai.mock import MockAIProvider

ASK = AITool(
    name="Ask",
    description="Ask the user.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)


Heard = asyncio.Queue[tuple[str, str]]
"""Every kit's announcements (its ``user_input_required`` event): its room, the request id."""


@dataclass
class Tenant:
    """One kit over the shared handler, its room, and what its hook heard."""

    kit: RoomKit
    room: str
    announced: Heard
    heard: list[PendingInputEvent] = field(default_factory=list)
    """The events this kit's ON_USER_INPUT_REQUIRED hook was called with."""
    turns: list[asyncio.Task[InboundResult]] = field(default_factory=list)

    def start_turn(self) -> asyncio.Task[InboundResult]:
        message = InboundMessage("web", "alice", TextContent("help me"))
        turn = asyncio.create_task(self.kit.process_inbound(message, room_id=self.room))
        self.turns.append(turn)
        return turn

    async def question(self) -> PendingInputEvent:
        """The next question any kit announces, which must be this kit's hook hearing it."""
        announcer, pending_id = await self.announced.get()
        assert announcer == self.room
        (event,) = [event for event in self.heard if event.pending_id == pending_id]
        assert event.room_id == self.room
        return event


async def open_tenant(human: HumanInputToolHandler, room: str, heard: Heard) -> Tenant:
    kit = RoomKit()
    provider = MockAIProvider(
        ai_responses=[
            MockAIProvider.tool_call("Ask", {"question": f"Which plan for {room}?"}),
            AIResponse(content="Done."),
        ]
    )
    kit.register_channel(AIChannel("agent", provider=provider, human_input_handler=human))
    await kit.create_room(room)
    await kit.attach_channel(room, "agent")
    tenant = Tenant(kit, room, heard)

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def person(event: PendingInputEvent, ctx: Any) -> None:
        tenant.heard.append(event)

    @kit.on("user_input_required")
    async def announced(event: Any) -> None:
        await heard.put((room, event.data["pending_id"]))

    return tenant


@pytest.fixture
def human() -> HumanInputToolHandler:
    return HumanInputToolHandler({"Ask"}, tool_definitions=[ASK], timeout=300)


@pytest.fixture
async def tenants(human: HumanInputToolHandler) -> AsyncIterator[tuple[Tenant, Tenant]]:
    heard: Heard = asyncio.Queue()
    first = await open_tenant(human, "first-room", heard)
    second = await open_tenant(human, "second-room", heard)
    yield first, second
    for tenant in (first, second):
        await tenant.kit.close()
        await asyncio.gather(*tenant.turns, return_exceptions=True)


async def test_each_kit_hears_only_the_questions_of_its_own_turns(
    human: HumanInputToolHandler, tenants: tuple[Tenant, Tenant]
) -> None:
    """The first kit's turn asks after a second kit took the id over: the first kit hears it."""
    first, second = tenants

    first_turn = first.start_turn()
    asked_first = await first.question()
    second_turn = second.start_turn()
    asked_second = await second.question()

    assert first.announced.empty()
    assert [event.pending_id for event in first.heard] == [asked_first.pending_id]
    assert [event.pending_id for event in second.heard] == [asked_second.pending_id]
    assert await human.handler.aresolve(asked_first.pending_id, "gold")
    assert await human.handler.aresolve(asked_second.pending_id, "silver")
    assert [reply.content.body for reply in (await first_turn).responses] == ["Done."]
    assert [reply.content.body for reply in (await second_turn).responses] == ["Done."]


async def test_closing_the_kit_that_took_the_id_over_leaves_the_other_asking(
    human: HumanInputToolHandler,
) -> None:
    """A second kit takes the id over while the first one's question is open; the second
    kit's close withdraws its own question, the first kit's stays answerable, and the first
    kit's next turn still asks and is heard by it."""
    heard: Heard = asyncio.Queue()
    first = await open_tenant(human, "first-room", heard)
    first_turn = first.start_turn()
    asked_first = await first.question()
    second = await open_tenant(human, "second-room", heard)
    second_turn = second.start_turn()
    asked_second = await second.question()

    await second.kit.close()

    await asyncio.gather(second_turn, return_exceptions=True)
    withdrawn = await human.handler.get_request(asked_second.pending_id)
    assert withdrawn is not None
    assert withdrawn.status is PendingInputStatus.REJECTED
    assert not human.handler.is_closed_for("agent")
    assert await human.handler.aresolve(asked_first.pending_id, "gold")
    assert [reply.content.body for reply in (await first_turn).responses] == ["Done."]

    next_turn = first.start_turn()
    asked_again = await first.question()
    assert await human.handler.aresolve(asked_again.pending_id, "bronze")
    assert [reply.content.body for reply in (await next_turn).responses] == ["Done."]

    await first.kit.close()
    assert human.handler.is_closed_for("agent")


async def test_closing_the_earlier_kit_leaves_the_later_one_s_question_answerable(
    human: HumanInputToolHandler, tenants: tuple[Tenant, Tenant]
) -> None:
    first, second = tenants
    first_turn = first.start_turn()
    asked_first = await first.question()
    second_turn = second.start_turn()
    asked_second = await second.question()

    await first.kit.close()

    await asyncio.gather(first_turn, return_exceptions=True)
    withdrawn = await human.handler.get_request(asked_first.pending_id)
    assert withdrawn is not None
    assert withdrawn.status is PendingInputStatus.REJECTED
    assert await human.handler.aresolve(asked_second.pending_id, "silver")
    assert [reply.content.body for reply in (await second_turn).responses] == ["Done."]


async def test_a_question_asked_outside_every_turn_goes_to_the_last_kit(
    human: HumanInputToolHandler, tenants: tuple[Tenant, Tenant]
) -> None:
    """A request a tool creates itself, outside any kit's turn, keeps the id's routing."""
    _, second = tenants

    pending = await human.handler.create("Ask", {}, room_id="second-room", channel_id="agent")

    assert (await second.question()).pending_id == pending.pending_id
    assert await human.handler.aresolve(pending.pending_id, "ok")


async def test_a_kit_per_turn_over_one_handler_hears_each_turn() -> None:
    """Kits built one per turn and never closed: each turn's question reaches its own kit."""
    human = HumanInputToolHandler({"Ask"}, tool_definitions=[ASK], timeout=300)
    heard: Heard = asyncio.Queue()
    for turn_number in range(3):
        tenant = await open_tenant(human, f"room-{turn_number}", heard)
        turn = tenant.start_turn()
        asked = await tenant.question()
        assert await human.handler.aresolve(asked.pending_id, "yes")
        await turn
    assert not human.handler.is_closed_for("agent")
