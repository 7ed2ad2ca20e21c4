"""An MCP tool whose result does not match its declared output schema: the model reads so."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp.server.lowlevel import Server

from roomkit.core.exceptions import ToolFailedError
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.mcp import MCPTools

MODES = ["legacy", "auto"]
"""The 2025-11-25 handshake, and the 2026-07-28 connection the SDK negotiates."""
SEATS = {
    "type": "object",
    "properties": {"seats": {"type": "integer"}},
    "required": ["seats"],
}


def counting_server(result: types.CallToolResult, schema: dict[str, Any] = SEATS) -> Server[Any]:
    """A server whose tool ``count`` declares ``schema`` as its output and answers ``result``."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tool = types.Tool(name="count", input_schema={"type": "object"}, output_schema=schema)
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return result

    return Server("counter", on_list_tools=list_tools, on_call_tool=call_tool)


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


MISMATCHED = "the MCP server 'counter' sent a result that does not match the tool's declared "


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("result", "detail"),
    [
        (types.CallToolResult(content=_text("two")), "it has no structured content"),
        (
            types.CallToolResult(content=_text("two"), structured_content={"seats": "two"}),
            "'two' is not of type 'integer'",
        ),
    ],
)
async def test_a_result_off_the_output_schema_is_a_failure_the_model_reads(
    mode: str, result: types.CallToolResult, detail: str
) -> None:
    async with MCPTools(counting_server(result), handler=HumanInputHandler(), mode=mode) as tools:
        with pytest.raises(ToolFailedError) as failed:
            await tools("count", {})
    assert json.loads(str(failed.value)) == {
        "error": f"Tool 'count' failed: {MISMATCHED}output schema ({detail})"
    }


async def test_an_output_schema_that_is_no_json_schema_is_a_failure_the_model_reads() -> None:
    result = types.CallToolResult(content=_text("2"), structured_content={"seats": 2})
    server = counting_server(result, {"type": "object", "properties": {"seats": {"type": 7}}})
    async with MCPTools(server, handler=HumanInputHandler()) as tools:
        with pytest.raises(ToolFailedError) as failed:
            await tools("count", {})
    assert json.loads(str(failed.value)) == {
        "error": "Tool 'count' failed: the MCP server 'counter' declares an output schema for "
        "the tool that is no valid JSON Schema, so its result could not be checked"
    }


async def test_a_result_on_the_output_schema_is_served() -> None:
    result = types.CallToolResult(content=_text("2 seats"), structured_content={"seats": 2})
    async with MCPTools(counting_server(result), handler=HumanInputHandler()) as tools:
        assert await tools("count", {}) == "2 seats"
