"""Helpers for the MCP tests: an SDK client on a server, and the moment a person is asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.server.lowlevel import Server

from roomkit.models.pending_input import PendingInput
from roomkit.tools.human_input import HumanInputHandler


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


@asynccontextmanager
async def client_of(server: Server[Any]) -> AsyncIterator[Client]:
    """An SDK client connected in-process to ``server``."""
    async with Client(server) as client:
        yield client


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
