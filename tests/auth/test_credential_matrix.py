# The matrix below is one table, a surface a line: its lines are longer than the rest.
# ruff: noqa: E501
"""Every kind of credential against every surface that takes one: the status each gets.

The surfaces are read from the apps' own routes (the desk with its chat and Slack routes,
and ``roomkit mcp --http``'s app), so a route added without a row here fails
:func:`test_every_route_has_a_row`. A surface's cells share one desk (a room of alice and
bob; one server for the WebSocket and ``/mcp``), but each cell asks a request of its own of
alice and brings a credential of its own, so that what one credential spends or settles
never decides another cell; ``/metrics`` is asked from off the loopback, where it takes a
token.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from tests.desk.desk_harness import SECRET, World, serve, ws_url
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from roomkit.auth import issue_answer_link, issue_sign_in_link, issue_token
from roomkit.auth.ledger import actor_entry, link_entry, token_entry
from roomkit.auth.tokens import token_claims
from roomkit.notify.surface import Directory
from roomkit.tools.human_input import HumanInputHandler

pytest.importorskip("mcp")

from roomkit.mcp import HumanInputMCPServer
from roomkit.mcp.command import BearerApp, bearer_app

OTHER_SECRET = "another-desks-secret-0123456789abcdef"
KINDS = (
    "none",
    "actor",
    "admin",
    "answer link",
    "spent link",
    "sign-in link",
    "spent sign-in",
    "expired",
    "revoked token",
    "revoked actor",
    "other desk",
    "malformed",
)
"""The credentials, in the order of each row of :data:`MATRIX`."""

# fmt: off
MATRIX: dict[str, tuple[int, ...]] = {
    #                                          none act adm link spent s-in s-sp exp r-tok r-act other bad
    "POST /api/sign-in":                       (401, 401, 401, 401, 401, 200, 401, 401, 401, 401, 401, 401),
    "GET /api/link":                           (401, 401, 401, 200, 200, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/me":                             (401, 200, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/requests":                       (401, 200, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/history":                        (401, 200, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/requests/{request_id}":          (401, 200, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401),
    "POST /api/requests/{request_id}/answer":  (401, 200, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401),
    "POST /api/requests/{request_id}/reject":  (401, 200, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/requests/{request_id}/history":  (401, 200, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/grants":                         (401, 200, 200, 403, 401, 401, 401, 401, 401, 401, 401, 401),
    "POST /api/grants/{grant_id}/revoke":      (401, 404, 404, 403, 401, 401, 401, 401, 401, 401, 401, 401),
    "WS /api/ws":                              (401, 200, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /metrics":                            (401, 403, 200, 401, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/policy/counts":                  (401, 403, 200, 403, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/push/key":                       (401, 404, 404, 404, 401, 401, 401, 401, 401, 401, 401, 401),
    "POST /api/push/subscriptions":            (401, 404, 404, 403, 401, 401, 401, 401, 401, 401, 401, 401),
    "DELETE /api/push/subscriptions":          (401, 404, 404, 403, 401, 401, 401, 401, 401, 401, 401, 401),
    "POST /api/rooms/{room_id}/messages":      (401, 202, 202, 404, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /api/rooms/{room_id}/messages":       (401, 200, 200, 404, 401, 401, 401, 401, 401, 401, 401, 401),
    "POST /mcp":                               (401, 200, 200, 401, 401, 401, 401, 401, 401, 401, 401, 401),
    "GET /mcp":                                (401, 400, 400, 401, 401, 401, 401, 401, 401, 401, 401, 401),
    "DELETE /mcp":                             (401, 400, 400, 401, 401, 401, 401, 401, 401, 401, 401, 401),
}
# fmt: on
"""Per surface, the status of each credential of :data:`KINDS`. A WebSocket accepted
counts as 200, one closed on its auth frame (1008) as 401. An answer link reads and answers
its request on the desk, where the chat refuses it a room (404), and reads it, spent or not,
at ``GET /api/link``, which takes nothing else; a person's token without a
session on ``roomkit mcp --http`` gets past the gate to the SDK's own 400. The push routes of
a desk given no data folder answer those who get past the gate 404 (an answer link 403: it
may not subscribe)."""

PUBLIC = {"GET /api/openapi.json", "GET /"}
"""Surfaces that take no credential: the API's description and the desk's page."""
OTHER_PROOF = {"POST /api/slack/interactions"}
"""Surfaces that take another proof than a desk credential: Slack's signature (the person
behind a click then goes through the gate's ``vouch``)."""
MCP_METHODS = ("GET", "POST", "DELETE")
"""The methods of the streamable HTTP transport, on a route that names none."""


def desk_world() -> World:
    return World(chat_channel_id="chat", slack="signing-secret-0123456789", directory=Directory())


def mcp_app(handler: HumanInputHandler | None = None) -> BearerApp:
    server = HumanInputMCPServer(handler if handler is not None else HumanInputHandler())
    return bearer_app(server, SECRET.encode())


def surfaces(routes: list[Any]) -> set[str]:
    """Each route's ``METHOD path`` (``WS path`` for a WebSocket)."""
    found: set[str] = set()
    for context in iter_route_contexts(routes):
        route, path = context.original_route, context.path or "/"
        methods = getattr(route, "methods", None)
        if type(route).__name__.endswith("WebSocketRoute"):
            found.add(f"WS {path}")
        elif methods is None:
            # A mount serves a page (GET); the MCP route takes the transport's methods.
            found |= {f"{m} {path}" for m in (("GET",) if path == "/" else MCP_METHODS)}
        else:
            found |= {f"{m} {path}" for m in methods if m != "HEAD"}
    return found


def test_every_route_has_a_row() -> None:
    """A route of the desk or of ``roomkit mcp --http`` that is in no list fails here."""
    routes = [*desk_world().app.routes, *mcp_app().routes]
    assert surfaces(routes) == set(MATRIX) | PUBLIC | OTHER_PROOF


async def credential(kind: str, handler: HumanInputHandler, request_id: str) -> str | None:
    """A credential of ``kind``, with what the handler's ledger must hold for it recorded."""
    ledger = handler.ledger
    if kind == "none":
        return None
    if kind == "actor":
        return issue_token(SECRET, "alice")
    if kind == "admin":
        return issue_token(SECRET, "root", admin=True)
    if kind in ("answer link", "spent link"):
        link = issue_answer_link(SECRET, request_id, "alice", 600)
        if kind == "spent link":
            claims = token_claims(SECRET, link)
            await ledger.spend_once(link_entry(claims["jti"]), until=float(claims["exp"]))
        return link
    if kind in ("sign-in link", "spent sign-in"):
        link = issue_sign_in_link(SECRET, "admin", admin=True)
        if kind == "spent sign-in":
            claims = token_claims(SECRET, link)
            await ledger.spend_once(link_entry(claims["jti"]), until=float(claims["exp"]))
        return link
    if kind == "expired":
        return issue_token(SECRET, "alice", ttl=60, now=time.time() - 3600)
    if kind == "revoked token":
        token = issue_token(SECRET, "alice")
        await ledger.record_spent(token_entry(token_claims(SECRET, token)["jti"]), until=None)
        return token
    if kind == "revoked actor":
        token = issue_token(SECRET, "mallory", admin=True)
        await ledger.record_spent(actor_entry("mallory"), until=None)
        return token
    if kind == "other desk":
        return issue_token(OTHER_SECRET, "alice", admin=True)
    assert kind == "malformed"
    return "not-a-token"


def headers_of(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


BODIES = {
    "/answer": {"answer": "blue"},
    "/reject": {"reason": "no"},
    "/messages": {"text": "hello"},
    "/subscriptions": {"endpoint": "https://push.example.net/p/1"},
}
"""The body each surface that takes one is sent, by the end of its path."""


async def desk_statuses(surface: str) -> tuple[int, ...]:
    """The status ``surface`` of a desk answers each credential of :data:`KINDS`, each on a
    request of its own."""
    world = desk_world()
    await world.room("room", "alice", "bob")
    method, _, path = surface.partition(" ")
    if method == "WS":
        async with serve(world.app) as base:
            return tuple([await socket_status(world, base, kind) for kind in KINDS])
    body = next((b for end, b in BODIES.items() if path.endswith(end)), None)
    transport = httpx.ASGITransport(app=world.app, client=("203.0.113.9", 40000))
    statuses: list[int] = []
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        for kind in KINDS:
            request_id = await world.ask(actor_id="alice")
            token = await credential(kind, world.handler, request_id)
            reply = await client.request(
                method,
                path.format(request_id=request_id, room_id="room", grant_id="g-none"),
                json=body if method != "GET" else None,
                headers=headers_of(token),
            )
            statuses.append(reply.status_code)
    return tuple(statuses)


async def socket_status(world: World, base: str, kind: str) -> int:
    """The status the desk's WebSocket at ``base`` answers a credential of ``kind``."""
    request_id = await world.ask(actor_id="alice")
    token = await credential(kind, world.handler, request_id)
    async with connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "auth", "token": token}))
        try:
            frame = json.loads(await ws.recv())
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd is not None else 0
            return {1008: 401}.get(code, code)
    assert frame["type"] == "snapshot"
    return 200


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "matrix", "version": "1"},
    },
}


async def mcp_statuses(surface: str) -> tuple[int, ...]:
    """The status ``roomkit mcp --http``'s app answers each credential of :data:`KINDS`."""
    handler = HumanInputHandler()
    method = surface.partition(" ")[0]
    statuses: list[int] = []
    async with serve(mcp_app(handler), lifespan="on") as base, httpx.AsyncClient() as http:  # type: ignore[arg-type]
        for kind in KINDS:
            token = await credential(kind, handler, "some-request")
            reply = await http.request(
                method,
                f"{base}/mcp",
                json=INITIALIZE if method == "POST" else None,
                headers={
                    **headers_of(token),
                    "Accept": "application/json, text/event-stream",
                    "mcp-protocol-version": "2025-11-25",
                },
            )
            statuses.append(reply.status_code)
    return tuple(statuses)


@pytest.mark.parametrize("surface", sorted(MATRIX))
async def test_each_credential_gets_its_status_on_each_surface(surface: str) -> None:
    statuses_of: Callable[[str], Awaitable[tuple[int, ...]]] = (
        mcp_statuses if surface.endswith(" /mcp") else desk_statuses
    )
    observed = await statuses_of(surface)
    assert dict(zip(KINDS, observed, strict=True)) == dict(zip(KINDS, MATRIX[surface], strict=True))
