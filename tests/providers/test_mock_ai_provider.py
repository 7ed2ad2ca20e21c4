"""MockAIProvider: scripted responses served round-robin, every context recorded."""

from __future__ import annotations

from roomkit.providers.ai import AIContext, AIMessage, AIResponse, AITool, MockAIProvider
from roomkit.providers.ai.mock import MockAIProvider as MockFromModule


def _ctx(text: str) -> AIContext:
    return AIContext(messages=[AIMessage.user(text)])


def test_mock_is_importable_from_its_module() -> None:
    assert MockFromModule is MockAIProvider
    assert MockAIProvider().model_name == "mock"


async def test_ai_responses_are_served_round_robin() -> None:
    provider = MockAIProvider(ai_responses=[AIResponse(content="one"), AIResponse(content="two")])
    served = [(await provider.generate(_ctx("x"))).content for _ in range(5)]
    assert served == ["one", "two", "one", "two", "one"]


async def test_text_responses_are_wrapped_and_served_round_robin() -> None:
    provider = MockAIProvider(["a", "b"])
    served = [await provider.generate(_ctx("x")) for _ in range(3)]
    assert [r.content for r in served] == ["a", "b", "a"]
    assert all(r.tool_calls == [] for r in served)


async def test_ai_responses_win_over_text_responses() -> None:
    provider = MockAIProvider(["text"], ai_responses=[AIResponse(content="full")])
    assert (await provider.generate(_ctx("x"))).content == "full"


async def test_without_a_script_it_answers_mock_response() -> None:
    provider = MockAIProvider()
    assert (await provider.generate(_ctx("x"))).content == "Mock response"


async def test_every_context_is_recorded_in_order() -> None:
    provider = MockAIProvider(["ok"])
    tool = AITool(name="Ask")
    await provider.generate(AIContext(messages=[AIMessage.user("first")], tools=[tool]))
    await provider.generate(_ctx("second"))
    assert [call.messages[-1].text for call in provider.calls] == ["first", "second"]
    assert provider.calls[0].tools == [tool]


async def test_recorded_context_does_not_follow_later_mutation() -> None:
    provider = MockAIProvider(["ok"])
    conversation = [AIMessage.user("hello")]
    context = AIContext(messages=conversation, metadata={"round": 0})
    await provider.generate(context)
    conversation.append(AIMessage.assistant("ok"))
    context.messages.append(AIMessage.user("again"))
    context.messages[0].content = "rewritten"
    context.metadata["round"] = 1
    recorded = provider.calls[0]
    assert [m.text for m in recorded.messages] == ["hello"]
    assert recorded.metadata == {"round": 0}


async def test_recorded_context_keeps_the_room_object() -> None:
    room = object()
    provider = MockAIProvider()
    await provider.generate(AIContext(room=room))
    assert provider.calls[0].room is room


async def test_served_responses_are_copies_of_the_script() -> None:
    scripted = MockAIProvider.tool_call("Ask", {"question": "Q"}, id="c1")
    provider = MockAIProvider(ai_responses=[scripted])
    first = await provider.generate(_ctx("x"))
    first.tool_calls[0].arguments["question"] = "edited"
    second = await provider.generate(_ctx("x"))
    assert second.tool_calls[0].arguments == {"question": "Q"}
    assert scripted.tool_calls[0].arguments == {"question": "Q"}


def test_tool_call_builds_a_response_with_one_call() -> None:
    response = MockAIProvider.tool_call(
        "AskUserQuestion", {"question": "Colour?"}, id="call-7", content="Let me ask."
    )
    assert response.finish_reason == "tool_use"
    assert response.content == "Let me ask."
    [call] = response.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "call-7",
        "AskUserQuestion",
        {"question": "Colour?"},
    )
    assert call.served is None
    assert call.partial is False


def test_tool_call_ids_count_up_when_not_given() -> None:
    first = MockAIProvider.tool_call("t", {}).tool_calls[0].id
    second = MockAIProvider.tool_call("t").tool_calls[0].id
    assert first.startswith("tc-")
    assert int(second.removeprefix("tc-")) == int(first.removeprefix("tc-")) + 1


def test_tool_call_copies_the_arguments() -> None:
    arguments = {"question": "Q"}
    response = MockAIProvider.tool_call("Ask", arguments, id="c")
    arguments["question"] = "changed"
    assert response.tool_calls[0].arguments == {"question": "Q"}


def test_streaming_flag_is_reported() -> None:
    assert MockAIProvider(streaming=True).supports_streaming is True
    assert MockAIProvider().supports_streaming is False


async def test_close_marks_the_provider_closed() -> None:
    provider = MockAIProvider()
    await provider.close()
    assert provider.closed is True
