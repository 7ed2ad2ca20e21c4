"""A2AGate in front of the SDK's JSON-RPC routes: every refusal is a JSON-RPC error object,
which the SDK's own JSON-RPC client reads; the REST routes and the card keep their shape."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from a2a.client.errors import A2AClientError
from a2a.types import TaskState
from a2a.utils.errors import InvalidRequestError
from a2a_world import BASE, SECRET, World, ask
from starlette.middleware.cors import CORSMiddleware
from tests.streamed_body import StreamedBody

from roomkit.adapters.a2a import A2AGate
from roomkit.auth.gate import MISSING
from roomkit.desk.auth import token_entry
from roomkit.desk.tokens import issue_token, token_claims
from roomkit.providers.ai.base import AIResponse

SEND = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "SendMessage",
    "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}},
}
HEADERS = {"A2A-Version": "1.0"}


def raw(world: World, token: str | None) -> httpx.AsyncClient:
    headers = dict(HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    transport = httpx.ASGITransport(app=world.app)
    return httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers)


async def revoked() -> tuple[World, str]:
    world = World([AIResponse(content="Never.")])
    token = issue_token(SECRET, "alice")
    await world.handler.ledger.record_spent(
        token_entry(token_claims(SECRET, token)["jti"]), until=None
    )
    return world, token


def rpc_error(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC error of ``response``, checked to be one."""
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"jsonrpc", "id", "error"}
    assert body["jsonrpc"] == "2.0"
    assert isinstance(body["error"]["code"], int)
    assert isinstance(body["error"]["message"], str)
    return dict(body)


@pytest.mark.parametrize("token", [None, "not-a-token", "revoked"])
async def test_a_refused_caller_gets_a_json_rpc_error_with_its_challenge(
    token: str | None,
) -> None:
    """No token, a bad one or a revoked one: a 401 keeping its ``WWW-Authenticate``,
    whose body is a JSON-RPC error with a null id (the body is not read); nothing runs."""
    world = World([AIResponse(content="Never.")])
    if token == "revoked":
        world, token = await revoked()
    async with raw(world, token) as http:
        response = await http.post("/rpc", json=SEND)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="roomkit"'
    body = rpc_error(response)
    assert body["id"] is None
    assert body["error"]["code"] == -32000
    assert body["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
    if token is None:
        assert body["error"]["message"] == MISSING
    assert world.provider.calls == []
    assert await world.handler.list_pending() == []


async def test_the_sdks_json_rpc_client_reads_the_refusal() -> None:
    """The SDK's JSON-RPC client, without a token: its error holds the 401 whose body is a
    JSON-RPC error, with a null id since the request was not read."""
    world = World([AIResponse(content="Never.")])
    async with world.http(actor=None) as http:
        with pytest.raises(A2AClientError, match="401") as caught:
            await world.send(http, text="Hi", binding="JSONRPC")
    cause = caught.value.__cause__
    assert isinstance(cause, httpx.HTTPStatusError)
    body = rpc_error(cause.response)
    assert body["id"] is None
    assert body["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
    assert world.provider.calls == []


@pytest.mark.parametrize("path", ["/rpc", "/message:send"])
async def test_a_refused_caller_is_answered_without_its_body_being_read(path: str) -> None:
    """A body far over the cap, streamed with a bad token, on the JSON-RPC route and a REST
    one: not one chunk of it is taken before the 401."""
    world = World([AIResponse(content="Never.")])
    body = StreamedBody()

    headers = {"content-type": "application/json"}
    async with raw(world, "not-a-token") as http:
        response = await http.post(path, content=body.chunks(), headers=headers)
    assert response.status_code == 401
    assert body.taken == []
    assert world.provider.calls == []


async def test_an_unreadable_request_is_refused_with_a_null_id() -> None:
    """A refused caller whose body is no JSON-RPC request: the id is null."""
    world = World([AIResponse(content="Never.")])
    async with raw(world, None) as http:
        garbage = await http.post("/rpc", content=b"{not json", headers=HEADERS)
        flag = await http.post("/rpc", json={**SEND, "id": True})
    for response in (garbage, flag):
        assert response.status_code == 401
        assert rpc_error(response)["id"] is None


async def test_a_body_over_the_limit_is_an_invalid_request_the_sdk_client_raises() -> None:
    """A person's message over 256 KiB through the SDK's JSON-RPC client: refused before
    the SDK reads it, as the SDK refuses a body (HTTP 200, -32600), which the client raises
    as the SDK's own error; nothing reaches the model."""
    world = World([AIResponse(content="Never.")])
    async with world.http() as http:
        with pytest.raises(InvalidRequestError, match="limit"):
            await world.send(http, text="x" * 300_000, binding="JSONRPC")
    assert world.provider.calls == []


async def test_a_body_nested_too_deep_is_a_parse_error() -> None:
    world = World([AIResponse(content="Never.")])
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]
    async with raw(world, issue_token(SECRET, "alice")) as http:
        response = await http.post("/rpc", json={**SEND, "params": deep})
    assert response.status_code == 200
    body = rpc_error(response)
    assert (body["id"], body["error"]["code"]) == (None, -32700)
    assert world.provider.calls == []


async def test_a_refused_body_names_no_id() -> None:
    """An admitted caller's body refused for its size or as no JSON: checked before the SDK
    parses it, so its JSON-RPC error names no id, as the how-to's table has it."""
    world = World([AIResponse(content="Never.")])
    async with raw(world, issue_token(SECRET, "alice")) as http:
        too_big = await http.post("/rpc", json={**SEND, "params": {"x": "x" * 300_000}})
        garbage = await http.post("/rpc", content=b"{not json", headers=HEADERS)
    errors = [
        (r.status_code, rpc_error(r)["id"], rpc_error(r)["error"]["code"])
        for r in (too_big, garbage)
    ]
    assert errors == [(200, None, -32600), (200, None, -32700)]
    assert world.provider.calls == []


async def test_an_admitted_caller_is_served_over_json_rpc() -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    async with world.http() as http:
        task = await world.send(http, text="Paint it", binding="JSONRPC")
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        done = await world.send(http, text="blue", task=task, binding="JSONRPC")
    assert done.status.state == TaskState.TASK_STATE_COMPLETED


async def test_the_rest_routes_and_the_card_keep_their_shape() -> None:
    """Beside the JSON-RPC route: a REST refusal stays text (a credential) or
    ``{"detail"}`` (a body), and the card is served to anyone."""
    world = World([AIResponse(content="Never.")])
    async with raw(world, None) as http:
        refused = await http.post("/message:send", json={})
        card = await http.get("/.well-known/agent-card.json")
    async with raw(world, issue_token(SECRET, "alice")) as http:
        too_big = await http.post("/message:send", json={"x": "x" * 300_000})
    assert refused.status_code == 401
    assert refused.headers["content-type"].startswith("text/plain")
    assert refused.headers["www-authenticate"] == 'Bearer realm="roomkit"'
    assert card.status_code == 200
    assert card.json()["name"] == "roomkit agent"
    assert too_big.status_code == 413
    assert set(too_big.json()) == {"detail"}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/.well-known/message:send"),
        ("GET", "/.well-known/tasks"),
        ("GET", "/.well-known/extendedAgentCard"),
    ],
)
async def test_the_sdks_routes_under_the_cards_folder_still_want_a_token(
    method: str, path: str
) -> None:
    """The SDK's ``/{tenant}`` routes take ``.well-known`` as a tenant: only the card's own
    route is served to anyone, so no task is made, or listed, without a token."""
    world = World([AIResponse(content="Never.")])
    body = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}}
    async with raw(world, None) as http:
        response = await http.request(method, path, json=body if method == "POST" else None)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="roomkit"'
    assert world.provider.calls == []


async def test_an_app_wrapped_in_middleware_is_gated_by_the_routes_it_wraps() -> None:
    """``CORSMiddleware(app)`` has no routes of its own: every path under ``/.well-known/``
    was served without a token, and the SDK made a task for a caller nobody knew."""
    world = World([AIResponse(content="Never.")])
    wrapped = A2AGate(
        CORSMiddleware(world.app.routes, allow_origins=["*"]),
        handler=world.handler,
        secret=SECRET,
    )
    body = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=wrapped), base_url=BASE) as http:
        sent = await http.post("/.well-known/message:send", json=body, headers=HEADERS)
        card = await http.get("/.well-known/agent-card.json")
    assert sent.status_code == 401
    assert sent.headers["www-authenticate"] == 'Bearer realm="roomkit"'
    assert card.status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/rpc", "POST"),
        ("DELETE", "/rpc", "POST"),
        ("PATCH", "/message:send", "POST"),
        ("PUT", "/message:stream", "POST"),
        ("POST", "/tasks", "GET, HEAD"),
        ("DELETE", "/extendedAgentCard", "GET, HEAD"),
        ("PUT", "/acme/message:send", "POST"),
        ("PUT", "/acme/tasks/t1:subscribe", "GET, HEAD, POST"),
        ("POST", "/acme/tasks/t1/pushNotificationConfigs/p1", "DELETE, GET, HEAD"),
    ],
)
async def test_a_method_a_route_does_not_take_is_a_405_without_the_body_being_read(
    method: str, path: str, allow: str
) -> None:
    """An admitted caller sending a body with a method its route does not take, on the
    JSON-RPC route or a REST one: a 405 naming every method the path takes, and not one
    chunk of the body taken."""
    world = World([AIResponse(content="Never.")])
    body = StreamedBody()

    headers = {"content-type": "application/json"}
    async with raw(world, issue_token(SECRET, "alice")) as http:
        response = await http.request(method, path, content=body.chunks(), headers=headers)
    assert (response.status_code, body.taken) == (405, []), response.text
    assert response.headers["allow"] == allow
    assert world.provider.calls == []


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/acme/tasks/t1:cancel", "POST"),
        ("HEAD", "/acme/tasks/t1:cancel", "POST"),
        ("GET", "/tasks/t1:cancel", "POST"),
        ("DELETE", "/acme/tasks/t1:cancel", "POST"),
        ("DELETE", "/tasks/t1", "GET, HEAD"),
        ("PUT", "/tasks/t1/pushNotificationConfigs", "GET, HEAD, POST"),
        ("POST", "/tasks/t1/pushNotificationConfigs/p1", "DELETE, GET, HEAD"),
        ("GET", "/acme/message:send", "POST"),
    ],
)
async def test_a_method_a_path_does_not_take_is_a_405_where_the_router_says_404(
    method: str, path: str, allow: str
) -> None:
    """Through the SDK's ``/{tenant}`` mount and beside it, a path whose route does not
    take the method is a 405 naming the methods it takes, never the SDK's 404: neither a
    ``GET /tasks/{id}`` reading ``t1:cancel`` as a task id nor the mount taking ``/tasks``
    as a tenant."""
    world = World([AIResponse(content="Never.")])
    async with raw(world, issue_token(SECRET, "alice")) as http:
        response = await http.request(method, path)
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow


async def test_a_task_is_still_read_by_its_id() -> None:
    """The routes a path is named by still take their own methods: the task's ``GET``."""
    world = World([ask(), AIResponse(content="Blue it is.")])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        read = await http.get(f"/tasks/{task.id}", headers=HEADERS)
        unknown = await http.get("/tasks/t1", headers=HEADERS)
    assert read.status_code == 200, read.text
    assert read.json()["id"] == task.id
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
@pytest.mark.parametrize("path", ["/rpc", "/message:send"])
async def test_a_body_labelled_a_form_is_checked_as_json(path: str, content_type: str) -> None:
    """The SDK reads every body as JSON whatever its ``Content-Type``: one labelled a form
    is checked as JSON all the same, so a body nested too deep or holding a number too long
    is refused before the SDK parses it, as a JSON-labelled one is."""
    world = World([AIResponse(content="Never.")])
    deep = b"[" * 5_000 + b"]" * 5_000
    long_number = b'{"jsonrpc": "2.0", "id": ' + b"9" * 5_000 + b"}"
    headers = {"content-type": content_type}
    async with raw(world, issue_token(SECRET, "alice")) as http:
        refused = [
            await http.post(path, content=body, headers=headers) for body in (deep, long_number)
        ]
    for response in refused:
        if path == "/rpc":
            assert response.status_code == 200
            assert rpc_error(response)["error"]["code"] == -32700
        else:
            assert response.status_code == 400
        assert "at most" in response.text
    assert world.provider.calls == []
