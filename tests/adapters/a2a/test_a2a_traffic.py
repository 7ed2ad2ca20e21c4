"""A2AGate's ``Host`` rule and rate limit, as the AG-UI endpoint's: a foreign ``Host`` is a
400 and a person over their rate a 429 with ``Retry-After``, each a JSON-RPC error on the
JSON-RPC route (which the SDK's client raises with the response) and ``text/plain`` on the
REST routes, refused before a byte of the body is read."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from a2a.client.errors import A2AClientError
from a2a.types import TaskState
from a2a_world import BASE, SECRET, World
from tests.streamed_body import StreamedBody

from roomkit.adapters.a2a import A2AGate
from roomkit.desk.tokens import issue_token
from roomkit.providers.ai.base import AIResponse

SEND = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "SendMessage",
    "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}},
}
EVIL = "rebound.example"


def gated(world: World, **options: Any) -> World:
    """``world`` with its routes behind a gate given ``options``."""
    world.app = A2AGate(world.app.routes, handler=world.handler, secret=SECRET, **options)
    return world


def raw(world: World, actor: str = "alice", host: str | None = None) -> httpx.AsyncClient:
    headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {issue_token(SECRET, actor)}"}
    if host is not None:
        headers["Host"] = host
    transport = httpx.ASGITransport(app=world.app)
    return httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers)


def rpc_error(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"jsonrpc", "id", "error"}
    assert body["id"] is None
    error: dict[str, Any] = body["error"]
    return error


@pytest.mark.parametrize("path", ["/rpc", "/message:send"])
async def test_a_foreign_host_is_a_400_before_the_body_is_read(path: str) -> None:
    """A valid token through a name the door does not answer to (a rebound DNS name): a
    400 saying to add the name to ``allowed_hosts``, not one chunk of the body taken."""
    world = World([AIResponse(content="Never.")])
    body = StreamedBody()
    headers = {"content-type": "application/json"}
    async with raw(world, host=EVIL) as http:
        response = await http.post(path, content=body.chunks(), headers=headers)
    assert (response.status_code, body.taken) == (400, [])
    if path == "/rpc":
        error = rpc_error(response)
        assert (error["code"], error["data"][0]["reason"]) == (-32000, "HOST_NOT_ALLOWED")
        message = error["message"]
    else:
        assert response.headers["content-type"].startswith("text/plain")
        message = response.text
    assert EVIL in message
    assert "allowed_hosts" in message
    assert world.provider.calls == []


async def test_the_card_is_refused_through_a_foreign_host_too() -> None:
    world = World([AIResponse(content="Never.")])
    async with raw(world, host=EVIL) as http:
        card = await http.get("/.well-known/agent-card.json")
    assert card.status_code == 400


async def test_a_name_in_allowed_hosts_is_served() -> None:
    """The name the door is reached by through a proxy, given in ``allowed_hosts``."""
    world = gated(World([AIResponse(content="Hello.")]), allowed_hosts=[EVIL])
    async with raw(world, host=EVIL) as http:
        task = await world.send(http, text="Hi", binding="JSONRPC")
        card = await http.get("/.well-known/agent-card.json")
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert card.status_code == 200


async def test_a_person_over_their_rate_is_a_429_another_is_served() -> None:
    """``burst`` requests at once, then a 429 with ``Retry-After`` (a JSON-RPC error on
    the JSON-RPC route, its body unread); another person's bucket is their own."""
    world = gated(World([AIResponse(content="Never.")]), rate=0.001, burst=2)
    body = StreamedBody()
    async with raw(world) as http:
        first = await http.get("/tasks")
        second = await http.get("/tasks")
        third = await http.post(
            "/rpc", content=body.chunks(), headers={"content-type": "application/json"}
        )
        fourth = await http.get("/tasks")
    async with raw(world, "bob") as http:
        bobs = await http.get("/tasks")
    assert [r.status_code for r in (first, second, third, fourth, bobs)] == [
        200,
        200,
        429,
        429,
        200,
    ]
    assert body.taken == []
    assert int(third.headers["retry-after"]) >= 1
    error = rpc_error(third)
    assert (error["code"], error["data"][0]["reason"]) == (-32000, "RATE_LIMIT_EXCEEDED")
    assert error["message"] == "Too many requests: slow down"
    assert fourth.headers["content-type"].startswith("text/plain")
    assert int(fourth.headers["retry-after"]) >= 1


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_sdks_client_raises_the_429(binding: str) -> None:
    """The SDK's client over either binding, past its rate: an ``A2AClientError`` naming
    the 429, whose cause holds the response and its ``Retry-After``."""
    world = gated(World([AIResponse(content="Hello.")]), rate=0.001, burst=1)
    async with raw(world) as http:
        task = await world.send(http, text="Hi", binding=binding)
        with pytest.raises(A2AClientError, match="429") as caught:
            await world.send(http, text="Again", binding=binding)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    cause = caught.value.__cause__
    assert isinstance(cause, httpx.HTTPStatusError)
    assert int(cause.response.headers["retry-after"]) >= 1
    assert len(world.provider.calls) == 1


@pytest.mark.parametrize(("option", "value"), [("rate", 0), ("burst", 0)])
def test_a_rate_or_burst_that_is_no_bound_is_refused_at_once(option: str, value: Any) -> None:
    world = World([])
    with pytest.raises(ValueError, match=f"^{option} is the requests a person may make"):
        gated(world, **{option: value})
