"""The tools MCPTools offers: the server's list, as a model provider takes it."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
import pytest
from mcp.server.lowlevel import Server

from roomkit.channels.ai import AIChannel
from roomkit.core.exceptions import UnservedToolCallError
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.mcp import MCPTools

MODES = ["legacy", "auto"]
"""The 2025-11-25 handshake, and the 2026-07-28 connection the SDK negotiates."""


def listing_server(names: list[str]) -> Server[Any]:
    """A server listing a tool under each of ``names`` (as they are at each listing); each
    call's result is the tool's name."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=name, input_schema={"type": "object"}) for name in names]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("catalogue", on_list_tools=list_tools, on_call_tool=call_tool)


UNOFFERABLE = ["has space", "", "x" * 65, "bell\x07", "line\nbreak", "dotted.name", "café"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_whose_name_models_refuse_is_left_out_with_a_warning(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Offered, one such name would make the provider refuse every tool: the others stay."""
    names = ["lookup", *UNOFFERABLE, "x" * 64, "lookup", "book-2_B"]
    with caplog.at_level(logging.WARNING, logger="roomkit.tools.mcp"):
        async with MCPTools(listing_server(names), handler=HumanInputHandler(), mode=mode) as tools:
            assert [tool.name for tool in tools.tools] == ["lookup", "x" * 64, "book-2_B"]
            AIChannel("agent", provider=MockAIProvider(), tool_handler=tools, tools=tools.tools)
            assert await tools("lookup", {}) == "lookup"
            with pytest.raises(UnservedToolCallError):
                await tools("has space", {})
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == len(UNOFFERABLE) + 1
    for name in UNOFFERABLE:
        [warning] = [text for text in warnings if f"tool {name!r} left out" in text]
        assert warning.startswith("MCP server 'catalogue': ")
    [twice] = [text for text in warnings if "tool 'lookup' left out" in text]
    assert "lists that name twice" in twice
