"""Helpers for the desk tests: a kit with a desk, tokens, clients, a real server.

Everything runs on the test's own event loop: httpx talks to the app in-process through
``ASGITransport``, and :func:`serve` runs uvicorn as a task of the loop on a socket bound
beforehand (so the port is known and connections queue until it accepts).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from tests.servers.stores import StoreSite
from websockets.asyncio.client import ClientConnection, connect

from roomkit import RoomKit
from roomkit.desk import DeskLimits, create_desk_app, issue_token
from roomkit.tools.human_input import HumanInputHandler

SECRET = "desk-tests-secret-0123456789abcdef"
ROOMY = DeskLimits(rate=1_000_000.0, burst=1_000_000)
"""Limits that never rate-limit a test."""


def token(actor: str, *, admin: bool = False, ttl: float | None = None) -> str:
    """A desk token for ``actor`` signed with the tests' secret."""
    return issue_token(SECRET, actor, admin=admin, ttl=ttl)


def bearer(actor_or_token: str, *, admin: bool = False) -> dict[str, str]:
    """The Authorization header of ``actor``'s token (or of a token given as is)."""
    value = actor_or_token if "." in actor_or_token else token(actor_or_token, admin=admin)
    return {"Authorization": f"Bearer {value}"}


class World:
    """A kit, a handler, and a desk app over them."""

    def __init__(
        self,
        *,
        handler: HumanInputHandler | None = None,
        limits: DeskLimits = ROOMY,
        **options: Any,
    ) -> None:
        self.kit = RoomKit()
        self.handler = handler if handler is not None else HumanInputHandler()
        self.app: FastAPI = create_desk_app(
            self.kit, handler=self.handler, secret=SECRET, limits=limits, **options
        )

    async def room(self, room_id: str, *participants: str) -> str:
        """Create ``room_id`` with ``participants`` on its roster."""
        await self.kit.create_room(room_id)
        for participant in participants:
            await self.kit.add_participant(room_id, participant)
        return room_id

    async def ask(
        self,
        arguments: dict[str, Any] | None = None,
        *,
        room_id: str = "room",
        actor_id: str | None = "alice",
        tool_name: str = "AskUserQuestion",
        answer_schema: dict[str, Any] | None = None,
    ) -> str:
        """Open a request; returns its id."""
        request = await self.handler.create(
            tool_name,
            arguments if arguments is not None else {"question": "Which colour?"},
            room_id=room_id,
            actor_id=actor_id,
            channel_id="agent",
            answer_schema=answer_schema,
        )
        return request.pending_id

    def client(self) -> httpx.AsyncClient:
        """An httpx client talking to the app in-process."""
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://desk.test"
        )


@asynccontextmanager
async def world_on(kind: str, folder: Path, redis_url: str | None = None) -> AsyncIterator[World]:
    """A world whose handler keeps its requests on ``kind``: memory, sqlite or redis.

    Its room ``room`` has alice and bob. SQLite writes in ``folder``; Redis takes a prefix of
    the world's own on the server at ``redis_url``.
    """
    url = {"sqlite": f"sqlite:///{folder / 'desk.db'}", "redis": redis_url}.get(kind, "memory")
    assert url is not None, "a Redis world needs the server's URL"
    async with world_at(StoreSite(kind, url, f"desk{os.urandom(4).hex()}")) as world:
        yield world


@asynccontextmanager
async def world_at(site: StoreSite) -> AsyncIterator[World]:
    """A world whose handler keeps its requests on ``site`` (any store); its room ``room``
    has alice and bob."""
    store = site.open()
    world = World(handler=HumanInputHandler(store=store))
    await world.room("room", "alice", "bob")
    try:
        yield world
    finally:
        if store is not None:
            await store.close()


async def post_raw(
    client: httpx.AsyncClient, pending_id: str, verb: str, body: bytes, actor: str = "alice"
) -> httpx.Response:
    """Post ``body`` as it is (a JSON client would refuse to encode a lone surrogate)."""
    headers = {**bearer(actor), "Content-Type": "application/json"}
    return await client.post(f"/api/requests/{pending_id}/{verb}", content=body, headers=headers)


@asynccontextmanager
async def serve(app: FastAPI, **config: Any) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (a free port); yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    options: dict[str, Any] = {"log_config": None, "lifespan": "on", "ws_max_size": 64 * 1024}
    options.update(config)
    server = uvicorn.Server(uvicorn.Config(app, **options))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        try:
            await task
        finally:
            sock.close()  # also when the server failed: its socket is the test's


def ws_url(base: str) -> str:
    """The desk WebSocket's URL on a server at ``base``."""
    return base.replace("http://", "ws://") + "/api/ws"


@asynccontextmanager
async def socket_for(
    base: str, actor_or_token: str, *, admin: bool = False, origin: str | None = None
) -> AsyncIterator[tuple[ClientConnection, list[dict[str, Any]]]]:
    """A desk WebSocket authenticated as ``actor``; yields it and its snapshot."""
    value = actor_or_token if "." in actor_or_token else token(actor_or_token, admin=admin)
    async with connect(ws_url(base), origin=origin) as ws:  # type: ignore[arg-type]
        await ws.send(json.dumps({"type": "auth", "token": value}))
        snapshot = json.loads(await ws.recv())
        assert snapshot["type"] == "snapshot"
        yield ws, snapshot["requests"]


async def next_frame(ws: ClientConnection, kind: str | None = None) -> dict[str, Any]:
    """The next frame (of ``kind``, skipping others) from the desk."""
    while True:
        frame: dict[str, Any] = json.loads(await ws.recv())
        if kind is None or frame["type"] == kind:
            return frame
