"""Helpers for the MCP tests: an SDK client on a server, the moment a person is asked, and an
AIChannel turn calling a server's tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from roomkit import InboundMessage, RoomKit, TextContent, WebSocketChannel
from roomkit.channels.ai import AIChannel
from roomkit.mcp import HumanInputMCPServer
from roomkit.models.pending_input import PendingInput
from roomkit.providers.ai.base import AIResponse, AIToolResultPart
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.mcp import MCPTools

PROTOCOL = "2025-11-25"
"""The protocol version the hand-written clients speak."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
"""A hand-written client's first message."""


class Call:
    """One tool call running in the background, and the progress it was sent."""

    def __init__(self, client: Client, name: str, arguments: dict[str, Any], **options: Any):
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.asked = asyncio.Event()
        self.task = asyncio.create_task(
            client.call_tool(name, arguments, progress_callback=self._progress, **options)
        )

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))
        self.asked.set()

    async def wait_asked(self) -> None:
        """Until the server says a person is asked (its first progress notification)."""
        waiting = asyncio.create_task(self.asked.wait())
        done, _ = await asyncio.wait({waiting, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if waiting not in done:
            waiting.cancel()
            raise AssertionError(f"the call ended before a person was asked: {self.task.result()}")

    async def result(self) -> types.CallToolResult:
        return await self.task


async def open_request(handler: HumanInputHandler) -> PendingInput:
    """The one open request on ``handler``'s store."""
    [request] = await handler.list_pending()
    return request


async def first_asked(handler: HumanInputHandler) -> PendingInput:
    """Wait until a request is open on ``handler``'s store; returns the first."""
    created = asyncio.Event()
    undo = handler.subscribe(lambda change: created.set())
    try:
        while not (requests := await handler.list_pending()):
            await created.wait()
            created.clear()
    finally:
        undo()
    return requests[0]


async def lists_book(ctx: Any, params: Any) -> types.ListToolsResult:
    """A server's list of tools: ``book``, taking an object."""
    return types.ListToolsResult(tools=[types.Tool(name="book", input_schema={"type": "object"})])


def booking_model(reply: str) -> MockAIProvider:
    """A model that calls ``book`` with no arguments, then says ``reply``."""
    return MockAIProvider(
        ai_responses=[MockAIProvider.tool_call("book", {}), AIResponse(content=reply)]
    )


def alice_books() -> InboundMessage:
    """Alice's message in the chat, which starts the model's turn."""
    return InboundMessage(channel_id="chat", sender_id="alice", content=TextContent("Book"))


@asynccontextmanager
async def trip_room(tools: MCPTools, model: MockAIProvider) -> AsyncIterator[RoomKit]:
    """A RoomKit whose room ``trip`` holds an AIChannel ``agent`` (``model``, offered
    ``tools``) and a WebSocket channel ``chat``; closed at the end."""
    kit = RoomKit()
    kit.register_channel(AIChannel("agent", provider=model, tool_handler=tools, tools=tools.tools))
    kit.register_channel(WebSocketChannel("chat"))
    await kit.create_room("trip")
    await kit.attach_channel("trip", "agent")
    await kit.attach_channel("trip", "chat")
    try:
        yield kit
    finally:
        await kit.close()


def tool_result(model: MockAIProvider) -> AIToolResultPart:
    """The one tool result the model read on its last call."""
    [result] = [
        part
        for message in model.calls[-1].messages
        for part in (message.content if isinstance(message.content, list) else [])
        if isinstance(part, AIToolResultPart)
    ]
    return result


@asynccontextmanager
async def client_of(server: Server[Any]) -> AsyncIterator[Client]:
    """An SDK client connected in-process to ``server``."""
    async with Client(server) as client:
        yield client


@asynccontextmanager
async def served(
    handler: HumanInputHandler | None = None, **options: Any
) -> AsyncIterator[tuple[HumanInputHandler, Client]]:
    """``handler`` (a new in-memory one by default) behind a :class:`HumanInputMCPServer`
    made with ``options``, and an SDK client connected to it in-process."""
    handler = HumanInputHandler() if handler is None else handler
    async with client_of(HumanInputMCPServer(handler, **options).server) as client:
        yield handler, client


def text_of(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def settled(handler: HumanInputHandler, pending_id: str) -> PendingInput:
    """Wait until the request is settled; returns it."""
    changed = asyncio.Event()
    undo = handler.subscribe(lambda change: changed.set())
    try:
        while True:
            request = await handler.get_request(pending_id)
            assert request is not None
            if str(request.status) != "pending":
                return request
            await changed.wait()
            changed.clear()
    finally:
        undo()


class RawPeer:
    """A client written by hand on in-memory streams: it can cancel, or just go away."""

    def __init__(self, server: Server[Any]) -> None:
        self.server = server

    @asynccontextmanager
    async def connected(self) -> AsyncIterator[RawPeer]:
        async with create_client_server_memory_streams() as (client, served):
            self._read, self._write = client
            running = asyncio.create_task(
                self.server.run(*served, self.server.create_initialization_options())
            )
            await self.send(INITIALIZE)
            self.initialized = await self.receive()
            await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            self.running = running
            yield self

    async def send(self, message: dict[str, Any]) -> None:
        await self._write.send(
            SessionMessage(types.jsonrpc_message_adapter.validate_python(message))
        )

    async def request(self, request_id: int, method: str, params: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    async def receive(self) -> dict[str, Any]:
        message = await self._read.receive()
        assert isinstance(message, SessionMessage)
        dumped: dict[str, Any] = message.message.model_dump(by_alias=True, exclude_none=True)
        return dumped

    async def hang_up(self) -> None:
        """Close the client's side, as a client process that died: the server's run ends."""
        await self._write.aclose()
        await self.running
