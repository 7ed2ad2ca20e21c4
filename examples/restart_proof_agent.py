"""An agent that asks a person through ``roomkit desk`` and survives ``kill -9`` while it waits.

The agent and the desk are separate processes on one store (SQLite or Redis)::

    roomkit desk --store sqlite:///kit.db                   # prints "Open http://...#token=..."
    python examples/restart_proof_agent.py sqlite:///kit.db # asks alice, prints "asked ID"

Answer in the desk: on the page, with ``roomkit pending answer ID blue``, or with
``POST /api/requests/ID/answer``. Kill the agent while it waits (even ``kill -9``) and start
it again with the same command: finding the turn the killed run left waiting, it prints
``resuming 1 turn(s) ...``, re-attaches to the same question (no second one is asked; its
announcement runs again only if the kill came before it was recorded) and goes on with the
answer, given before or after the restart. A start that finds no such turn resumes nothing:
the first asks, and one after the conversation ended says so.
With ``redis://127.0.0.1:6379/0`` in both commands the same runs on Redis.

- The model is scripted but reads the conversation: it asks until a tool result is there,
  then says what it got, so a resumed turn takes the same next step as the first run.
- At start-up, the room store's ``open_turns()`` (in the same file, or under the same Redis
  prefix) lists the turns left unfinished, and ``kit.resume_pending()`` re-drives them from
  the steps it recorded.
"""

from __future__ import annotations

import asyncio
import sys

from roomkit import (
    AITool,
    HookExecution,
    HookTrigger,
    HumanInputHandler,
    HumanInputToolHandler,
    InboundMessage,
    PendingInputEvent,
    RoomEvent,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.core.store import turn_journal
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse, AIToolCall
from roomkit.stores import close_stores, open_url

ROOM = "logo"
ACTOR = "alice"
ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question and wait for the answer.",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
)


class OneQuestionModel(AIProvider):
    """Asks which colour the logo should be, then says what the answer was."""

    @property
    def model_name(self) -> str:
        return "one-question"

    async def generate(self, context: AIContext) -> AIResponse:
        results = [part for message in context.messages for part in message.tool_result_parts]
        if not results:
            question = {"question": "Which colour should the logo be?"}
            return AIResponse(
                tool_calls=[AIToolCall(id="ask-1", name="AskUserQuestion", arguments=question)]
            )
        return AIResponse(content=f"Making the logo with your answer: {results[-1].result}")


def say(line: str) -> None:
    print(line, flush=True)


async def main(url: str) -> None:
    questions, rooms = open_url(url)
    kit = RoomKit(store=rooms)
    human = HumanInputToolHandler(
        {"AskUserQuestion"}, handler=HumanInputHandler(store=questions), tool_definitions=[ASK]
    )
    kit.register_channel(AIChannel("agent", provider=OneQuestionModel(), human_input_handler=human))
    chat = WebSocketChannel("chat")
    kit.register_channel(chat)

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def announce(event: PendingInputEvent, ctx: object) -> None:
        say(f"asked {event.pending_id}: {event.arguments['question']}")

    async def show(connection_id: str, event: RoomEvent) -> None:
        say(f"[{event.sender_id}] {event.content.body}")

    chat.register_connection("alice-screen", show, room_id=ROOM)
    journal = turn_journal(rooms)
    try:
        # The turns a previous run left unfinished (killed while it waited on alice).
        left = await journal.open_turns() if journal is not None else []
        if left:
            say(f"resuming {len(left)} turn(s) a previous run left unfinished")
            await kit.resume_pending()
        else:
            try:
                await kit.get_room(ROOM)
            except KeyError:
                await kit.create_room(ROOM)
                await kit.attach_channel(ROOM, "agent")
                await kit.attach_channel(ROOM, "chat")
                message = TextContent("Can you make me a logo?")
                await kit.process_inbound(
                    InboundMessage(channel_id="chat", sender_id=ACTOR, content=message)
                )
            else:
                say("nothing to resume: the conversation is over")
        say("done")
    finally:
        await kit.close()
        await close_stores(questions, rooms)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///kit.db"))
