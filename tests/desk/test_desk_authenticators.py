"""An authenticator of the application's own: what the desk does with the principals it
returns, good and unusable."""

from __future__ import annotations

import json
import logging

import pytest
from desk_harness import World, serve, ws_url
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from roomkit.desk import Principal

SURROGATE = "\ud800"
"""A lone surrogate: a ``str`` that UTF-8 cannot encode, so no response or store can hold it."""


class Returns:
    """An authenticator that says every token speaks for ``principal``."""

    def __init__(self, principal: object) -> None:
        self.principal = principal

    async def authenticate(self, token: str) -> Principal:
        return self.principal  # type: ignore[return-value]


@pytest.mark.parametrize(
    "principal",
    [
        Principal(SURROGATE),
        Principal(f"alice{SURROGATE}", admin=True),
        Principal("alice", request_id=SURROGATE, link_id="n1"),
        Principal(""),
    ],
    ids=["actor", "admin-actor", "link-request", "empty-actor"],
)
async def test_an_actor_id_that_is_not_text_is_refused_with_401(
    principal: Principal, caplog: pytest.LogCaptureFixture
) -> None:
    world = World(auth=Returns(principal))
    pending_id = await world.ask(actor_id=None)
    with caplog.at_level(logging.WARNING, logger="roomkit.desk"):
        async with world.client() as client:
            headers = {"Authorization": "Bearer anything"}
            me = await client.get("/api/me", headers=headers)
            answer = await client.post(
                f"/api/requests/{pending_id}/answer", json={"answer": "x"}, headers=headers
            )
    assert (me.status_code, answer.status_code) == (401, 401)
    assert "not valid text" in me.json()["detail"] or "empty" in me.json()["detail"]
    assert any("authenticator returned" in record.getMessage() for record in caplog.records)
    assert (await world.handler.get_request(pending_id)).status.value == "pending"  # type: ignore[union-attr]


async def test_the_socket_refuses_an_actor_id_that_is_not_text() -> None:
    world = World(auth=Returns(Principal(SURROGATE, admin=True)))
    await world.ask()
    async with serve(world.app) as base, connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "auth", "token": "anything"}))
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert "not valid text" in closed.value.rcvd.reason
