"""A turn journalled on a durable room store, whose model writes a lone surrogate into a
call's arguments: the journal takes the response, the call is refused, the turn ends. One in
its reply is stored as U+FFFD."""

from __future__ import annotations

import json
from pathlib import Path

from roomkit import HumanInputToolHandler, InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse, AITool, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.stores.sqlite import SQLiteRoomStore, SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)


async def test_a_journalled_turn_refuses_the_call_and_finishes(tmp_path: Path) -> None:
    db = tmp_path / "kit.db"
    call = AIToolCall(id="call-1", name="AskUserQuestion", arguments={"question": "caf\ud800"})
    model = MockAIProvider(
        ai_responses=[AIResponse(tool_calls=[call]), AIResponse(content="Never mind.")]
    )
    async with SQLiteRoomStore(db) as rooms, SQLiteStore(db) as pending:
        kit = RoomKit(store=rooms)
        human = HumanInputToolHandler(
            {"AskUserQuestion"}, handler=HumanInputHandler(store=pending), tool_definitions=[ASK]
        )
        kit.register_channel(AIChannel("ai", provider=model, human_input_handler=human))
        await kit.create_room("trip")
        await kit.attach_channel("trip", "ai")

        await kit.process_inbound(
            InboundMessage("web", "ann", TextContent("Plan my holiday")), room_id="trip"
        )

        [result] = model.calls[1].messages[-1].tool_result_parts
        assert result.is_error
        assert "valid Unicode text" in json.loads(result.content)["error"]
        assert await human.handler.list_pending() == []
        history = [event.content.body for event in await rooms.list_events("trip")]
        assert history == ["Plan my holiday", "Never mind."]
        assert await rooms.open_turns() == []
        await kit.close()


async def test_a_journalled_reply_holding_a_lone_surrogate_is_stored_cleaned(
    tmp_path: Path,
) -> None:
    model = MockAIProvider(ai_responses=[AIResponse(content="Bon voyage \ud800")])
    async with SQLiteRoomStore(tmp_path / "kit.db") as rooms:
        kit = RoomKit(store=rooms)
        kit.register_channel(AIChannel("ai", provider=model))
        await kit.create_room("trip")
        await kit.attach_channel("trip", "ai")

        result = await kit.process_inbound(
            InboundMessage("web", "ann", TextContent("Plan my holiday")), room_id="trip"
        )

        assert [reply.content.body for reply in result.responses] == ["Bon voyage \ufffd"]
        history = [event.content.body for event in await rooms.list_events("trip")]
        assert history == ["Plan my holiday", "Bon voyage \ufffd"]
        assert await rooms.open_turns() == []
        await kit.close()
