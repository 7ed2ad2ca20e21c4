"""The external-provider path: a provider that runs tools itself asks a person through
HumanInputHandler inside an ExternalToolHandler.

The model calls AskUserQuestion, a tool the channel does not serve, so the channel hands the
call to the ExternalToolHandler. The handler creates a request on its own HumanInputHandler
(routed to the kit's ON_USER_INPUT_REQUIRED hooks with kit.route_human_input), waits for the
answer, and returns it as a *success*: ToolDecision(approved=True, result=answer). A refusal
(approved=False) is what a rejected question becomes: the model reads why.

The provider runs its tools on its own side, so it reads the outcome itself: a round made
only of its calls ends the turn, and the handler reports each outcome to ON_TOOL_CALL.

Run: python examples/external_human_input.py
"""

from __future__ import annotations

import asyncio
from typing import Any

from roomkit import (
    HookExecution,
    HookTrigger,
    HumanInputRejectedError,
    InboundMessage,
    PendingInputEvent,
    RoomKit,
    TextContent,
    ToolCallEvent,
)
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools import ExternalToolHandler, ToolDecision, current_tool_actor_id
from roomkit.tools.human_input import HumanInputHandler

handler = HumanInputHandler()


class SandboxTools(ExternalToolHandler):
    """Decides the calls of a provider that executes tools in its own sandbox."""

    async def process_tool_call(
        self, tool_name: str, tool_input: dict[str, Any], *, room_id: str | None = None, **kw: Any
    ) -> ToolDecision:
        if tool_name == "AskUserQuestion":
            pending = await handler.create(
                tool_name,
                tool_input,
                room_id=room_id or "",
                tool_call_id=kw.get("tool_call_id", ""),
                channel_id=self.channel_id,
                actor_id=current_tool_actor_id(),  # who to ask: the turn's author
            )
            try:
                answer = await handler.wait(pending.pending_id, timeout=300)
            except HumanInputRejectedError as rejected:
                # A refusal: the model reads why.
                return ToolDecision(approved=False, reason=f"Rejected: {rejected}")
            # An answer is the call's successful result.
            return ToolDecision(approved=True, result=answer)
        return ToolDecision(approved=True)

    async def on_tool_result(
        self, tool_name: str, tool_input: dict[str, Any], result: Any, **kw: Any
    ) -> None:
        await self._fire_on_tool_hook(
            tool_name,
            tool_input,
            result,
            is_error=kw.get("is_error", False),
            tool_call_id=kw.get("tool_call_id", ""),
            room_id=kw.get("room_id"),
        )


async def main() -> list[str]:
    kit = RoomKit()
    model = MockAIProvider(
        ai_responses=[
            AIResponse(
                content="Checking with you before I deploy.",
                tool_calls=[
                    AIToolCall(
                        id="tc-1",
                        name="AskUserQuestion",
                        arguments={"question": "Deploy to production?"},
                    )
                ],
            ),
        ]
    )
    ai = AIChannel("agent", provider=model, external_tool_handler=SandboxTools())
    kit.register_channel(ai)
    kit.route_human_input(handler, "agent")  # ON_USER_INPUT_REQUIRED fires for its requests
    log: list[str] = []

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def notify_user(event: PendingInputEvent, ctx: object) -> None:
        log.append(f"[asked {event.actor_id}] {event.arguments['question']}")
        # The person answers at once here; a real app answers from its REST/WebSocket handler.
        handler.resolve(event.pending_id, '{"answer": "yes"}')

    @kit.hook(HookTrigger.ON_TOOL_CALL, execution=HookExecution.ASYNC)
    async def record(event: ToolCallEvent, ctx: object) -> None:
        log.append(f"[{event.outcome}] {event.name}: {event.result}")

    await kit.create_room("ops")
    await kit.attach_channel("ops", "agent")
    result = await kit.process_inbound(
        InboundMessage(channel_id="console", sender_id="bob", content=TextContent("Ship it.")),
        room_id="ops",
    )
    await kit.hooks.drain()  # the ASYNC observers have run
    log.extend(f"[{reply.sender_id}] {reply.content.body}" for reply in result.responses)
    await kit.close()
    return log


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
