"""An SDK client calls the human-input tools of the MCP server while a person answers."""

from __future__ import annotations

import asyncio
from importlib.metadata import version

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from tests.desk.desk_harness import SECRET, World, bearer
from tests.mcp.mcp_kit import Call, RawPeer, client_of, open_request, served, settled, text_of

from roomkit.core.exceptions import ToolFailedError, ToolRefusedError
from roomkit.desk import issue_answer_link
from roomkit.mcp import KEY_META, HumanInputMCPServer
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInputEvent
from roomkit.tools import ToolCallContext, tool_turn_context
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler


async def test_a_bare_question_is_answered_by_a_person() -> None:
    """The call becomes an MCP request of the actor in room mcp; the result is the answer."""
    async with served(actor="alice") as (handler, client):
        call = Call(client, "AskUserQuestion", {"question": "Which colour?"})
        await call.wait_asked()
        request = await open_request(handler)
        assert (request.channel_type, request.room_id, request.actor_id) == (
            ChannelType.MCP,
            "mcp",
            "alice",
        )
        assert request.pending_id in (call.progress[0][2] or "")
        assert handler.resolve(request.pending_id, "blue")
        result = await call.result()
    assert (text_of(result), result.is_error) == ("blue", False)


async def test_the_tools_are_listed_with_their_schemas() -> None:
    async with served(room="desk-room") as (_, client):
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == ["AskUserQuestion", "ConfirmAction"]
    assert tools[1].input_schema["required"] == ["action"]


async def _channel_text(name: str, failure: type[Exception], *, reject: bool) -> str:
    """What an AIChannel's model reads when its request is rejected or times out (5 s)."""
    handler = HumanInputHandler()
    human = HumanInputToolHandler({name}, timeout=5, handler=handler)
    created = asyncio.Event()
    handler.subscribe(lambda change: created.set())
    with tool_turn_context(room_id="r", call=ToolCallContext("r", "tc")):
        asking = asyncio.create_task(human.ask(name, {"question": "Go?"}))
        if reject:
            await created.wait()
            handler.reject(next(iter(handler.pending)), "not now")
        with pytest.raises(failure) as raised:
            await asking
    return str(raised.value.args[0])


async def test_a_rejection_reads_as_on_an_ai_channel() -> None:
    async with served() as (handler, client):
        call = Call(client, "AskUserQuestion", {"question": "Go?"})
        await call.wait_asked()
        handler.reject((await open_request(handler)).pending_id, "not now")
        result = await call.result()
    assert result.is_error
    assert text_of(result) == await _channel_text("AskUserQuestion", ToolRefusedError, reject=True)


async def test_a_timeout_reads_as_on_an_ai_channel() -> None:
    """Nobody answers within the timeout (virtual time): the model reads the timeout text."""
    async with served(timeout=5) as (_, client):
        result = await client.call_tool("ConfirmAction", {"action": "Delete the branch"})
    assert result.is_error
    assert text_of(result) == await _channel_text("ConfirmAction", ToolFailedError, reject=False)


async def test_arguments_that_fail_the_schema_are_an_error_result() -> None:
    """Nobody is asked; the result names the problem."""
    async with served() as (handler, client):
        result = await client.call_tool("AskUserQuestion", {"question": "Hi?", "colour": "red"})
    assert result.is_error
    assert "Invalid arguments for 'AskUserQuestion'" in text_of(result)
    assert "colour" in text_of(result)
    assert await handler.list_pending() == []


async def test_an_unknown_tool_is_the_sdk_error() -> None:
    async with served() as (_, client):
        with pytest.raises(MCPError, match="Unknown tool: DeleteRepo"):
            await client.call_tool("DeleteRepo", {})


async def test_a_key_that_is_no_string_is_an_error_result() -> None:
    async with served() as (_, client):
        result = await client.call_tool("AskUserQuestion", {"question": "Hi?"}, meta={KEY_META: 7})
    assert result.is_error
    assert KEY_META in text_of(result)


async def test_a_cancelled_call_withdraws_its_request() -> None:
    async with served() as (handler, client):
        call = Call(client, "AskUserQuestion", {"question": "Which colour?"})
        await call.wait_asked()
        request = await open_request(handler)
        call.task.cancel()
        ended = await settled(handler, request.pending_id)
    assert ended.withdrawn


async def test_a_reused_request_id_is_refused_and_the_running_call_stays_cancellable() -> None:
    """A call whose id names a call still running asks nobody; a cancellation of that id
    still withdraws the running call's request, though the SDK gave the id to the refused one."""
    handler = HumanInputHandler()
    call = {"name": "AskUserQuestion", "arguments": {"question": "Deploy?"}}
    async with RawPeer(HumanInputMCPServer(handler, actor="alice").server).connected() as peer:
        await peer.request(2, "tools/call", {**call, "_meta": {"progressToken": "p"}})
        assert (await peer.receive())["method"] == "notifications/progress"
        request = await open_request(handler)
        await peer.request(2, "tools/call", {**call, "arguments": {"question": "Drop the db?"}})
        while "id" not in (answer := await peer.receive()):
            pass
        assert answer["error"]["code"] == INVALID_REQUEST
        assert "give every request an id of its own" in answer["error"]["message"]
        assert [r.pending_id for r in await handler.list_pending()] == [request.pending_id]
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        )
        ended = await settled(handler, request.pending_id)
        await peer.hang_up()
    assert ended.withdrawn


@pytest.mark.parametrize("room", ["r" * 257, "r\ud800"], ids=["long", "surrogate"])
async def test_a_room_no_request_can_have_is_refused_when_the_server_is_made(room: str) -> None:
    with pytest.raises(ValueError, match=r"^room "):
        HumanInputMCPServer(HumanInputHandler(), room=room)


@pytest.mark.parametrize("timeout", [0, 1e12, float("inf")], ids=["zero", "past-a-century", "inf"])
async def test_a_timeout_no_request_can_have_is_refused_when_the_server_is_made(
    timeout: float,
) -> None:
    """Rather than every call reading the store's refusal as its own arguments' fault."""
    with pytest.raises(ValueError, match=r"^timeout must be a positive number of seconds, at "):
        HumanInputMCPServer(HumanInputHandler(), timeout=timeout)


KEYED_CALL = {
    "name": "ConfirmAction",
    "arguments": {"action": "Deploy"},
    "_meta": {"progressToken": "p1", KEY_META: "deploy-42"},
}


async def test_a_keyed_call_on_a_durable_store_survives_its_client(
    durable: HumanInputHandler,
) -> None:
    """The client goes away; a new client with the same key gets the answer given meanwhile."""
    server = HumanInputMCPServer(durable, actor="alice")
    async with RawPeer(server.server).connected() as peer:
        await peer.request(2, "tools/call", KEYED_CALL)
        assert (await peer.receive())["method"] == "notifications/progress"
        request = await open_request(durable)
        await peer.hang_up()
    assert str((await durable.get_request(request.pending_id)).status) == "pending"  # type: ignore[union-attr]
    assert await durable.aresolve(request.pending_id, '{"confirmed": true}')
    async with client_of(server.server) as client:
        result = await client.call_tool(
            "ConfirmAction", {"action": "Deploy"}, meta={KEY_META: "deploy-42"}
        )
    assert (text_of(result), result.is_error) == ('{"confirmed": true}', False)


async def test_an_mcp_cancellation_withdraws_even_a_keyed_call(
    durable: HumanInputHandler,
) -> None:
    server = HumanInputMCPServer(durable, actor="alice")
    async with RawPeer(server.server).connected() as peer:
        await peer.request(2, "tools/call", KEYED_CALL)
        assert (await peer.receive())["method"] == "notifications/progress"
        request = await open_request(durable)
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        )
        ended = await settled(durable, request.pending_id)
        await peer.hang_up()
    assert ended.withdrawn


async def test_a_person_answers_on_the_desk() -> None:
    """The desk on the same handler shows the MCP request to its actor and takes the answer."""
    world = World()
    server = HumanInputMCPServer(world.handler, actor="alice")
    async with client_of(server.server) as client, world.client() as desk:
        call = Call(client, "AskUserQuestion", {"question": "Size?", "options": ["S", "M"]})
        await call.wait_asked()
        listed = (await desk.get("/api/requests", headers=bearer("alice"))).json()["requests"]
        assert [view["tool_name"] for view in listed] == ["AskUserQuestion"]
        answered = await desk.post(
            f"/api/requests/{listed[0]['id']}/answer", json={"answer": "M"}, headers=bearer("alice")
        )
        assert answered.status_code == 200
        result = await call.result()
    assert (text_of(result), result.is_error) == ("M", False)


async def test_a_person_answers_through_a_notifications_answer_link() -> None:
    """The request's ON_USER_INPUT_REQUIRED event gets a single-use link; it answers on the desk."""
    world = World()
    links: list[str] = []

    async def notify(event: PendingInputEvent) -> None:
        links.append(issue_answer_link(SECRET, event.pending_id, event.actor_id or "admin"))

    world.handler.on_input_required = notify
    server = HumanInputMCPServer(world.handler, actor="alice")
    async with client_of(server.server) as client, world.client() as desk:
        call = Call(client, "ConfirmAction", {"action": "Merge the pull request"})
        await call.wait_asked()
        request = await open_request(world.handler)
        answered = await desk.post(
            f"/api/requests/{request.pending_id}/answer",
            json={"confirmed": True},
            headers=bearer(links[0]),
        )
        assert answered.status_code == 200
        result = await call.result()
    assert (text_of(result), result.is_error) == ('{"confirmed":true}', False)


async def test_a_closed_handler_fails_the_call_as_a_channel_says() -> None:
    """The waiting call reads the withdrawal, a new call the closed handler (README table)."""
    async with served() as (handler, client):
        call = Call(client, "AskUserQuestion", {"question": "Still there?"})
        await call.wait_asked()
        await handler.close()
        result = await call.result()
        assert result.is_error
        assert (
            text_of(result)
            == '{"error": "Tool \'AskUserQuestion\' failed (RequestWithdrawnError)"}'
        )
        again = await client.call_tool("AskUserQuestion", {"question": "And now?"})
    assert again.is_error
    assert "failed (HandlerClosedError)" in text_of(again)


async def test_a_key_reused_for_another_question_never_gets_its_answer(
    durable: HumanInputHandler,
) -> None:
    """A key names one call: the same key on a question worded otherwise is refused, and
    neither reads the answer given to the first nor asks anyone."""
    server = HumanInputMCPServer(durable, actor="alice")
    key = {KEY_META: "ask-1"}
    async with client_of(server.server) as client:
        first = Call(client, "AskUserQuestion", {"question": "Deploy to staging?"}, meta=key)
        await first.wait_asked()
        request = await open_request(durable)
        assert await durable.aresolve(request.pending_id, "yes")
        assert text_of(await first.result()) == "yes"
        other = await client.call_tool(
            "AskUserQuestion", {"question": "Deploy to production?"}, meta=key
        )
        again = await client.call_tool(
            "AskUserQuestion", {"question": "Deploy to staging?"}, meta=key
        )
    assert other.is_error
    assert "yes" not in text_of(other)
    assert "give this call a key of its own" in text_of(other)
    assert await durable.list_pending() == []
    assert (text_of(again), again.is_error) == ("yes", False)


async def test_a_keyed_call_whose_client_left_is_not_remembered_past_its_deadline(
    durable: HumanInputHandler,
) -> None:
    """What the server keeps to withdraw a keyed call on an MCP cancellation goes once the
    call's deadline has passed, even when its client left without a word (virtual time)."""
    server = HumanInputMCPServer(durable, actor="alice", timeout=0.5)
    async with RawPeer(server.server).connected() as peer:
        await peer.request(2, "tools/call", KEYED_CALL)
        assert (await peer.receive())["method"] == "notifications/progress"
        await peer.hang_up()
    async with client_of(server.server) as client:
        late = await client.call_tool("AskUserQuestion", {"question": "Hi?"}, meta={KEY_META: "a"})
        assert late.is_error  # timed out: the first call's deadline has passed too
        answered = Call(client, "AskUserQuestion", {"question": "Hi?"}, meta={KEY_META: "b"})
        await answered.wait_asked()
        [request] = [r for r in await durable.list_pending() if r.arguments == {"question": "Hi?"}]
        assert await durable.aresolve(request.pending_id, "hello")
        assert text_of(await answered.result()) == "hello"
    # The server's own bookkeeping, which nothing outside it can see.
    assert server._calls.kept == {}


async def test_the_server_names_its_version() -> None:
    """A client reads which roomkit it talks to in the server's info (its package's version)."""
    server = HumanInputMCPServer(HumanInputHandler(), actor="alice")
    async with RawPeer(server.server).connected() as peer:
        info = peer.initialized["result"]["serverInfo"]
        await peer.hang_up()
    assert info["name"] == "roomkit"
    assert info["version"] == version("roomkit-hitl")
