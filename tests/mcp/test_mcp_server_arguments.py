"""A wrong argument of the MCP server is refused when it is made, by name."""

from __future__ import annotations

import math
from typing import Any

import pytest

from roomkit.mcp import HumanInputMCPServer
from roomkit.mcp.waits import state_key
from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.tools.human_input import HumanInputHandler

NOT_NUMBERS = ["x", True, b"5", [1]]
OUT_OF_RANGE = [math.nan, math.inf, -math.inf, -1, 0]


@pytest.mark.parametrize("option", ["hold", "progress_interval"])
@pytest.mark.parametrize("value", NOT_NUMBERS, ids=repr)
async def test_seconds_that_are_no_number_are_refused_by_name(
    durable: HumanInputHandler, option: str, value: object
) -> None:
    """A bool is no number of seconds; a string is named, not compared."""
    with pytest.raises(TypeError, match=rf"^{option} must be a number of seconds, got "):
        HumanInputMCPServer(durable, **{option: value})


@pytest.mark.parametrize("option", ["hold", "progress_interval"])
@pytest.mark.parametrize("value", OUT_OF_RANGE, ids=repr)
async def test_seconds_out_of_range_are_refused_by_name(
    durable: HumanInputHandler, option: str, value: float
) -> None:
    with pytest.raises(
        ValueError, match=rf"^{option} must be a positive, finite number of seconds, got "
    ):
        HumanInputMCPServer(durable, **{option: value})


@pytest.mark.parametrize("option", ["hold", "progress_interval"])
@pytest.mark.parametrize("value", [LONGEST_TIMEOUT * 2, 1e300], ids=repr)
async def test_seconds_past_a_century_are_refused_by_name(
    durable: HumanInputHandler, option: str, value: float
) -> None:
    """They were taken: a round held, or a progress notice put off, for ever."""
    with pytest.raises(
        ValueError,
        match=rf"^{option} must be a positive number of seconds, at most 3153600000 \(a century\)",
    ):
        HumanInputMCPServer(durable, **{option: value})


@pytest.mark.parametrize("option", ["hold", "progress_interval"])
async def test_seconds_of_a_century_are_taken(durable: HumanInputHandler, option: str) -> None:
    server = HumanInputMCPServer(durable, **{option: LONGEST_TIMEOUT})
    assert getattr(server, option) == LONGEST_TIMEOUT


@pytest.mark.parametrize(
    ("tools", "refused", "said"),
    [
        (5, TypeError, r"^tools must be a list of tool definitions"),
        ("AskUserQuestion", TypeError, r"^tools must be a list of tool definitions"),
        (["AskUserQuestion"], TypeError, r"^each of tools must be a mapping"),
        ([{"parameters": {"type": "object"}}], ValueError, r"^each tool needs a 'name'"),
        ([{"name": 5, "parameters": {"type": "object"}}], ValueError, r"needs a 'name'"),
        ([{"name": "a b", "parameters": {"type": "object"}}], ValueError, r"^Tool 'a b': model"),
        ([{"name": "ask"}], ValueError, r"^Tool 'ask': give 'parameters'"),
        (
            [{"name": "ask", "parameters": {"type": "object"}, "description": 5}],
            ValueError,
            r"^Tool 'ask': description must be text",
        ),
        (
            [{"name": "ask", "parameters": {"type": "object"}, "description": "caf\udc80"}],
            ValueError,
            r"^Tool 'ask': description must be valid Unicode text, but holds a lone surrogate",
        ),
        (
            [{"name": "ask", "parameters": {"type": "object", "title": "\ud800"}}],
            ValueError,
            r"^Tool 'ask': parameters must be valid Unicode text, .* of 'title'",
        ),
    ],
    ids=[
        "int",
        "str",
        "str-entry",
        "no-name",
        "int-name",
        "spaced-name",
        "no-parameters",
        "int-description",
        "surrogate-description",
        "surrogate-parameters",
    ],
)
async def test_tools_no_client_can_list_are_refused(
    tools: Any, refused: type[Exception], said: str
) -> None:
    with pytest.raises(refused, match=said):
        HumanInputMCPServer(HumanInputHandler(), tools=tools)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"state_keys": 5, "hold": 5}, r"^state_keys must be a list of keys"),
        ({"state_keys": b"k" * 32, "hold": 5}, r"^state_keys must be a list of keys"),
        ({"links": "https://desk.example"}, r"^links must be the desk's AnswerLinks"),
    ],
    ids=["int-keys", "one-bytes-key", "url-as-links"],
)
async def test_keys_and_links_of_another_kind_are_refused(
    durable: HumanInputHandler, options: dict[str, Any], said: str
) -> None:
    with pytest.raises(TypeError, match=said):
        HumanInputMCPServer(durable, **options)


async def test_the_numbers_the_command_passes_are_taken(durable: HumanInputHandler) -> None:
    server = HumanInputMCPServer(durable, hold=20, progress_interval=0.5, timeout=60)
    assert (server.hold, server.progress_interval, server.timeout) == (20, 0.5, 60)


async def test_keys_given_as_a_generator_are_taken_whole(durable: HumanInputHandler) -> None:
    """Read once by the check, and all of them handed to the state boundary."""
    key = state_key(b"s" * 40)
    server = HumanInputMCPServer(durable, hold=5, state_keys=(k for k in [key]))
    assert server.hold == 5


async def test_a_refusal_of_the_keys_never_quotes_them(durable: HumanInputHandler) -> None:
    secret = b"a-secret-never-shown-0123456789ab"
    with pytest.raises(TypeError, match="got a list holding int") as refused:
        HumanInputMCPServer(durable, hold=5, state_keys=[secret, 5])  # type: ignore[list-item]
    assert "a-secret" not in str(refused.value)
