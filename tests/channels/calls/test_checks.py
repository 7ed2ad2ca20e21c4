"""The channel's own refusals raise ChannelRefusalError with the text the model reads."""

from __future__ import annotations

import json

import pytest

from roomkit import AITool, ChannelRefusalError, ChannelType, ToolRefusedError
from roomkit.channels._calls.checks import UNENCODABLE, arguments_cut, check
from roomkit.channels._calls.site import CallSite
from roomkit.models.room import Room
from roomkit.providers.ai.base import AIToolCall

LOOKUP = AITool(
    name="lookup",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


async def no_context() -> None:
    return None


def site() -> CallSite:
    return CallSite(
        None, "agent", ChannelType.AI, Room("r1"), "alice", "tc-1", {"lookup": LOOKUP}, no_context
    )


def error(text: str) -> str:
    return str(json.loads(text)["error"])


def test_a_checked_call_gives_its_tool() -> None:
    assert check(site(), "lookup", {"q": "docs"}) is LOOKUP


def test_an_undeclared_tool_is_a_channel_refusal() -> None:
    with pytest.raises(ChannelRefusalError) as caught:
        check(site(), "teleport", {})

    assert isinstance(caught.value, ToolRefusedError)
    assert error(caught.value.message) == "Tool 'teleport' is not declared."


def test_invalid_arguments_are_a_channel_refusal() -> None:
    with pytest.raises(ChannelRefusalError) as caught:
        check(site(), "lookup", {})

    assert error(caught.value.message).startswith("Invalid arguments for 'lookup': ")


def test_cut_arguments_are_refused_before_the_tool_is_looked_up() -> None:
    partial = AIToolCall(id="tc-1", name="teleport", arguments={}, partial=True)
    screened = AIToolCall(id="tc-2", name="lookup", metadata={UNENCODABLE: "at q"})
    whole = AIToolCall(id="tc-3", name="lookup", arguments={"q": "x"})

    cut = arguments_cut(partial)
    assert cut is not None
    with pytest.raises(ChannelRefusalError) as caught:
        check(site(), "teleport", {}, refusal=cut)
    assert "were cut off" in error(caught.value.message)
    assert "must be valid Unicode text: at q" in error(arguments_cut(screened) or "{}")
    assert arguments_cut(whole) is None
