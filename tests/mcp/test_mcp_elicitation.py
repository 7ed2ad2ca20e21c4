"""An SDK server that elicits, answered by a person through the handler (MCPTools)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import pytest
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from tests.desk.desk_harness import World, bearer
from tests.mcp.mcp_kit import (
    alice_books,
    booking_model,
    first_asked,
    lists_book,
    tool_result,
    trip_room,
)

from roomkit.core.exceptions import InvalidAnswerError, ToolFailedError, UnservedToolCallError
from roomkit.models.enums import ChannelType
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.mcp import REASON_META, MCPTools

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "seats": {"type": "integer", "minimum": 1},
    },
    "required": ["name", "seats"],
}
NESTED = {"type": "object", "properties": {"where": {"type": "object", "properties": {}}}}


def _elicit(schema: dict[str, Any] | None, url: str | None) -> types.ElicitRequest:
    if url is not None:
        return types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                message="Sign in to the bank", url=url, elicitation_id="e1"
            )
        )
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message="Who books?", requested_schema=schema or {})
    )


def eliciting_server(schema: dict[str, Any] | None = FORM, url: str | None = None) -> Server[Any]:
    """A server whose tool ``book`` elicits once, in the style its connection's era uses."""

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        request = _elicit(schema, url)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not params.input_responses:
                return types.InputRequiredResult(input_requests={"who": request})
            answer = params.input_responses["who"]
            assert isinstance(answer, types.ElicitResult)
        else:
            answer = await ctx.session.send_request(request, types.ElicitResult)
        reply = {"action": answer.action, "content": answer.content, "meta": answer.meta}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(reply))]
        )

    return Server("booker", on_list_tools=lists_book, on_call_tool=call_tool)


async def _book(tools: MCPTools) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(await tools("book", {}))
    return reply


MODES = ["legacy", "auto"]
"""The 2025-11-25 push style, and the 2026-07-28 input-required style the SDK negotiates."""


@pytest.mark.parametrize("mode", MODES)
async def test_a_form_answer_is_accepted_with_its_content(mode: str) -> None:
    handler = HumanInputHandler()
    async with MCPTools(eliciting_server(), handler=handler, room_id="ops", mode=mode) as tools:
        assert [tool.name for tool in tools.tools] == ["book"]
        booking = asyncio.create_task(_book(tools))
        request = await first_asked(handler)
        assert (request.room_id, request.channel_type) == ("ops", ChannelType.MCP)
        assert request.answer_schema == {**FORM, "additionalProperties": False}
        with pytest.raises(InvalidAnswerError):
            await handler.aresolve(request.pending_id, '{"name": "Ada", "seats": 0}')
        assert await handler.aresolve(request.pending_id, '{"name": "Ada", "seats": 2}')
        reply = await booking
    assert (reply["action"], reply["content"]) == ("accept", {"name": "Ada", "seats": 2})


@pytest.mark.parametrize("mode", MODES)
async def test_an_answer_with_a_field_the_form_lacks_is_refused(mode: str) -> None:
    """MCP's ``accept`` carries only the form's fields: an answer with another is refused
    while the request stays open, rather than taken and then lost on its way back."""
    handler = HumanInputHandler()
    async with MCPTools(eliciting_server(), handler=handler, mode=mode) as tools:
        booking = asyncio.create_task(_book(tools))
        request = await first_asked(handler)
        with pytest.raises(InvalidAnswerError):
            await handler.aresolve(
                request.pending_id, '{"name": "Ada", "seats": 2, "where": {"row": 3}}'
            )
        assert await handler.aresolve(request.pending_id, '{"name": "Ada", "seats": 2}')
        reply = await booking
    assert (reply["action"], reply["content"]) == ("accept", {"name": "Ada", "seats": 2})


@pytest.mark.parametrize("mode", MODES)
async def test_a_rejection_is_a_decline_and_a_timeout_a_cancel(mode: str) -> None:
    handler = HumanInputHandler()
    async with MCPTools(eliciting_server(), handler=handler, timeout=30, mode=mode) as tools:
        booking = asyncio.create_task(_book(tools))
        handler.reject((await first_asked(handler)).pending_id, "not mine")
        assert (await booking)["action"] == "decline"
        assert (await _book(tools))["action"] == "cancel"


async def test_a_url_elicitation_is_a_card_with_the_link() -> None:
    handler = HumanInputHandler()
    server = eliciting_server(url="https://bank.example/consent")
    async with MCPTools(server, handler=handler, mode="legacy") as tools:
        booking = asyncio.create_task(_book(tools))
        request = await first_asked(handler)
        assert request.arguments["details"]["url"] == "https://bank.example/consent"
        handler.resolve(request.pending_id, '{"confirmed": true}')
        assert (await booking)["action"] == "accept"
        booking = asyncio.create_task(_book(tools))
        handler.resolve((await first_asked(handler)).pending_id, '{"confirmed": false}')
        assert (await booking)["action"] == "decline"


@pytest.mark.parametrize("mode", MODES)
async def test_a_link_too_long_to_keep_is_declined_with_the_reason(mode: str) -> None:
    """An elicitation no request can hold is declined saying why, as a form's schema is,
    instead of failing the server's call."""
    handler = HumanInputHandler()
    server = eliciting_server(url="https://bank.example/" + "a" * 60_000)
    async with MCPTools(server, handler=handler, mode=mode) as tools:
        reply = await _book(tools)
    assert reply["action"] == "decline"
    assert "over the 56,000 a request keeps" in reply["meta"][REASON_META]
    assert await handler.list_pending() == []


async def test_a_nested_schema_is_declined_with_the_reason() -> None:
    handler = HumanInputHandler()
    async with MCPTools(eliciting_server(NESTED), handler=handler, mode="legacy") as tools:
        reply = await _book(tools)
    assert reply["action"] == "decline"
    assert "no nesting" in reply["meta"][REASON_META]
    assert await handler.list_pending() == []


HOSTILE = [
    # A regular expression the desk would run on a person's answer: exponential backtracking.
    {"note": {"type": "string", "pattern": "^(\\w+\\s?)*$"}},
    # A reference no answer could ever be checked against.
    {"note": {"type": "string", "$ref": "http://169.254.169.254/latest"}},
    # A list of types, which no flat form draws.
    {"note": {"type": ["string", "null"]}},
    # Choices that are schemas of their own.
    {"pick": {"type": "string", "oneOf": [{"const": "a", "pattern": "(a+)+$"}]}},
    # Choices that are no text, which MCP's result cannot carry back.
    {"picks": {"type": "array", "items": {"type": "number", "enum": [1, 2]}}},
    {"picks": {"type": "array", "items": {"enum": [{"row": 1}]}}},
    {"picks": {"type": "array", "items": {"anyOf": [{"const": 1, "title": "One"}]}}},
]


@pytest.mark.parametrize(
    "properties",
    HOSTILE,
    ids=["pattern", "ref", "type-list", "oneOf", "number-items", "object-enum", "number-const"],
)
async def test_a_schema_outside_mcps_primitives_is_declined_and_asks_nobody(
    properties: dict[str, Any],
) -> None:
    handler = HumanInputHandler()
    schema = {"type": "object", "properties": properties}
    async with MCPTools(eliciting_server(schema), handler=handler, mode="legacy") as tools:
        reply = await _book(tools)
    assert reply["action"] == "decline"
    assert "requestedSchema.properties" in reply["meta"][REASON_META]
    assert await handler.list_pending() == []


async def test_an_unknown_tool_is_unserved_and_an_error_result_fails() -> None:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name="boom", input_schema={"type": "object"})]
        )

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="disk full")], is_error=True
        )

    server = Server("boom", on_list_tools=list_tools, on_call_tool=call_tool)
    async with MCPTools(server, handler=HumanInputHandler()) as tools:
        with pytest.raises(UnservedToolCallError):
            await tools("other", {})
        with pytest.raises(ToolFailedError, match="disk full"):
            await tools("boom", {})


@pytest.mark.parametrize("mode", MODES)
async def test_an_ai_channel_calls_the_servers_tool_and_a_person_answers_its_elicitation(
    mode: str,
) -> None:
    """The request is asked in the turn's room, of its author; the model reads the result."""
    handler = HumanInputHandler()
    model = booking_model("Booked.")
    async with (
        MCPTools(eliciting_server(), handler=handler, mode=mode) as tools,
        trip_room(tools, model) as kit,
    ):
        turn = asyncio.create_task(kit.process_inbound(alice_books()))
        request = await first_asked(handler)
        assert (request.room_id, request.actor_id, request.channel_id) == ("trip", "alice", "agent")
        await handler.aresolve(request.pending_id, '{"name": "Alice", "seats": 1}')
        await turn
    result = tool_result(model)
    assert json.loads(result.content)["content"] == {"name": "Alice", "seats": 1}


async def test_elicitations_are_answered_on_the_desk() -> None:
    """A form is a card answered with its schema's object; a URL a card to confirm."""
    world = World()
    replies: list[dict[str, Any]] = []
    async with world.client() as desk:
        for server, body, action in (
            (eliciting_server(), {"answer": {"name": "Ada", "seats": 3}}, "accept"),
            (eliciting_server(url="https://bank.example/ok"), {"confirmed": False}, "decline"),
        ):
            async with MCPTools(
                server, handler=world.handler, room_id="ops", actor_id="alice"
            ) as tools:
                booking = asyncio.create_task(_book(tools))
                await first_asked(world.handler)
                [view] = (await desk.get("/api/requests", headers=bearer("alice"))).json()[
                    "requests"
                ]
                answered = await desk.post(
                    f"/api/requests/{view['id']}/answer", json=body, headers=bearer("alice")
                )
                assert answered.status_code == 200, answered.text
                replies.append(await booking)
            assert replies[-1]["action"] == action
    assert [reply["content"] for reply in replies] == [{"name": "Ada", "seats": 3}, None]
