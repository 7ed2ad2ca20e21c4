"""The tools MCPTools offers: the server's list, as a model provider takes it."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import mcp_types as types
import pytest
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from roomkit import InboundMessage, RoomKit, TextContent, WebSocketChannel
from roomkit.channels.ai import AIChannel
from roomkit.core.exceptions import ToolRefusedError, UnservedToolCallError
from roomkit.providers.ai.base import AIContext, AIResponse, AITool, AIToolResultPart
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools import texts
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


BAD_SCHEMAS = {
    "misspelt": (
        {"type": "object", "properties": {"a": {"type": "strng"}}},
        "invalid parameters schema at $.properties.a.type",
    ),
    "dangling": (
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/nowhere"}}},
        "unresolvable $ref '#/$defs/nowhere'",
    ),
    "negative": (
        {"type": "object", "properties": {"a": {"type": "string", "minLength": -1}}},
        "invalid parameters schema at $.properties.a.minLength",
    ),
}
"""Input schemas a channel refuses, and what the warning says of each."""


def schema_server(schemas: dict[str, dict[str, Any]]) -> Server[Any]:
    """A server listing a tool under each name of ``schemas``, with that input schema."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=name, input_schema=schema) for name, schema in schemas.items()]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("catalogue", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_whose_schema_a_channel_refuses_is_left_out_with_a_warning(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Offered, it would make the channel refuse the whole list: the others stay."""
    schemas = {
        "lookup": {"type": "object", "properties": {"key": {"type": "string"}}},
        **{name: schema for name, (schema, _) in BAD_SCHEMAS.items()},
        "book": {"type": "object"},
    }
    with caplog.at_level(logging.WARNING, logger="roomkit.tools.mcp"):
        server = schema_server(schemas)
        async with MCPTools(server, handler=HumanInputHandler(), mode=mode) as tools:
            assert [tool.name for tool in tools.tools] == ["lookup", "book"]
            channel = AIChannel(
                "agent", provider=MockAIProvider(), tool_handler=tools, tools=tools.tools
            )
            channel.set_tools(tools.tools)
            assert await tools("book", {}) == "book"
            with pytest.raises(UnservedToolCallError):
                await tools("misspelt", {})
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == len(BAD_SCHEMAS)
    for name, (_, problem) in BAD_SCHEMAS.items():
        [warning] = [text for text in warnings if f"tool {name!r} left out" in text]
        assert warning.startswith(f"MCP server 'catalogue': tool {name!r} left out: its ")
        assert "inputSchema is refused: " in warning
        assert problem in warning


OBJECT = {"type": "object"}


class ChangingServer:
    """A server listing ``lookup`` and ``retire``; calling ``retire`` drops ``lookup``, adds
    ``fresh`` (or the tools of ``then``) and says so three times over, as a server's burst of
    changes would (pushed on a 2025-11-25 connection, on the listen stream at 2026-07-28)."""

    def __init__(self, then: dict[str, dict[str, Any]] | None = None) -> None:
        self.schemas = {"lookup": OBJECT, "retire": OBJECT}
        self.listings = 0
        bus = InMemorySubscriptionBus()

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            self.listings += 1
            listed = [
                types.Tool(name=name, input_schema=schema) for name, schema in self.schemas.items()
            ]
            return types.ListToolsResult(tools=listed)

        async def call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            if params.name == "retire":
                self.schemas = then or {"retire": OBJECT, "fresh": OBJECT}
                for _ in range(3):
                    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        await bus.publish(ToolsListChanged())
                    else:
                        await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

        self.server = Server(
            "catalogue",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_subscriptions_listen=ListenHandler(bus),
        )


@pytest.mark.parametrize("mode", MODES)
async def test_a_changed_list_is_read_again_once_and_a_dropped_tool_is_refused(mode: str) -> None:
    catalogue = ChangingServer()
    changes: list[list[str]] = []
    changed = asyncio.Event()

    def record(tools: list[AITool]) -> None:
        changes.append([tool.name for tool in tools])
        changed.set()

    async with MCPTools(
        catalogue.server, handler=HumanInputHandler(), mode=mode, on_tools_changed=record
    ) as tools:
        assert [tool.name for tool in tools.tools] == ["lookup", "retire"]
        assert await tools("retire", {}) == "retire"
        await changed.wait()
        assert [tool.name for tool in tools.tools] == ["retire", "fresh"]
        assert await tools("fresh", {}) == "fresh"
        with pytest.raises(ToolRefusedError) as refused:
            await tools("lookup", {})
        with pytest.raises(UnservedToolCallError):
            await tools("never", {})
    assert json.loads(refused.value.message) == {
        "error": "Tool 'lookup' did not run: the MCP server 'catalogue' no longer offers it."
    }
    assert changes == [["retire", "fresh"]]
    assert catalogue.listings == 2


async def _turn(kit: RoomKit, text: str) -> None:
    await kit.process_inbound(
        InboundMessage(channel_id="chat", sender_id="alice", content=TextContent(text))
    )


@pytest.mark.parametrize("mode", MODES)
async def test_the_channel_offers_the_new_list_from_the_next_turn(mode: str) -> None:
    """Wired to ``set_tools``, the channel offers the server's new tools; a channel that
    still offers a dropped one has its call refused in words the model reads."""
    catalogue = ChangingServer()
    model = MockAIProvider(
        ai_responses=[
            MockAIProvider.tool_call("retire", {}),
            AIResponse(content="Retired."),
            MockAIProvider.tool_call("lookup", {}),
            AIResponse(content="Gone."),
        ]
    )
    stale = MockAIProvider(
        ai_responses=[MockAIProvider.tool_call("lookup", {}), AIResponse(content="Gone.")]
    )
    changed = asyncio.Event()
    kit = RoomKit()
    async with MCPTools(catalogue.server, handler=HumanInputHandler(), mode=mode) as tools:
        agent = AIChannel("agent", provider=model, tool_handler=tools, tools=tools.tools)
        unwired = AIChannel("unwired", provider=stale, tool_handler=tools, tools=tools.tools)

        def offer(listed: list[AITool]) -> None:
            agent.set_tools(listed)
            changed.set()

        tools.on_tools_changed = offer
        for channel in (agent, unwired, WebSocketChannel("chat")):
            kit.register_channel(channel)
        await kit.create_room("ops")
        await kit.attach_channel("ops", "agent")
        await kit.attach_channel("ops", "chat")
        await _turn(kit, "Retire lookup")
        await changed.wait()
        await _turn(kit, "Look it up")
        await kit.detach_channel("ops", "agent")
        await kit.attach_channel("ops", "unwired")
        await _turn(kit, "Look it up")
        await kit.close()
    first, _, second, _ = model.calls
    assert [tool.name for tool in first.tools] == ["lookup", "retire"]
    assert [tool.name for tool in second.tools] == ["retire", "fresh"]
    assert _results(model.calls[-1])[-1] == (texts.not_declared("lookup"), True)
    assert _results(stale.calls[-1])[-1] == (
        texts.tool_withdrawn("lookup", "'catalogue'"),
        True,
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_changed_list_with_a_refused_schema_still_reaches_the_channel(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The tool the channel would refuse is left out of the new list, so ``set_tools``
    takes the rest rather than refusing them all."""
    misspelt, problem = BAD_SCHEMAS["misspelt"]
    catalogue = ChangingServer(then={"retire": OBJECT, "broken": misspelt, "fresh": OBJECT})
    changed = asyncio.Event()
    async with MCPTools(catalogue.server, handler=HumanInputHandler(), mode=mode) as tools:
        channel = AIChannel(
            "agent", provider=MockAIProvider(), tool_handler=tools, tools=tools.tools
        )

        def offer(listed: list[AITool]) -> None:
            try:
                channel.set_tools(listed)
            finally:
                changed.set()

        tools.on_tools_changed = offer
        with caplog.at_level(logging.WARNING, logger="roomkit.tools.mcp"):
            assert await tools("retire", {}) == "retire"
            await changed.wait()
    assert [tool.name for tool in channel.tools] == ["retire", "fresh"]
    [warning] = [record.getMessage() for record in caplog.records]
    assert warning.startswith("MCP server 'catalogue': tool 'broken' left out: its inputSchema")
    assert problem in warning


def _results(context: AIContext) -> list[tuple[str, bool]]:
    return [
        (part.content, part.is_error)
        for message in context.messages
        for part in (message.content if isinstance(message.content, list) else [])
        if isinstance(part, AIToolResultPart)
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_every_page_of_the_list_is_offered(mode: str) -> None:
    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        page = int(params.cursor) if params is not None and params.cursor else 0
        return types.ListToolsResult(
            tools=[types.Tool(name=f"tool_{page}", input_schema={"type": "object"})],
            next_cursor=str(page + 1) if page < 2 else None,
        )

    server = Server("pages", on_list_tools=list_tools)
    async with MCPTools(server, handler=HumanInputHandler(), mode=mode) as tools:
        assert [tool.name for tool in tools.tools] == ["tool_0", "tool_1", "tool_2"]
