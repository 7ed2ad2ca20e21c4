"""An MCP server that fails a call: the model reads what happened, in a line it can act on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage
from tests.mcp.mcp_kit import alice_books, booking_model, lists_book, tool_result, trip_room

from roomkit.core.exceptions import ToolFailedError
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.mcp import MCPTools

MODES = ["legacy", "auto"]
"""The 2025-11-25 handshake, and the 2026-07-28 connection the SDK negotiates."""


def refusing_server() -> Server[Any]:
    """A server whose tool ``book`` answers every call with a JSON-RPC error."""

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        raise MCPError(types.INVALID_PARAMS, "no seats left on flight 12")

    return Server("booker", on_list_tools=lists_book, on_call_tool=call_tool)


@pytest.mark.parametrize("mode", MODES)
async def test_the_model_reads_the_servers_error_message(mode: str) -> None:
    model = booking_model("Sold out.")
    async with (
        MCPTools(refusing_server(), handler=HumanInputHandler(), mode=mode) as tools,
        trip_room(tools, model) as kit,
    ):
        await kit.process_inbound(alice_books())
    result = tool_result(model)
    assert result.is_error
    assert json.loads(result.content) == {
        "error": "Tool 'book' failed: the MCP server 'booker' answered with an error: "
        "no seats left on flight 12"
    }


class HandWrittenServer:
    """A server written by hand on the SDK's in-memory streams (a 2025-11-25 handshake):
    ``garbled`` answers with a result MCP does not allow, ``hang_up`` closes the connection."""

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Any]:
        async with create_client_server_memory_streams() as (client, served):
            serving = asyncio.create_task(self._serve(*served))
            try:
                yield client
            finally:
                serving.cancel()

    async def _serve(self, read: Any, write: Any) -> None:
        async for incoming in read:
            message = incoming.message.model_dump(by_alias=True, exclude_none=True)
            method = message.get("method")
            if "id" not in message:
                continue
            if method == "tools/call" and message["params"]["name"] == "hang_up":
                await write.aclose()
                return
            result = {
                "initialize": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "flaky", "version": "1"},
                },
                "tools/list": {
                    "tools": [
                        {"name": name, "inputSchema": {"type": "object"}}
                        for name in ("garbled", "hang_up")
                    ]
                },
                "tools/call": {"content": "not a list of blocks"},
            }[method]
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            await write.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(reply)))


async def test_a_result_mcp_does_not_allow_and_a_closed_connection_say_so() -> None:
    async with MCPTools(HandWrittenServer()(), handler=HumanInputHandler(), mode="legacy") as tools:
        with pytest.raises(ToolFailedError) as garbled:
            await tools("garbled", {})
        with pytest.raises(ToolFailedError) as closed:
            await tools("hang_up", {})
    assert json.loads(garbled.value.message)["error"].startswith(
        "Tool 'garbled' failed: the MCP server 'flaky' sent a result MCP does not allow (content"
    )
    assert json.loads(closed.value.message) == {
        "error": "Tool 'hang_up' failed: the MCP server 'flaky' closed the connection"
    }


def asking_for_ever_server() -> Server[Any]:
    """A server (2026-07-28) whose tool ``book`` answers every round with an input-required
    result, never with the tool's result."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name="book", input_schema={"type": "object"})]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.InputRequiredResult:
        return types.InputRequiredResult(request_state="still-waiting")

    return Server("booker", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_a_server_that_asks_for_input_past_the_sdks_rounds_says_so_in_plain_words() -> None:
    """The SDK gives the call up (``InputRequiredRoundsExceededError``); the model reads
    why, not the SDK's class name."""
    async with MCPTools(asking_for_ever_server(), handler=HumanInputHandler()) as tools:
        with pytest.raises(ToolFailedError) as failed:
            await tools("book", {})
    assert json.loads(failed.value.message) == {
        "error": "Tool 'book' failed: the MCP server 'booker' still asked for more input after "
        "10 rounds of answers, so the call was given up"
    }
