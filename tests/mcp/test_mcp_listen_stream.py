"""A 2026-07-28 server's ``subscriptions/listen`` stream of tool changes, kept open by
MCPTools: one that ends is opened again, and the tools are listed again after it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp_types as types
import pytest
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError

from roomkit.providers.ai.base import AITool
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.mcp import MCPTools


class EndingServer:
    """A server listing the tools ``names`` says, on listen streams the test can end
    (:meth:`ListenHandler.close`), that refuses the next ``refusals`` listen requests."""

    def __init__(self) -> None:
        self.names = ["lookup"]
        self.bus = InMemorySubscriptionBus()
        self.streams = ListenHandler(self.bus)
        self.opened = 0
        self.refusals = 0

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            listed = [types.Tool(name=name, input_schema={"type": "object"}) for name in self.names]
            return types.ListToolsResult(tools=listed)

        async def listen(
            ctx: Any, params: types.SubscriptionsListenRequestParams
        ) -> types.SubscriptionsListenResult:
            if self.refusals:
                self.refusals -= 1
                raise MCPError(types.INTERNAL_ERROR, "too busy to listen")
            self.opened += 1
            return await self.streams(ctx, params)

        self.server = Server("catalogue", on_list_tools=list_tools, on_subscriptions_listen=listen)


async def test_a_listen_stream_that_ends_is_opened_again_and_later_changes_are_followed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    catalogue = EndingServer()
    changes: list[list[str]] = []
    changed = asyncio.Event()

    def record(tools: list[AITool]) -> None:
        changes.append([tool.name for tool in tools])
        changed.set()

    caplog.set_level(logging.WARNING, logger="roomkit.tools.mcp")
    async with MCPTools(
        catalogue.server, handler=HumanInputHandler(), on_tools_changed=record
    ) as tools:
        assert catalogue.opened == 1
        # Changed with no notification: a change made while no stream is open goes unseen.
        catalogue.names = ["lookup", "missed"]
        catalogue.refusals = 2
        catalogue.streams.close()
        await changed.wait()  # listed again once the stream is open again
        assert catalogue.opened == 2
        assert changes == [["lookup", "missed"]]
        changed.clear()
        catalogue.names = ["lookup", "missed", "later"]
        await catalogue.bus.publish(ToolsListChanged())
        await changed.wait()
        assert [tool.name for tool in tools.tools] == ["lookup", "missed", "later"]
    assert changes == [["lookup", "missed"], ["lookup", "missed", "later"]]
    ended = [r.getMessage() for r in caplog.records if "tools' changes ended" in r.getMessage()]
    assert [message.rpartition("; ")[2] for message in ended] == [
        "opening it again in 1 s",
        "opening it again in 2 s",
        "opening it again in 4 s",
    ]
    assert "(the server closed it)" in ended[0]
    assert "too busy to listen" in ended[1]


async def test_a_server_dropping_each_stream_soon_after_it_opens_is_asked_ever_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The wait before opening again starts over only after a stream held a while: a server
    that drops every stream soon after opening it is not asked again each second."""
    catalogue = EndingServer()
    changed = asyncio.Event()
    caplog.set_level(logging.WARNING, logger="roomkit.tools.mcp")
    async with MCPTools(
        catalogue.server, handler=HumanInputHandler(), on_tools_changed=lambda _: changed.set()
    ):
        for opened, names in ((2, ["lookup", "b"]), (3, ["lookup", "b", "c"])):
            catalogue.names = names
            changed.clear()
            catalogue.streams.close()
            await changed.wait()  # opened again, and listed again after it
            assert catalogue.opened == opened
    ended = [r.getMessage() for r in caplog.records if "tools' changes ended" in r.getMessage()]
    assert [message.rpartition("; ")[2] for message in ended] == [
        "opening it again in 1 s",
        "opening it again in 2 s",
    ]
