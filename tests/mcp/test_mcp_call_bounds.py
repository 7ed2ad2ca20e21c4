"""An MCP tool on an AIChannel: the channel's bound counts the server's work, not a person's.

The AIChannel keeps its default 30 s bound on a call; the server's work and the person's
answer take their time on the virtual clock.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from tests.mcp.mcp_kit import (
    alice_books,
    booking_model,
    first_asked,
    lists_book,
    tool_result,
    trip_room,
)

from roomkit.models.pending_input import PendingInputStatus
from roomkit.testing import advance
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.mcp import MCPTools

SEATS = {
    "type": "object",
    "properties": {"seats": {"type": "integer", "minimum": 1}},
    "required": ["seats"],
}
MODES = ["legacy", "auto"]
"""The 2025-11-25 push style, and the 2026-07-28 input-required style the SDK negotiates."""
TIMED_OUT = json.dumps({"error": "tool 'book' did not answer within 30 s"})


def booking_server(*, before: float = 0, after: float = 0) -> Server[Any]:
    """A server whose tool ``book`` works ``before`` seconds, asks how many seats, then works
    ``after`` seconds more."""

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        ask = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message="How many seats?", requested_schema=SEATS)
        )
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not params.input_responses:
                await advance(before)
                return types.InputRequiredResult(input_requests={"seats": ask})
            answer = params.input_responses["seats"]
            assert isinstance(answer, types.ElicitResult)
        else:
            await advance(before)
            answer = await ctx.session.send_request(ask, types.ElicitResult)
        await advance(after)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{answer.action}: {answer.content}")]
        )

    return Server("booker", on_list_tools=lists_book, on_call_tool=call_tool)


@asynccontextmanager
async def booking_turn(
    server: Server[Any], handler: HumanInputHandler, mode: str, *, answer_after: float
) -> AsyncIterator[list[str]]:
    """A turn of an AIChannel (default bound) calling ``book``, whose person answers
    ``answer_after`` seconds after being asked; yields the ids of the requests asked, and
    leaves the tool result the model read as their last entry."""
    model = booking_model("Booked.")
    asked: list[str] = []
    async with (
        MCPTools(server, handler=handler, mode=mode) as tools,
        trip_room(tools, model) as kit,
    ):
        turn = asyncio.create_task(kit.process_inbound(alice_books()))
        asking = asyncio.create_task(first_asked(handler))
        await asyncio.wait({turn, asking}, return_when=asyncio.FIRST_COMPLETED)
        if asking.done():
            request = asking.result()
            asked.append(request.pending_id)
            answer = json.dumps({"seats": 2})
            asyncio.get_running_loop().call_later(
                answer_after, handler.resolve, request.pending_id, answer
            )
        else:
            asking.cancel()
        await turn
    result = tool_result(model)
    asked.append(result.content)
    yield asked


@pytest.mark.parametrize("mode", MODES)
async def test_a_person_answering_past_the_bound_is_taken(mode: str) -> None:
    """The person answers after 60 s, past the channel's 30 s bound, within MCPTools'
    ``timeout``: the call goes on with the answer."""
    handler = HumanInputHandler()
    async with booking_turn(booking_server(), handler, mode, answer_after=60) as seen:
        [pending_id, read] = seen
    assert read == "accept: {'seats': 2}"
    request = await handler.get_request(pending_id)
    assert request is not None
    assert request.status == PendingInputStatus.RESOLVED


@pytest.mark.parametrize("mode", MODES)
async def test_the_servers_work_around_the_answer_is_still_bounded(mode: str) -> None:
    """20 s of work before the question and 20 s after it overrun the 30 s bound together,
    however long the person took: the answer is taken, then the call is cut."""
    handler = HumanInputHandler()
    server = booking_server(before=20, after=20)
    async with booking_turn(server, handler, mode, answer_after=60) as seen:
        [pending_id, read] = seen
    assert read == TIMED_OUT
    request = await handler.get_request(pending_id)
    assert request is not None
    assert request.status == PendingInputStatus.RESOLVED


@pytest.mark.parametrize("mode", MODES)
async def test_work_before_the_question_past_the_bound_asks_nobody(mode: str) -> None:
    handler = HumanInputHandler()
    async with booking_turn(booking_server(before=40), handler, mode, answer_after=0) as seen:
        [read] = seen
    assert read == TIMED_OUT
    assert await handler.list_pending() == []
