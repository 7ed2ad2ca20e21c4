"""ConferenceRealtimeConfig: checked when built and whenever a field is replaced."""

from __future__ import annotations

from typing import Any

import pytest
from tests.channels.ai_harness import ASK, LOOKUP, new_human

from roomkit import AITool, HumanInputToolHandler
from roomkit.channels.conference import ConferenceRealtimeConfig
from roomkit.voice.realtime.mock import MockRealtimeProvider


async def answer(name: str, arguments: dict[str, Any]) -> str:
    return "ok"


def config(**options: Any) -> ConferenceRealtimeConfig:
    return ConferenceRealtimeConfig(MockRealtimeProvider(), **options)


def test_only_the_provider_is_positional() -> None:
    provider = MockRealtimeProvider()
    built = ConferenceRealtimeConfig(provider)

    assert (built.provider, built.tools, built.tool_handler) == (provider, [], None)
    assert (built.tool_timeout_seconds, built.tool_timeouts, built.system_prompt) == (
        10.0,
        {},
        None,
    )
    with pytest.raises(TypeError):
        ConferenceRealtimeConfig(provider, [LOOKUP])  # type: ignore[call-arg]


def test_a_host_tool_under_a_persons_defined_tool_is_refused() -> None:
    ask_host = AITool(name="Ask", parameters={"type": "object"})
    with pytest.raises(ValueError, match="Tool 'Ask' is a tool channel 'conference' serves"):
        config(tools=[ask_host], human_input_handler=new_human())


def test_the_tools_may_define_a_persons_tool_the_handler_does_not() -> None:
    built = config(
        tools=[{"name": "ask", "parameters": {"type": "object"}}],
        human_input_handler=HumanInputToolHandler({"ask"}),
    )

    assert built.declared_tools() == {"ask": AITool(name="ask")}
    assert built.call_bound("ask") is None


def test_two_host_tools_cannot_share_a_name() -> None:
    with pytest.raises(ValueError, match="given twice"):
        config(tools=[LOOKUP, LOOKUP])


def test_the_declared_tools_put_the_persons_first() -> None:
    built = config(tools=[LOOKUP.model_dump()], human_input_handler=new_human())

    assert built.tools == [LOOKUP]
    assert list(built.declared_tools()) == ["Ask", "lookup"]
    assert built.declared_tools()["Ask"] == ASK


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"tool_timeout_seconds": 0}, ValueError),
        ({"tool_timeout_seconds": True}, ValueError),
        ({"tool_timeouts": {"Ask": -1}}, ValueError),
        ({"tools": LOOKUP.model_dump()}, TypeError),
        ({"tool_handler": "lookup"}, TypeError),
        ({"human_input_handler": object()}, TypeError),
        ({"system_prompt": 3}, TypeError),
    ],
)
def test_a_bad_field_raises_when_built(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        config(**options)


async def room_first(room_id: str, name: str, arguments: dict[str, Any]) -> str:
    return "ok"


async def takes_a_name(name: str) -> str:
    return "ok"


async def takes_four(a: str, b: str, c: str, d: str) -> str:
    return "ok"


async def needs_a_keyword(name: str, arguments: dict[str, Any], *, room: str) -> str:
    return "ok"


@pytest.mark.parametrize("handler", [answer, room_first])
def test_the_tool_handler_takes_either_shape(handler: Any) -> None:
    built = config(tool_handler=handler)

    assert built.tool_handler is handler
    assert built.host_handler() is not None


@pytest.mark.parametrize("handler", [takes_a_name, takes_four, needs_a_keyword])
def test_a_tool_handler_of_another_shape_is_refused_when_given(handler: Any) -> None:
    with pytest.raises(TypeError, match=r"must take \(name, arguments\) or \(room_id, name"):
        config(tool_handler=handler)
    built = config(tool_handler=answer)
    with pytest.raises(TypeError, match="must take"):
        built.tool_handler = handler
    assert built.tool_handler is answer


def test_the_provider_must_be_a_realtime_provider() -> None:
    with pytest.raises(TypeError, match="RealtimeProvider"):
        ConferenceRealtimeConfig(object())  # type: ignore[arg-type]


def test_a_replaced_field_is_checked() -> None:
    built = config(human_input_handler=new_human())
    built.tool_handler = answer
    built.tool_timeouts = {"lookup": 3}

    assert (built.tool_handler, built.tool_timeouts) == (answer, {"lookup": 3.0})
    with pytest.raises(TypeError):
        built.tool_handler = "lookup"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="serves itself"):
        built.tools = [AITool(name="Ask", parameters={"type": "object"})]
    assert built.tool_handler is answer
    assert built.tools == []


def test_the_provider_and_the_human_input_handler_are_fixed() -> None:
    built = config(human_input_handler=new_human())
    with pytest.raises(AttributeError, match="plug a new ConferenceRealtimeConfig"):
        built.provider = MockRealtimeProvider()
    with pytest.raises(AttributeError, match="plug a new ConferenceRealtimeConfig"):
        built.human_input_handler = None


def test_the_call_bound_is_ten_seconds_except_for_human_names() -> None:
    built = config(human_input_handler=new_human(), tool_timeouts={"slow": None})

    assert built.call_bound("lookup") == 10.0
    assert built.call_bound("Ask") is None
    assert built.call_bound("slow") is None
    assert config(human_input_handler=new_human(), tool_timeouts={"Ask": 5}).call_bound("Ask") == 5
