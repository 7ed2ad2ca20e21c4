"""A turn journalled on a durable room store, whose provider puts in its metadata what JSON
cannot hold (an SDK object, bytes that are no text): the journal records the response without
those entries, says which it left out, and the turn goes on to its reply. Arguments JSON
cannot hold fail the turn with an error that names the call."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from roomkit import HookTrigger, HumanInputToolHandler, InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.exceptions import ProviderResponseError
from roomkit.core.store import JournalStep
from roomkit.providers.ai.base import AIResponse, AITool, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.stores.sqlite import SQLiteRoomStore
from roomkit.tools.human_input import HumanInputHandler

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)


class VendorMessage:
    """An SDK's own object, which a provider keeps as it came."""


async def test_metadata_json_cannot_hold_is_left_out_of_the_journal_by_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    call = AIToolCall(
        id="call-1",
        name="AskUserQuestion",
        arguments={"question": "Where to?"},
        metadata={"signature": b"\xff\xfe", "index": 0},
    )
    asking = AIResponse(tool_calls=[call], metadata={"raw": VendorMessage(), "id": "msg-1"})
    model = MockAIProvider(ai_responses=[asking, AIResponse(content="Lisbon it is.")])
    recorded: list[JournalStep] = []
    async with SQLiteRoomStore(tmp_path / "kit.db") as rooms:
        kit = RoomKit(store=rooms)
        handler = HumanInputHandler()
        human = HumanInputToolHandler({"AskUserQuestion"}, handler=handler, tool_definitions=[ASK])
        kit.register_channel(AIChannel("ai", provider=model, human_input_handler=human))
        await kit.create_room("trip")
        await kit.attach_channel("trip", "ai")

        @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
        async def answer(event: Any, ctx: Any) -> None:
            [turn] = await rooms.open_turns()
            recorded.extend(await rooms.steps(turn.turn_id))
            handler.resolve(event.pending_id, "Lisbon")

        with caplog.at_level(logging.WARNING, logger="roomkit.channels.ai"):
            result = await kit.process_inbound(
                InboundMessage("web", "ann", TextContent("Plan my holiday")), room_id="trip"
            )
        await kit.close()

        assert [reply.content.body for reply in result.responses] == ["Lisbon it is."]
        assert await rooms.open_turns() == []
    [response] = [step.payload for step in recorded if step.kind == "response"]
    assert response["metadata"] == {"id": "msg-1"}
    assert response["tool_calls"][0]["metadata"] == {"index": 0}
    assert response["tool_calls"][0]["arguments"] == {"question": "Where to?"}
    left_out = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(left_out) == 2
    assert left_out[0].startswith("Entry 'signature' of the metadata of tool call 'call-1'")
    assert left_out[1].startswith("Entry 'raw' of the response's metadata")


async def test_arguments_json_cannot_hold_fail_the_turn_naming_the_call(tmp_path: Path) -> None:
    call = AIToolCall(id="call-1", name="AskUserQuestion", arguments={"when": VendorMessage()})
    model = MockAIProvider(ai_responses=[AIResponse(tool_calls=[call])])
    async with SQLiteRoomStore(tmp_path / "kit.db") as rooms:
        kit = RoomKit(store=rooms)
        kit.register_channel(AIChannel("ai", provider=model))
        await kit.create_room("trip")
        await kit.attach_channel("trip", "ai")

        with pytest.raises(ProviderResponseError, match="arguments of tool call 'call-1'"):
            await kit.process_inbound(
                InboundMessage("web", "ann", TextContent("Plan my holiday")), room_id="trip"
            )
        await kit.close()

        assert await rooms.open_turns() == []
