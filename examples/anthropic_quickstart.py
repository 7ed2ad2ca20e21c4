"""Quick start on a real model: Claude asks you a question in the terminal, then goes on.

- AnthropicAIProvider talks to Claude (the key comes from ANTHROPIC_API_KEY).
- HumanInputToolHandler offers AskUserQuestion and pauses the tool loop while it is open.
- The ON_USER_INPUT_REQUIRED hook announces the question (here: puts it on a queue that the
  "frontend" task reads), without holding up the wait.
- The frontend task asks you in the terminal and answers with human.handler.resolve(), as a
  REST or WebSocket handler would.

Run:
    pip install -e '.[anthropic]'
    export ANTHROPIC_API_KEY=sk-ant-...
    python examples/anthropic_quickstart.py
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable

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
from roomkit.providers.ai.anthropic import AnthropicAIProvider

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question and wait for the answer.",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
)

REQUEST = "I'd like a logo for my bakery. Ask me the one thing you need to know first."


async def ask_in_terminal(question: str) -> str:
    """Ask the person at the terminal; the blocking read runs off the event loop."""
    return await asyncio.to_thread(input, f"{question}\n> ")


async def main(*, answer: Callable[[str], Awaitable[str]] = ask_in_terminal) -> list[str]:
    """Run one turn in which the model may ask the person; returns the transcript.

    Args:
        answer: how the person answers a question (the terminal by default).
    """
    api_key = os.environ.get("ANTHROPIC_API_KEY")
    if not api_key:
        raise SystemExit(
            "Set ANTHROPIC_API_KEY to run this example, e.g. export ANTHROPIC_API_KEY=sk-ant-..."
        )

    kit = RoomKit()
    human = HumanInputToolHandler(
        tool_names={"AskUserQuestion"}, timeout=300, tool_definitions=[ASK]
    )
    provider = AnthropicAIProvider(model="claude-opus-5", api_key=api_key)
    ai = AIChannel(
        "agent",
        provider=provider,
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
        while True:
            event = await questions.get()
            question = str(event.arguments["question"])
            transcript.append(f"[asked {event.actor_id}] {question}")
            reply = json.dumps({"answer": await answer(question)})
            transcript.append(f"[{event.actor_id} answers] {reply}")
            human.handler.resolve(event.pending_id, reply)

    async def show(connection_id: str, event: RoomEvent) -> None:
        transcript.append(f"[{event.sender_id}] {event.content.body}")

    await kit.create_room("bakery")
    await kit.attach_channel("bakery", "agent")
    await kit.attach_channel("bakery", "chat")
    chat.register_connection("baker-terminal", show, room_id="bakery")

    person = asyncio.create_task(frontend())
    transcript.append(f"[baker] {REQUEST}")
    try:
        await kit.process_inbound(
            InboundMessage(channel_id="chat", sender_id="baker", content=TextContent(REQUEST))
        )
    finally:
        person.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await person
        await kit.close()
        await provider.close()
    return transcript


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
