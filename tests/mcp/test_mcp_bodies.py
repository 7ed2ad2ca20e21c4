"""``roomkit mcp --http`` reads every body under limits before the SDK parses it."""

from __future__ import annotations

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.desk.desk_harness import SECRET, serve
from tests.mcp.mcp_kit import Call, open_request, text_of

from roomkit.desk import issue_token
from roomkit.mcp import HumanInputMCPServer
from roomkit.mcp.command import bearer_app
from roomkit.tools.human_input import HumanInputHandler

HEADERS = {
    "Authorization": f"Bearer {issue_token(SECRET, 'bob')}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}
PING = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": %s}'


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        ("[" * 50_000, 400, -32700, "50000 levels deep; at most 64"),
        (PING % ("[" * 65 + "]" * 65), 400, -32700, "66 levels deep"),
        (PING % ('{"a": ' + "9" * 5000 + "}"), 400, -32700, "5000 characters long"),
        (PING % '{"a": 1e999}', 400, -32700, "beyond a float's range"),
        ('{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}', 400, -32700, "'id' twice"),
        (PING % ('"' + "x" * 300_000 + '"'), 413, -32600, "262144-byte limit"),
        ("[" + PING % "{}" + "]", 400, -32600, "batch (a JSON array) is not taken"),
        ("[]", 400, -32600, "send each message as one JSON object in a POST of its own"),
    ],
    ids=[
        "50000-deep",
        "66-deep",
        "huge-number",
        "out-of-range",
        "duplicate-key",
        "too-big",
        "batch",
        "empty-batch",
    ],
)
async def test_http_refuses_a_body_json_does_not_take_and_serves_on(
    body: str, status: int, code: int, words: str
) -> None:
    handler = HumanInputHandler()
    server = HumanInputMCPServer(handler)
    async with serve(bearer_app(server, SECRET.encode()), lifespan="on") as base:
        async with httpx.AsyncClient() as plain:
            refused = await plain.post(f"{base}/mcp", content=body.encode(), headers=HEADERS)
        assert refused.status_code == status
        error = refused.json()
        assert (error["jsonrpc"], error["id"], error["error"]["code"]) == ("2.0", None, code)
        assert words in error["error"]["message"]
        assert len(error["error"]["message"]) < 200
        auth = {"Authorization": HEADERS["Authorization"]}
        async with (
            httpx2.AsyncClient(headers=auth) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            call = Call(client, "AskUserQuestion", {"question": "Still there?"})
            await call.wait_asked()
            handler.resolve((await open_request(handler)).pending_id, "yes")
            assert text_of(await call.result()) == "yes"


async def test_no_token_is_refused_before_the_body_is_read() -> None:
    """Whoever has no token is told so, whatever the body: nothing of it is read."""
    server = HumanInputMCPServer(HumanInputHandler())
    async with (
        serve(bearer_app(server, SECRET.encode()), lifespan="on") as base,
        httpx.AsyncClient() as plain,
    ):
        refused = await plain.post(f"{base}/mcp", content=b"[" * 50_000)
    assert refused.status_code == 401
