"""A tool's name: one model providers take, or the channel refuses it when it is given.

OpenAI and Anthropic refuse a whole request, every tool in it, for one tool name outside
letters, digits, ``_`` and ``-`` (1 to 64 of them); a channel says so at once, naming the tool.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from ai_harness import LOOKUP, Build

from roomkit import HumanInputToolHandler
from roomkit.channels.ai import AIChannel
from roomkit.channels.conference import ConferenceRealtimeConfig
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.providers.ai.base import AITool
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.human_input import HUMAN_INPUT_TOOLS
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport

REFUSED = ["has space", "", "x" * 65, "dotted.name", "café", "line\nbreak", "colon:name"]
TAKEN = ["lookup", "x" * 64, "book-2_B", "AskUserQuestion"]
RULE = "model providers take names of letters, digits, _ and - (1 to 64 of them)"


def refusal(name: str) -> str:
    return re.escape(f"Tool {name!r}: {RULE}")


def named(name: str) -> AITool:
    return AITool(name=name, parameters={"type": "object"})


@pytest.mark.parametrize("name", REFUSED)
def test_an_ai_channel_refuses_a_tool_name_providers_refuse(name: str) -> None:
    with pytest.raises(ValueError, match=refusal(name)):
        AIChannel("agent", provider=MockAIProvider(), tools=[LOOKUP, named(name)])


def test_a_long_name_is_quoted_cut_short() -> None:
    """A 5,000-character name makes no 5,000-character message (nor log line)."""
    with pytest.raises(ValueError, match=re.escape("Tool 'xxx")) as refused:
        AIChannel("agent", provider=MockAIProvider(), tools=[named("x" * 5000)])
    assert RULE in str(refused.value)
    assert len(str(refused.value)) < 300


@pytest.mark.parametrize("name", TAKEN)
def test_a_name_providers_take_is_offered(name: str) -> None:
    channel = AIChannel("agent", provider=MockAIProvider(), tools=[named(name)])

    assert [tool.name for tool in channel.tools] == [name]


@pytest.mark.parametrize("name", REFUSED)
def test_set_tools_refuses_such_a_name_and_keeps_the_tools_offered(name: str) -> None:
    channel = AIChannel("agent", provider=MockAIProvider(), tools=[LOOKUP])

    with pytest.raises(ValueError, match=refusal(name)):
        channel.set_tools([named("search"), {"name": name}])
    assert channel.tools == [LOOKUP]


def test_a_human_input_definition_under_such_a_name_is_refused() -> None:
    human = HumanInputToolHandler({"ask user"}, tool_definitions=[named("ask user")])

    with pytest.raises(ValueError, match=refusal("ask user")):
        AIChannel("agent", provider=MockAIProvider(), human_input_handler=human)


def test_the_human_input_tools_roomkit_defines_are_taken() -> None:
    definitions = [AITool(**definition) for definition in HUMAN_INPUT_TOOLS]
    human = HumanInputToolHandler({tool.name for tool in definitions}, tool_definitions=definitions)

    channel = AIChannel("agent", provider=MockAIProvider(), human_input_handler=human)

    assert sorted(tool.name for tool in channel.tools) == ["AskUserQuestion", "ConfirmAction"]


async def test_a_binding_tool_under_such_a_name_never_reaches_the_model(build: Build) -> None:
    h = await build(human=None, binding_metadata={"tools": [{"name": "room.search"}]})

    with pytest.raises(ValueError, match=refusal("room.search")):
        await h.say()
    assert h.provider.calls == []


@pytest.mark.parametrize("name", ["has space", "x" * 65])
def test_a_voice_channel_refuses_such_a_name(name: str) -> None:
    with pytest.raises(ValueError, match=refusal(name)):
        RealtimeVoiceChannel(
            "voice",
            provider=MockRealtimeProvider(),
            transport=MockRealtimeTransport(),
            tools=[{"name": name}],
        )


@pytest.mark.parametrize("name", ["has space", "x" * 65])
def test_a_conference_config_refuses_such_a_name(name: str) -> None:
    with pytest.raises(ValueError, match=refusal(name)):
        ConferenceRealtimeConfig(MockRealtimeProvider(), tools=[{"name": name}])
    built = ConferenceRealtimeConfig(MockRealtimeProvider(), tools=[LOOKUP])
    tools: list[Any] = [named(name)]
    with pytest.raises(ValueError, match=refusal(name)):
        built.tools = tools
    assert built.tools == [LOOKUP]
