"""The provider interface's data types: messages, contexts, responses and tool calls."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from roomkit.providers.ai import (
    AIContext,
    AIMessage,
    AIProvider,
    AIResponse,
    AITextPart,
    AITool,
    AIToolCall,
    AIToolCallPart,
    AIToolResultPart,
    AIUsage,
    ServedCall,
)


def _context() -> AIContext:
    call = AIToolCall(id="tc-1", name="AskUserQuestion", arguments={"question": "Colour?"})
    return AIContext(
        messages=[
            AIMessage.user("Pick a colour", name="alice"),
            AIMessage.assistant("Let me ask.", [call]),
            AIMessage.tool_results(
                [
                    AIToolResultPart(
                        tool_call_id="tc-1",
                        name="AskUserQuestion",
                        content='{"answer": "blue"}',
                    )
                ]
            ),
        ],
        system_prompt="Be brief.",
        tools=[
            AITool(
                name="AskUserQuestion",
                description="Ask the user.",
                parameters={
                    "type": "object",
                    "properties": {"question": {"type": "string"}},
                    "required": ["question"],
                },
            )
        ],
        metadata={"turn": 1},
        temperature=0.2,
        max_tokens=512,
    )


def test_context_survives_a_json_round_trip() -> None:
    context = _context()
    wire = json.dumps(context.model_dump(mode="json"))
    restored = AIContext.model_validate(json.loads(wire))
    assert restored == context
    assert isinstance(restored.messages[1].content, list)
    assert isinstance(restored.messages[1].content[1], AIToolCallPart)
    assert isinstance(restored.messages[2].content[0], AIToolResultPart)


def test_parts_are_told_apart_by_their_type() -> None:
    message = AIMessage.model_validate(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Hi"},
                {"type": "tool_call", "id": "c1", "name": "t", "arguments": {"x": 1}},
            ],
        }
    )
    assert message.content == [
        AITextPart(text="Hi"),
        AIToolCallPart(id="c1", name="t", arguments={"x": 1}),
    ]


def test_an_unknown_part_type_is_rejected() -> None:
    with pytest.raises(ValidationError):
        AIMessage.model_validate({"role": "user", "content": [{"type": "image", "url": "x"}]})


def test_an_unknown_role_is_rejected() -> None:
    with pytest.raises(ValidationError):
        AIMessage.model_validate({"role": "robot", "content": "hi"})


def test_user_message_carries_the_speaker() -> None:
    message = AIMessage.user("hello", name="alice")
    assert (message.role, message.content, message.name) == ("user", "hello", "alice")
    assert message.text == "hello"


def test_assistant_without_calls_keeps_plain_text() -> None:
    message = AIMessage.assistant("Done.")
    assert message.content == "Done."
    assert message.tool_call_parts == []


def test_assistant_with_calls_lists_text_then_calls() -> None:
    calls: list[AIToolCall | AIToolCallPart] = [
        AIToolCall(id="a", name="lookup", arguments={"q": "x"}),
        AIToolCallPart(id="b", name="Ask", arguments={}),
    ]
    message = AIMessage.assistant("Checking.", calls)
    assert message.content == [
        AITextPart(text="Checking."),
        AIToolCallPart(id="a", name="lookup", arguments={"q": "x"}),
        AIToolCallPart(id="b", name="Ask", arguments={}),
    ]
    assert [part.id for part in message.tool_call_parts] == ["a", "b"]
    assert message.text == "Checking."


def test_assistant_with_calls_and_no_text_has_no_empty_text_part() -> None:
    message = AIMessage.assistant(tool_calls=[AIToolCall(id="a", name="t")])
    assert message.content == [AIToolCallPart(id="a", name="t")]


def test_assistant_message_does_not_share_the_calls_arguments() -> None:
    call = AIToolCall(id="a", name="t", arguments={"k": "v"})
    message = AIMessage.assistant(tool_calls=[call])
    call.arguments["k"] = "changed"
    assert message.tool_call_parts[0].arguments == {"k": "v"}


def test_tool_results_message_has_the_tool_role() -> None:
    parts = [
        AIToolResultPart(tool_call_id="a", name="t", content="ok"),
        AIToolResultPart(tool_call_id="b", name="u", content='{"error": "no"}', is_error=True),
    ]
    message = AIMessage.tool_results(parts)
    assert message.role == "tool"
    assert message.tool_result_parts == parts
    assert message.text == ""


def test_text_joins_only_the_text_parts() -> None:
    message = AIMessage(
        role="assistant",
        content=[
            AITextPart(text="one "),
            AIToolCallPart(id="x", name="t"),
            AITextPart(text="two"),
        ],
    )
    assert message.text == "one two"


def test_tool_call_defaults() -> None:
    call = AIToolCall(id="c", name="t")
    assert call.arguments == {}
    assert call.metadata == {}
    assert call.served is None
    assert call.partial is False


def test_served_call_is_frozen() -> None:
    served = ServedCall(result="42")
    assert served.is_error is False
    with pytest.raises(ValidationError):
        served.result = "43"


def test_response_with_a_served_call_round_trips() -> None:
    response = AIResponse(
        content="",
        finish_reason="tool_use",
        usage=AIUsage(input_tokens=10, output_tokens=3),
        tool_calls=[
            AIToolCall(id="s", name="bash", served=ServedCall(result="boom", is_error=True)),
            AIToolCall(id="p", name="Ask", arguments={"question": "Wh"}, partial=True),
        ],
    )
    restored = AIResponse.model_validate_json(response.model_dump_json())
    assert restored == response
    assert restored.tool_calls[0].served == ServedCall(result="boom", is_error=True)
    assert restored.tool_calls[1].partial is True


def test_defaults_are_not_shared_between_instances() -> None:
    first, second = AIResponse(), AIResponse()
    first.tool_calls.append(AIToolCall(id="x", name="t"))
    first.metadata["k"] = 1
    assert second.tool_calls == []
    assert second.metadata == {}


def test_context_accepts_any_room_object() -> None:
    room = object()
    assert AIContext(room=room).room is room


def test_tool_defaults_to_an_object_schema() -> None:
    assert AITool(name="t").parameters == {"type": "object"}


class _EchoProvider(AIProvider):
    @property
    def model_name(self) -> str:
        return "echo"

    async def generate(self, context: AIContext) -> AIResponse:
        return AIResponse(content=context.messages[-1].text)


async def test_provider_needs_only_a_name_and_generate() -> None:
    provider = _EchoProvider()
    response = await provider.generate(AIContext(messages=[AIMessage.user("ping")]))
    assert response.content == "ping"
    assert provider.supports_streaming is False
    await provider.close()  # the default close holds nothing to release, and must not fail


def test_provider_without_generate_cannot_be_built() -> None:
    class Incomplete(AIProvider):
        @property
        def model_name(self) -> str:
            return "x"

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]
