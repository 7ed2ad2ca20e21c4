"""An agent process for the restart test: asks a person, may be killed, resumes.

``python restart_agent.py DB ask``    creates the room and runs a turn that asks a question
                                       (it waits until killed).
``python restart_agent.py DB resume`` re-drives the unfinished turn and prints its reply.

Each line it prints is JSON, so the test reads what happened.
"""

from __future__ import annotations

import asyncio
import json
import sys

from roomkit import HumanInputToolHandler, InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.sqlite_store import SQLiteRoomStore
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse, AITool, AIToolCall
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores.sqlite import SQLiteStore

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)


class TravelAgent(AIProvider):
    """Asks where to go, then books it; counts its model calls."""

    def __init__(self) -> None:
        self.generated = 0

    @property
    def model_name(self) -> str:
        return "travel-agent"

    async def generate(self, context: AIContext) -> AIResponse:
        self.generated += 1
        last = context.messages[-1]
        results = last.tool_result_parts
        if results:
            return AIResponse(content=f"Booked a trip to {results[0].content}.")
        call = AIToolCall(id="call-1", name="AskUserQuestion", arguments={"question": "Where?"})
        return AIResponse(content="", tool_calls=[call])


async def main(db: str, mode: str) -> None:
    rooms = SQLiteRoomStore(db)
    pending = SQLiteStore(db, backstop_interval=0.02)
    kit = RoomKit(store=rooms)
    model = TravelAgent()
    human = HumanInputToolHandler(
        {"AskUserQuestion"}, handler=HumanInputHandler(store=pending), tool_definitions=[ASK]
    )
    kit.register_channel(AIChannel("ai", provider=model, human_input_handler=human))

    @kit.on("user_input_required")
    async def asked(event: object) -> None:
        print(json.dumps({"asked": getattr(event, "data", {}).get("pending_id")}), flush=True)

    if mode == "ask":
        await kit.create_room("trip")
        await kit.attach_channel("trip", "ai")
        message = InboundMessage("web", "ann", TextContent("Plan my holiday"))
        await kit.process_inbound(message, room_id="trip")
    else:
        replies = await kit.resume_pending()
        print(
            json.dumps(
                {"replies": [r.content.body for r in replies], "generated": model.generated}
            ),
            flush=True,
        )
        await kit.close()
        await pending.close()
        await rooms.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
