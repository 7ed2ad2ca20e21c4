"""``roomkit mcp --http`` among several people: each credential for its own use only, each
key within its owner's scope, each session its opener's.

The command runs as a real process (``roomkit mcp --http 0``) on a SQLite store that a
handler of the test shares, as the desk would.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from tests.desk.desk_harness import SECRET
from tests.mcp.mcp_kit import INITIALIZE, PROTOCOL, Call, settled, text_of

from roomkit.auth import issue_answer_link, issue_sign_in_link, issue_token
from roomkit.mcp import KEY_META, HumanInputMCPServer
from roomkit.mcp.command import bearer_app
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Served:
    """A running ``roomkit mcp --http`` and a handler on its store."""

    url: str
    handler: HumanInputHandler
    log: list[str] = field(default_factory=list)


@asynccontextmanager
async def mcp_http(tmp_path: Path) -> AsyncIterator[Served]:
    """``roomkit mcp --http 0`` on a SQLite file, until the block ends."""
    db = tmp_path / "kit.db"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roomkit.cli",
        "mcp",
        "--store",
        f"sqlite:///{db}",
        "--http",
        "0",
        env={**os.environ, "ROOMKIT_DESK_SECRET": SECRET},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    said: list[str] = []
    while not said or not said[-1].startswith("roomkit mcp: serving "):
        line = await process.stderr.readline()
        if not line:
            raise AssertionError(f"roomkit mcp --http ended: {''.join(said)}")
        said.append(line.decode())
    store = SQLiteStore(str(db))
    handler = HumanInputHandler(store=store)
    try:
        yield Served(said[-1].split()[-1], handler)
    finally:
        process.terminate()
        await process.wait()
        await handler.close()
        await store.close()


class Person:
    """An SDK client of the server with ``actor``'s token, on the protocol with sessions; it
    notes its session id and the ids of the requests it sent."""

    def __init__(self, url: str, actor: str) -> None:
        self.url = url
        self.token = issue_token(SECRET, actor)
        self.session_id: str | None = None
        self.sent: list[dict[str, Any]] = []

    async def _request(self, request: httpx2.Request) -> None:
        if request.method == "POST" and request.content:
            self.sent.append(json.loads(request.content))

    async def _response(self, response: httpx2.Response) -> None:
        self.session_id = response.headers.get("mcp-session-id", self.session_id)

    @asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        hooks = {"request": [self._request], "response": [self._response]}
        headers = {"Authorization": f"Bearer {self.token}"}
        async with (
            httpx2.AsyncClient(headers=headers, event_hooks=hooks) as http,  # type: ignore[arg-type]
            # The handshake era's protocol, the one with sessions (``mcp-session-id``).
            Client(streamable_http_client(self.url, http_client=http), mode="legacy") as client,
        ):
            yield client

    def call_id(self, tool: str) -> Any:
        """The JSON-RPC id of the last ``tools/call`` of ``tool`` sent."""
        calls = [m for m in self.sent if m.get("method") == "tools/call"]
        return [m for m in calls if m["params"]["name"] == tool][-1]["id"]


async def post(url: str, token: str, body: object, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(
            url, json=body, headers={"Authorization": f"Bearer {token}", **ACCEPT, **headers}
        )


async def test_a_sign_in_link_and_an_answer_link_cannot_open_a_session(tmp_path: Path) -> None:
    """What ``roomkit desk`` prints signs in on the desk's page, and nowhere else."""
    async with mcp_http(tmp_path) as served:
        refused = {
            name: await post(served.url, token, INITIALIZE)
            for name, token in {
                "sign-in": issue_sign_in_link(SECRET, "admin", admin=True),
                "answer": issue_answer_link(SECRET, "some-request", "alice"),
            }.items()
        }
        person = await post(served.url, issue_token(SECRET, "alice"), INITIALIZE)
    assert {name: reply.status_code for name, reply in refused.items()} == {
        "sign-in": 401,
        "answer": 401,
    }
    assert "only signs in" in refused["sign-in"].text
    assert "answers its one request" in refused["answer"].text
    assert person.status_code == 200


async def test_another_persons_key_makes_a_request_of_ones_own(tmp_path: Path) -> None:
    """bob's call with alice's key neither reads her answer nor, cancelled, withdraws her
    question: it asks one of his own."""
    async with mcp_http(tmp_path) as served:
        alice, bob = Person(served.url, "alice"), Person(served.url, "bob")
        async with alice.client() as as_alice, bob.client() as as_bob:
            hers = Call(as_alice, "AskUserQuestion", {"question": "PIN?"}, meta={KEY_META: "k"})
            await hers.wait_asked()
            his = Call(as_bob, "AskUserQuestion", {"question": "PIN?"}, meta={KEY_META: "k"})
            await his.wait_asked()
            # Each call was recorded before the server told its client a person is asked.
            first, second = await served.handler.list_pending()
            assert {first.actor_id, second.actor_id} == {"alice", "bob"}
            mine = first if first.actor_id == "alice" else second
            theirs = second if mine is first else first
            assert bob.session_id is not None
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": bob.call_id("AskUserQuestion")},
            }
            session = {"mcp-session-id": bob.session_id, "mcp-protocol-version": PROTOCOL}
            assert (await post(served.url, bob.token, cancel, **session)).status_code == 202
            ended = await settled(served.handler, theirs.pending_id)
            assert ended.withdrawn
            with pytest.raises(MCPError, match="cancelled"):
                await his.result()
            kept = await served.handler.get_request(mine.pending_id)
            assert kept is not None
            assert kept.status is PendingInputStatus.PENDING
            assert await served.handler.aresolve(mine.pending_id, "4711")
            result = await hers.result()
    assert (text_of(result), result.is_error) == ("4711", False)


async def test_another_persons_session_is_not_found(tmp_path: Path) -> None:
    """bob, with his own token and alice's session id, can neither cancel her call nor end
    her session: both get the 404 of a session that does not exist."""
    async with mcp_http(tmp_path) as served:
        alice = Person(served.url, "alice")
        bob = issue_token(SECRET, "bob")
        async with alice.client() as as_alice:
            call = Call(as_alice, "AskUserQuestion", {"question": "Deploy?"})
            await call.wait_asked()
            [request] = await served.handler.list_pending()
            assert alice.session_id is not None
            session = {"mcp-session-id": alice.session_id, "mcp-protocol-version": PROTOCOL}
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": alice.call_id("AskUserQuestion")},
            }
            cancelled = await post(served.url, bob, cancel, **session)
            async with httpx.AsyncClient() as http:
                ended = await http.delete(
                    served.url, headers={"Authorization": f"Bearer {bob}", **session}
                )
            assert (cancelled.status_code, ended.status_code) == (404, 404)
            assert "Session not found" in cancelled.text
            still = await served.handler.get_request(request.pending_id)
            assert still is not None
            assert still.status is PendingInputStatus.PENDING
            assert await served.handler.aresolve(request.pending_id, "yes")
            result = await call.result()
    assert (text_of(result), result.is_error) == ("yes", False)


async def test_an_ai_channels_key_names_nothing_for_an_mcp_caller(
    durable: HumanInputHandler,
) -> None:
    """An AI channel's request is keyed ``room:channel:tool-call-id``, no secret: an MCP call
    with that key asks its own question."""
    from tests.desk.desk_harness import serve

    channels = await durable.create(
        "AskUserQuestion",
        {"question": "Card number?"},
        room_id="room",
        channel_id="ai",
        tool_call_id="call-1",
        actor_id="alice",
        key="room:ai:call-1",
        timeout=300,
    )
    await durable.aresolve(channels.pending_id, "4111 1111 1111 1111")
    server = HumanInputMCPServer(durable)
    async with serve(bearer_app(server, SECRET.encode()), lifespan="on") as base:  # type: ignore[arg-type]
        bob = Person(f"{base}/mcp", "bob")
        async with bob.client() as as_bob:
            call = Call(
                as_bob, "AskUserQuestion", {"question": "?"}, meta={KEY_META: "room:ai:call-1"}
            )
            await call.wait_asked()
            [own] = await durable.list_pending()
            assert (own.actor_id, own.channel_id) == ("bob", "mcp")
            assert await durable.aresolve(own.pending_id, "his own")
            result = await call.result()
    assert text_of(result) == "his own"
