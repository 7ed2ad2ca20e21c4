"""A question past its deadline shows as timed out everywhere the desk shows it, on the
store's clock, even when no agent waits on it any more."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from desk_harness import World, bearer, next_frame, serve, socket_for, token
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import FakeClock

from roomkit.cli import main
from roomkit.tools.human_input import HumanInputHandler


class Clocked:
    """Stores on one file or server that share a clock the test moves."""

    def __init__(self, kind: str, location: str) -> None:
        self.kind, self.location = kind, location
        self.prefix = f"overdue{os.urandom(4).hex()}"
        self.clock = FakeClock()
        self.opened: list[Any] = []

    def handler(self) -> HumanInputHandler:
        if self.kind == "sqlite":
            from roomkit.stores.sqlite import SQLiteStore

            store: Any = SQLiteStore(self.location, clock=self.clock)
        else:
            from roomkit.stores.redis import RedisStore

            store = RedisStore(self.location, prefix=self.prefix, clock=self.clock)
        self.opened.append(store)
        return HumanInputHandler(store=store)


@pytest.fixture(params=["sqlite", "redis"])
async def clocked(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Clocked]:
    if request.param == "sqlite":
        made = Clocked("sqlite", str(tmp_path / "desk.db"))
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        made = Clocked("redis", server.url)
    yield made
    for store in made.opened:
        await store.close()


async def abandoned_question(clocked: Clocked, timeout: float = 60) -> str:
    """A question with a deadline whose agent went away without waiting on it."""
    agent = clocked.handler()
    request = await agent.create(
        "AskUserQuestion", {"question": "Go?"}, room_id="room", actor_id="alice", timeout=timeout
    )
    await clocked.opened[-1].close()
    return request.pending_id


async def test_rest_shows_a_question_past_its_deadline_as_timed_out(clocked: Clocked) -> None:
    pending_id = await abandoned_question(clocked)
    world = World(handler=clocked.handler())
    async with world.client() as client:
        before = (await client.get("/api/requests", headers=bearer("alice"))).json()
        clocked.clock.advance(61)
        after = (await client.get("/api/requests", headers=bearer("alice"))).json()
        one = (await client.get(f"/api/requests/{pending_id}", headers=bearer("alice"))).json()
        answer = await client.post(
            f"/api/requests/{pending_id}/answer", json={"answer": "y"}, headers=bearer("alice")
        )
    assert [view["id"] for view in before["requests"]] == [pending_id]
    assert after["requests"] == []
    assert one["status"] == "timed_out"
    assert answer.status_code == 409
    assert answer.json()["detail"].startswith("Timed out")


async def test_the_socket_pushes_the_timeout_when_the_deadline_passes(clocked: Clocked) -> None:
    pending_id = await abandoned_question(clocked)
    world = World(handler=clocked.handler())
    async with serve(world.app) as base, socket_for(base, "alice") as (ws, snapshot):
        clocked.clock.advance(61)
        async with asyncio.timeout(20):
            settled = await next_frame(ws, "question_settled")
    assert [view["id"] for view in snapshot] == [pending_id]
    assert (settled["request"]["id"], settled["request"]["status"]) == (pending_id, "timed_out")


async def test_a_new_socket_does_not_see_a_question_past_its_deadline(clocked: Clocked) -> None:
    await abandoned_question(clocked)
    clocked.clock.advance(61)
    world = World(handler=clocked.handler())
    async with serve(world.app) as base, socket_for(base, "alice") as (_, snapshot):
        pass
    assert snapshot == []


async def test_pending_list_leaves_out_a_question_past_its_deadline(
    clocked: Clocked, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await abandoned_question(clocked)
    world = World(handler=clocked.handler())
    argv = ["pending", "list", "--token", token("alice")]
    async with serve(world.app) as base:
        assert await asyncio.to_thread(main, [*argv, "--url", base]) == 0
        before = capsys.readouterr().out
        clocked.clock.advance(61)
        assert await asyncio.to_thread(main, [*argv, "--url", base]) == 0
        after = capsys.readouterr().out
    assert pending_id in before
    assert after.strip() == "No open questions."


async def test_a_question_still_in_time_stays_open(clocked: Clocked) -> None:
    pending_id = await abandoned_question(clocked)
    world = World(handler=clocked.handler())
    clocked.clock.advance(59)
    async with world.client() as client:
        listed = (await client.get("/api/requests", headers=bearer("alice"))).json()
        answer = await client.post(
            f"/api/requests/{pending_id}/answer", json={"answer": "y"}, headers=bearer("alice")
        )
    assert [view["id"] for view in listed["requests"]] == [pending_id]
    assert answer.status_code == 200
