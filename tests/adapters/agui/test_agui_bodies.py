"""The AG-UI endpoint admits a run's caller before it reads a byte of the run's body."""

from __future__ import annotations

import pytest
from agui_front import SECRET, Front, ask, bearer
from fastapi import FastAPI
from tests.streamed_body import StreamedBody

from roomkit.adapters.agui import agui_router

NOT_JSON = b"{not json"


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token", f"Bearer {'x' * 40}.y"])
async def test_a_caller_without_a_valid_token_is_refused_before_the_body_is_parsed(
    front: Front, authorization: str | None
) -> None:
    """Not JSON at all, yet the answer is the token's 401, not a 400 about the body."""
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    async with front.client() as client:
        reply = await client.post("/agui", content=NOT_JSON, headers=headers)
    assert reply.status_code == 401, reply.text
    assert "body" not in reply.json()["detail"].lower()
    assert reply.headers["www-authenticate"] == "Bearer"


async def test_a_caller_without_a_valid_token_is_refused_without_the_body_being_read(
    front: Front,
) -> None:
    """A body far over the cap, streamed: not one chunk of it is taken before the 401."""
    body = StreamedBody()

    headers = {"content-type": "application/json", "authorization": "Bearer not-a-token"}
    async with front.client() as client:
        refused = await client.post("/agui", content=body.chunks(), headers=headers)
        assert (refused.status_code, body.taken) == (401, [])
        # With a valid token the same body is read, up to the cap, and refused for its size.
        headers["authorization"] = bearer("alice")["Authorization"]
        too_big = await client.post("/agui", content=body.chunks(), headers=headers)
    assert too_big.status_code == 413
    assert body.taken


async def test_a_caller_past_the_rate_limit_is_refused_before_the_body_is_parsed() -> None:
    """The bucket is spent once per request, and an empty one answers 429 before the body."""
    front = Front([ask()])
    front.app = FastAPI()
    front.app.include_router(
        agui_router(
            front.kit, agent="ai", handler=front.handler, secret=SECRET, rate=0.001, burst=1
        )
    )
    headers = {**bearer("alice"), "content-type": "application/json"}
    try:
        async with front.client() as client:
            first = await client.post("/agui", content=NOT_JSON, headers=headers)
            second = await client.post("/agui", content=NOT_JSON, headers=headers)
    finally:
        await front.close()
    assert first.status_code == 400, first.text
    assert second.status_code == 429, second.text
    assert "Retry-After" in second.headers


@pytest.mark.parametrize(("method", "path"), [("POST", "/agui/capabilities"), ("PUT", "/agui")])
async def test_a_method_a_route_does_not_take_is_a_405_without_the_body_being_read(
    front: Front, method: str, path: str
) -> None:
    """A body sent with a method the route does not take is not read: 405, not a 400."""
    body = StreamedBody()

    headers = {"content-type": "application/json"}
    async with front.client() as client:
        reply = await client.request(method, path, content=body.chunks(), headers=headers)
    assert (reply.status_code, body.taken) == (405, []), reply.text
