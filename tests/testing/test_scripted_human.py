"""ScriptedHuman answers, rejects or stays silent, per question, through a kit's hooks."""

from __future__ import annotations

from roomkit import AITool, HumanInputToolHandler, InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.testing import Reject, ScriptedHuman, Silence
from roomkit.tools import ToolCallContext, tool_turn_context

ASK = AITool(
    name="Ask",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


def asking(times: int) -> list[AIResponse]:
    calls = [
        AIResponse(tool_calls=[AIToolCall(id=f"tc-{n}", name="Ask", arguments={"q": str(n)})])
        for n in range(times)
    ]
    return [*calls, AIResponse(content="done")]


async def test_scripted_human_answers_then_rejects_through_the_kit() -> None:
    kit = RoomKit()
    human = HumanInputToolHandler({"Ask"}, tool_definitions=[ASK])
    model = MockAIProvider(ai_responses=asking(2))
    kit.register_channel(AIChannel("agent", provider=model, human_input_handler=human))
    person = ScriptedHuman(human, [{"answer": "blue"}, Reject("not now")])
    person.install(kit)
    await kit.create_room("r")
    await kit.attach_channel("r", "agent")

    await kit.process_inbound(InboundMessage("web", "alice", TextContent("hi")), room_id="r")

    results = [m.content[0].content for m in model.calls[-1].messages if m.role == "tool"]
    assert results == [
        '{"answer": "blue"}',
        '{"error": "Human input rejected: not now"}',
    ]
    assert [event.actor_id for event in person.asked] == ["alice", "alice"]
    await kit.close()


async def test_a_silent_human_leaves_the_request_open_until_its_timeout() -> None:
    human = HumanInputToolHandler({"Ask"}, timeout=0.01)
    person = ScriptedHuman(human.handler, [Silence()])
    human.handler.on_input_required = person
    with tool_turn_context(room_id="r", call=ToolCallContext("r", "tc-1", "agent")):
        try:
            await human.ask("Ask", {"q": "?"})
        except Exception as error:
            outcome = type(error).__name__
    assert outcome == "ToolFailedError"
    assert len(person.asked) == 1


async def test_a_script_function_sees_each_event() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = ScriptedHuman(human, lambda event: f"re: {event.arguments['q']}")
    human.handler.on_input_required = person
    assert await human.ask("Ask", {"q": "color"}) == "re: color"
