"""Which tools a turn offers, who serves them, and the mistakes construction catches."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from ai_harness import ASK, LOOKUP, Build, ask, new_human, round_of, tool_call

from roomkit import HookTrigger, HumanInputToolHandler, RoomKit, UnservedToolCallError
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AITool
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools import compose_tool_handlers

INPUT = HookTrigger.ON_USER_INPUT_REQUIRED
CONFIRM = AITool(name="ConfirmAction", parameters={"type": "object"})
SEARCH = AITool(name="search", parameters={"type": "object"})

NEVER_OFFERED = (
    "Channel agent intercepts human-input tool(s) ['ConfirmAction'] but never offers them to "
    "the model: declare them via HumanInputToolHandler(tool_definitions=...) or the channel's "
    "tools, or no human will ever be asked."
)
SERVED_AS_HOST = (
    "Channel agent serves a HumanInputToolHandler as its tool_handler: pass it as "
    "human_input_handler= so its own timeout, ON_USER_INPUT_REQUIRED and the channel's close "
    "apply to it"
)


def offered(h: Any, round_no: int = 0) -> list[str]:
    return sorted(tool.name for tool in h.provider.calls[round_no].tools)


async def test_a_turn_offers_channel_handler_and_binding_tools(build: Build) -> None:
    h = await build(
        tools=[LOOKUP],
        binding_metadata={"tools": [SEARCH, {"name": "weather", "description": "Forecast."}]},
    )

    await h.say()

    assert offered(h) == ["Ask", "lookup", "search", "weather"]


async def test_a_human_tool_declared_only_in_the_binding_is_asked(
    build: Build, caplog: pytest.LogCaptureFixture
) -> None:
    human = HumanInputToolHandler({"ConfirmAction"})
    h = await build(
        round_of(tool_call("ConfirmAction", {"action": "deploy"})),
        human=human,
        binding_metadata={"tools": [CONFIRM]},
    )
    h.answer_from_hook("yes")

    with caplog.at_level(logging.WARNING, logger="roomkit.tools.human_input"):
        await h.say()

    assert h.read() == [("yes", False)]
    assert caplog.records == []


async def test_a_human_tool_declared_only_on_the_channel_is_asked(build: Build) -> None:
    h = await build(round_of(ask()), human=HumanInputToolHandler({"Ask"}), tools=[ASK])
    seen = h.answer_from_hook("blue")

    await h.say()

    assert h.read() == [("blue", False)]
    assert seen[0].channel_id == "agent"


def test_a_host_tool_named_like_a_human_definition_is_refused() -> None:
    with pytest.raises(ValueError, match="Tool 'Ask' is a tool channel 'agent' serves itself"):
        AIChannel("agent", provider=MockAIProvider(), human_input_handler=new_human(), tools=[ASK])


def test_the_same_tool_twice_is_refused() -> None:
    with pytest.raises(
        ValueError,
        match="Tool 'lookup' is given twice to channel 'agent': two tools cannot serve one name",
    ):
        AIChannel("agent", provider=MockAIProvider(), tools=[LOOKUP, LOOKUP])


def test_a_long_name_given_twice_is_quoted_cut_short() -> None:
    """A 5,000-character name made a message as long, as the other tool messages do not."""
    long = AITool(name="t" * 5000, parameters={"type": "object"})
    with pytest.raises(
        ValueError, match=r"^Tool 'tttt.*\.\.\. is given twice to channel"
    ) as caught:
        AIChannel("agent", provider=MockAIProvider(), tools=[long, long])
    assert len(str(caught.value)) < 300
    human = HumanInputToolHandler({long.name}, tool_definitions=[long])
    with pytest.raises(ValueError, match=r"^Tool 'tttt.*\.\.\. is a tool channel") as caught:
        AIChannel("agent", provider=MockAIProvider(), human_input_handler=human, tools=[long])
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"provider": object()}, TypeError),
        ({"human_input_handler": object()}, TypeError),
        ({"external_tool_handler": object()}, TypeError),
        ({"tool_handler": "not callable"}, TypeError),
        ({"tool_timeout_seconds": 0}, ValueError),
        ({"tool_timeouts": {"Ask": -1}}, ValueError),
        ({"max_tool_rounds": -1}, ValueError),
        ({"history_limit": 0}, ValueError),
    ],
)
def test_bad_channel_options_fail_at_construction(
    options: dict[str, Any], error: type[Exception]
) -> None:
    options.setdefault("provider", MockAIProvider())
    with pytest.raises(error):
        AIChannel("agent", **options)


def test_a_human_handler_given_as_tool_handler_logs_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="roomkit.tools.human_input"):
        AIChannel("agent", provider=MockAIProvider(), tool_handler=new_human(), tools=[ASK])

    assert [record.getMessage() for record in caplog.records] == [SERVED_AS_HOST]
    assert caplog.records[0].name == "roomkit.tools.human_input"


async def test_a_human_handler_given_as_tool_handler_is_a_plain_host_tool(build: Build) -> None:
    """It is bounded like any host tool and fires no ON_USER_INPUT_REQUIRED."""
    h = await build(
        round_of(ask()), human=None, tools=[ASK], tool_handler=new_human(), tool_timeout_seconds=5
    )
    asked: list[Any] = []

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        asked.append(event)

    await h.say()

    assert h.read() == [(json.dumps({"error": "tool 'Ask' did not answer within 5 s"}), True)]
    assert asked == []


async def test_the_never_offered_warning_comes_once_per_channel_per_name(
    build: Build, caplog: pytest.LogCaptureFixture
) -> None:
    human = HumanInputToolHandler({"Ask", "ConfirmAction"}, tool_definitions=[ASK])
    h = await build(human=human)

    with caplog.at_level(logging.WARNING, logger="roomkit.tools.human_input"):
        await h.say("one")
        await h.say("two")

    assert [record.getMessage() for record in caplog.records] == [NEVER_OFFERED]
    assert caplog.records[0].name == "roomkit.tools.human_input"


async def test_human_tools_stay_served_when_tool_handler_is_replaced(build: Build) -> None:
    async def first(name: str, arguments: dict[str, Any]) -> str:
        return "first"

    async def second(name: str, arguments: dict[str, Any]) -> str:
        return f"second:{name}"

    h = await build(
        round_of(ask(id="tc-1"), tool_call("lookup", id="tc-2")), tools=[LOOKUP], tool_handler=first
    )
    seen = h.answer_from_hook("blue")
    h.ai.tool_handler = second

    await h.say()

    assert h.ai.tool_handler is second
    assert h.read() == [("blue", False), ("second:lookup", False)]
    assert len(seen) == 1


async def test_composed_tool_handlers_serve_as_tool_handler(build: Build) -> None:
    async def lookups(name: str, arguments: dict[str, Any]) -> str:
        if name != "lookup":
            raise UnservedToolCallError(f"tool {name!r} is not served here")
        return "found"

    async def searches(name: str, arguments: dict[str, Any]) -> str:
        return f"searched:{name}"

    h = await build(
        round_of(tool_call("lookup", id="tc-1"), tool_call("search", id="tc-2")),
        human=None,
        tools=[LOOKUP, SEARCH],
        tool_handler=compose_tool_handlers(lookups, searches),
    )

    await h.say()

    assert h.read() == [("found", False), ("searched:search", False)]


async def test_a_declared_tool_without_any_handler_fails(build: Build) -> None:
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)

    await h.say()

    [(content, is_error)] = h.read()
    assert is_error
    assert json.loads(content) == {"error": "Tool 'lookup' has no handler on this channel."}
    assert h.report().outcome == "failed"


def test_register_channel_routes_the_human_handler_to_the_kit() -> None:
    kit = RoomKit()
    human = new_human()
    ai = AIChannel("agent", provider=MockAIProvider(), human_input_handler=human)

    kit.register_channel(ai)

    assert kit.get_channel("agent") is ai
    assert ai.kit is kit
    assert ai.tools == [ASK]


async def test_attaching_again_with_new_binding_tools_changes_the_offer(build: Build) -> None:
    h = await build(human=None, binding_metadata={"tools": [SEARCH]})
    await h.say("one")

    await h.kit.attach_channel("r1", "agent", metadata={"tools": [{"name": "weather"}]})
    await h.say("two")

    assert offered(h, 0) == ["search"]
    assert offered(h, 1) == ["weather"]
