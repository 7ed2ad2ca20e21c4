"""An agent asks a person mid-turn, the person answers from another task, the agent goes on.

- MockAIProvider plays the model: it calls AskUserQuestion, then replies with the answer.
- HumanInputToolHandler pauses the tool loop while the question is open.
- The ON_USER_INPUT_REQUIRED hook announces the question (here: puts it on a queue that a
  "frontend" task reads), without holding up the wait.
- The frontend task answers with human.handler.resolve(), as a REST or WebSocket handler would.

Run: python examples/ai_human_input.py
"""

from __future__ import annotations

import asyncio
import json

from roomkit import (
    AITool,
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    PendingInputEvent,
    RoomEvent,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question and wait for the answer.",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
)


async def main() -> list[str]:
    kit = RoomKit()
    human = HumanInputToolHandler(
        tool_names={"AskUserQuestion"}, timeout=300, tool_definitions=[ASK]
    )
    model = MockAIProvider(
        ai_responses=[
            AIResponse(
                tool_calls=[
                    AIToolCall(
                        id="tc-1",
                        name="AskUserQuestion",
                        arguments={"question": "Which color should the logo be?"},
                    )
                ]
            ),
            AIResponse(content="Great, I'll make the logo blue."),
        ]
    )
    ai = AIChannel(
        "agent",
        provider=model,
        system_prompt="You are a helpful assistant. Use AskUserQuestion to ask the user.",
        human_input_handler=human,
    )
    chat = WebSocketChannel("chat")
    kit.register_channel(ai)
    kit.register_channel(chat)

    questions: asyncio.Queue[PendingInputEvent] = asyncio.Queue()
    transcript: list[str] = []

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def notify_user(event: PendingInputEvent, ctx: object) -> None:
        # Broadcast to the frontend; here, a queue the frontend task reads.
        await questions.put(event)

    async def frontend() -> None:
        event = await questions.get()
        transcript.append(f"[asked {event.actor_id}] {event.arguments['question']}")
        answer = json.dumps({"answer": "blue"})
        transcript.append(f"[{event.actor_id} answers] {answer}")
        human.handler.resolve(event.pending_id, answer)

    async def show(connection_id: str, event: RoomEvent) -> None:
        transcript.append(f"[{event.sender_id}] {event.content.body}")

    await kit.create_room("design")
    await kit.attach_channel("design", "agent")
    await kit.attach_channel("design", "chat")
    chat.register_connection("alice-browser", show, room_id="design")

    person = asyncio.create_task(frontend())
    transcript.append("[alice] Can you make me a logo?")
    await kit.process_inbound(
        InboundMessage(
            channel_id="chat", sender_id="alice", content=TextContent("Can you make me a logo?")
        )
    )
    await person
    await kit.close()
    return transcript


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
