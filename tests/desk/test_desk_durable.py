"""The desk on SQLite and Redis: its own handler on the agents' store, in- and out-of-process."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from desk_harness import World, bearer, next_frame, serve, socket_for, token, ws_url
from tests.tools.human_input.stores.redis_server import RedisServer
from websockets.asyncio.client import connect

from roomkit import HumanInputRejectedError
from roomkit.tools.human_input import HumanInputHandler

AGENT = Path(__file__).with_name("desk_agent.py")


class Shared:
    """One durable store, opened as many times as there are processes."""

    def __init__(self, kind: str, location: str, prefix: str) -> None:
        self.kind, self.location, self.prefix = kind, location, prefix
        self.opened: list[Any] = []

    def handler(self) -> HumanInputHandler:
        if self.kind == "sqlite":
            from roomkit.stores.sqlite import SQLiteStore

            store: Any = SQLiteStore(self.location, backstop_interval=0.02)
        else:
            from roomkit.stores.redis import RedisStore

            store = RedisStore(self.location, prefix=self.prefix, backstop_interval=0.05)
        self.opened.append(store)
        return HumanInputHandler(store=store)

    def agent_args(self, actor: str, count: int) -> list[str]:
        where = [self.location] if self.kind == "sqlite" else [self.location, self.prefix]
        return [self.kind, *where, actor, str(count)]


@pytest.fixture(params=["sqlite", "redis"])
async def shared(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Shared]:
    if request.param == "sqlite":
        store = Shared("sqlite", str(tmp_path / "desk.db"), "")
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        store = Shared("redis", server.url, f"desk{os.urandom(4).hex()}")
    yield store
    for opened in store.opened:
        await opened.close()


async def desk_world(shared: Shared) -> World:
    world = World(handler=shared.handler())
    await world.room("room", "alice", "bob")
    return world


async def test_the_desk_answers_what_another_handler_asked(shared: Shared) -> None:
    agent = shared.handler()
    world = await desk_world(shared)
    asked = await agent.create(
        "AskUserQuestion", {"question": "Go?"}, room_id="room", actor_id="alice"
    )
    waiter = asyncio.create_task(agent.wait(asked.pending_id, timeout=30))
    async with world.client() as client:
        listed = (await client.get("/api/requests", headers=bearer("alice"))).json()["requests"]
        hidden = (await client.get("/api/requests", headers=bearer("bob"))).json()["requests"]
        reply = await client.post(
            f"/api/requests/{asked.pending_id}/answer",
            json={"answer": "yes"},
            headers=bearer("alice"),
        )
        again = await client.post(
            f"/api/requests/{asked.pending_id}/reject", json={}, headers=bearer("alice")
        )
    assert [view["id"] for view in listed] == [asked.pending_id]
    assert hidden == []
    assert (reply.status_code, reply.json()["settled_by"]) == (200, "alice")
    assert again.status_code == 409
    assert await waiter == "yes"


async def test_a_schema_is_checked_by_the_desk_on_a_shared_store(shared: Shared) -> None:
    agent = shared.handler()
    world = await desk_world(shared)
    schema = {"type": "integer", "minimum": 1}
    asked = await agent.create(
        "Form", {"x": 1}, room_id="room", actor_id="alice", answer_schema=schema
    )
    async with world.client() as client:
        url = f"/api/requests/{asked.pending_id}/answer"
        refused = await client.post(url, json={"answer": 0}, headers=bearer("alice"))
        taken = await client.post(url, json={"answer": 3}, headers=bearer("alice"))
    assert refused.status_code == 422
    assert taken.status_code == 200
    assert await agent.wait(asked.pending_id, timeout=30) == "3"


async def test_the_socket_follows_another_handlers_requests(shared: Shared) -> None:
    agent = shared.handler()
    world = await desk_world(shared)
    before = await agent.create(
        "AskUserQuestion", {"question": "1?"}, room_id="room", actor_id="alice"
    )
    async with serve(world.app) as base, socket_for(base, "alice") as (ws, snapshot):
        assert [view["id"] for view in snapshot] == [before.pending_id]
        later = await agent.create(
            "AskUserQuestion", {"question": "2?"}, room_id="room", actor_id="alice"
        )
        pushed = await next_frame(ws, "question_pending")
        await agent.areject(before.pending_id, "changed my mind", by="agent")
        settled = await next_frame(ws, "question_settled")
    assert pushed["request"]["id"] == later.pending_id
    assert settled["request"]["id"] == before.pending_id
    assert (settled["request"]["reason"], settled["request"]["settled_by"]) == (
        "changed my mind",
        "agent",
    )


async def _agent(shared: Shared, actor: str, count: int) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(AGENT),
        *shared.agent_args(actor, count),
        stdout=asyncio.subprocess.PIPE,
    )


async def _line(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    line = await process.stdout.readline()
    assert line, "the agent process ended early"
    parsed: dict[str, Any] = json.loads(line)
    return parsed


async def test_a_desk_and_an_agent_in_different_processes(shared: Shared) -> None:
    world = await desk_world(shared)
    async with serve(world.app) as base, socket_for(base, "alice") as (ws, _):
        process = await _agent(shared, "alice", 3)
        try:
            ids = (await _line(process))["created"]
            pushed = {(await next_frame(ws, "question_pending"))["request"]["id"] for _ in ids}
            async with world.client() as client:
                listed = (await client.get("/api/requests", headers=bearer("alice"))).json()
                for pending_id, body in zip(
                    ids[:2], ({"answer": "north"}, {"answer": "south"}), strict=True
                ):
                    url = f"/api/requests/{pending_id}/answer"
                    assert (await client.post(url, json=body, headers=bearer("alice"))).is_success
                url = f"/api/requests/{ids[2]}/reject"
                assert (
                    await client.post(url, json={"reason": "no"}, headers=bearer("alice"))
                ).is_success
            outcomes = (await _line(process))["outcomes"]
            settled = {(await next_frame(ws, "question_settled"))["request"]["id"] for _ in ids}
        finally:
            if process.returncode is None:
                await process.wait()
    assert pushed == set(ids) == settled
    assert [view["id"] for view in listed["requests"]] == ids
    assert outcomes == {ids[0]: "north", ids[1]: "south", ids[2]: "rejected: no"}
    assert process.returncode == 0


async def test_a_rejection_from_the_desk_reaches_an_in_process_waiter(shared: Shared) -> None:
    agent = shared.handler()
    world = await desk_world(shared)
    asked = await agent.create("AskUserQuestion", {"question": "?"}, room_id="room", actor_id=None)
    async with world.client() as client:
        reply = await client.post(
            f"/api/requests/{asked.pending_id}/reject",
            json={"reason": "later"},
            headers=bearer("bob"),
        )
    assert reply.status_code == 200
    with pytest.raises(HumanInputRejectedError, match="later"):
        await agent.wait(asked.pending_id, timeout=30)


async def test_an_unreachable_store_reads_as_503_and_a_socket_is_told_to_retry(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from roomkit.stores.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "missing" / "desk.db")
    world = World(handler=HumanInputHandler(store=store))
    async with world.client() as client:
        listed = await client.get("/api/requests", headers=bearer("alice"))
        read = await client.get(f"/api/requests/{'a' * 32}", headers=bearer("alice"))
    # Without the lifespan, so that the start-up check (which refuses this store) stays out
    # of the way: what is tested is a desk whose store goes away while it serves.
    async with serve(world.app, lifespan="off") as base, connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "auth", "token": token("alice")}))
        with pytest.raises(websockets.ConnectionClosed):
            await ws.recv()
    await world.app.state.desk.aclose()
    await store.close()
    assert (listed.status_code, read.status_code) == (503, 503)
    assert "unavailable" in listed.json()["detail"]
    assert ws.close_code == 1013
    assert "could not reach the request store" in caplog.text
