"""The desk's ``shown`` entries: an open request the HTTP API or the WebSocket gives a person
is in its history once per surface, beside the notifier's; on every store, chains whole."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from contextlib import closing
from typing import Any

import pytest
from desk_harness import World, bearer, next_frame, serve, socket_for
from tests.notify.recorder import Recorder
from tests.tools.human_input.durable.store_fixtures import HandlerFactory, chain_breaks
from tests.tools.human_input.stores.store_kit import PATIENCE

from roomkit.notify import Notifier
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail


async def world_on(handler: HumanInputHandler) -> World:
    world = World(handler=handler)
    await world.room("room", "alice", "bob")
    return world


async def shown(handler: HumanInputHandler, pending_id: str) -> list[tuple[str, str]]:
    """The request's ``shown`` entries, as (surface, actor), oldest first."""
    return [
        (entry["surface"], entry["actor"])
        for entry in await handler.history(pending_id)
        if entry["type"] == "shown"
    ]


async def get(world: World, path: str, actor: str, *, admin: bool = False) -> Any:
    async with world.client() as client:
        response = await client.get(path, headers=bearer(actor, admin=admin))
    assert response.status_code == 200, response.text
    return response.json()


async def test_two_viewers_on_two_desk_processes_make_one_desk_entry(
    make_handler: HandlerFactory,
) -> None:
    """Per surface, not per viewer: the first to see it is the entry's actor."""
    one, two = await world_on(make_handler()), await world_on(make_handler())
    room_wide = await one.ask(actor_id=None)
    bobs = await one.ask(actor_id="bob")

    listed = await get(one, "/api/requests", "alice")
    assert [view["id"] for view in listed["requests"]] == [room_wide]
    await get(two, "/api/requests", "bob")
    await get(two, f"/api/requests/{room_wide}", "bob")
    await get(one, f"/api/requests/{bobs}", "bob")

    assert await shown(one.handler, room_wide) == [("desk", "alice")]
    assert await shown(two.handler, bobs) == [("desk", "bob")]
    assert await chain_breaks(one.handler, [room_wide, bobs]) == dict.fromkeys([room_wide, bobs])


async def test_what_shows_nothing_new_records_nothing(make_handler: HandlerFactory) -> None:
    """An administrator's listing, ``/history`` and a settled request write no entry."""
    world = await world_on(make_handler())
    watched = await world.ask()
    answered = await world.ask()
    assert await world.handler.aresolve(answered, "red", by="alice")

    await get(world, "/api/requests", "root", admin=True)
    await get(world, f"/api/requests/{watched}", "root", admin=True)
    await get(world, f"/api/requests/{watched}/history", "alice")
    await get(world, f"/api/requests/{answered}", "alice")
    await get(world, "/api/history", "alice")

    assert await shown(world.handler, watched) == []
    assert await shown(world.handler, answered) == []
    await get(world, "/api/requests", "alice")
    assert await shown(world.handler, watched) == [("desk", "alice")]


async def test_the_websocket_records_its_snapshot_and_its_pushes_once(
    make_handler: HandlerFactory,
) -> None:
    world = await world_on(make_handler())
    early = await world.ask(actor_id=None)
    async with serve(world.app) as base:
        async with socket_for(base, "alice") as (ws, snapshot):
            assert [view["id"] for view in snapshot] == [early]
            late = await world.ask(actor_id=None)
            # Each frame is sent once the frames before it were recorded.
            assert (await next_frame(ws, "question_pending"))["request"]["id"] == late
            barrier = await world.ask(actor_id="alice")
            assert (await next_frame(ws, "question_pending"))["request"]["id"] == barrier
        async with socket_for(base, "bob") as (ws, snapshot):
            assert {view["id"] for view in snapshot} == {early, late}
            assert await world.handler.aresolve(early, "done", by="bob")
            await next_frame(ws, "question_settled")
        async with socket_for(base, "root", admin=True):
            pass
    await get(world, "/api/requests", "bob")

    assert await shown(world.handler, early) == [("websocket", "alice")]
    assert await shown(world.handler, late) == [("websocket", "alice"), ("desk", "bob")]
    made = [early, late, barrier]
    assert await chain_breaks(world.handler, made) == dict.fromkeys(made)


async def test_a_notifier_surface_writes_its_own_entry(make_handler: HandlerFactory) -> None:
    world = await world_on(make_handler())
    async with Notifier(world.handler, [Recorder()]) as notifier:
        asked = await world.ask()
        await notifier.wait_idle()
    await get(world, "/api/requests", "alice")

    assert await shown(world.handler, asked) == [("recorder", "alice"), ("desk", "alice")]
    assert await chain_breaks(world.handler, [asked]) == {asked: None}


async def test_a_failing_write_is_logged_and_the_page_still_answers(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The store refuses one request's entry: the listing answers, the others are recorded,
    and the refused one is recorded at the next showing once the store takes it."""
    path = tmp_path / "desk.db"
    async with SQLiteStore(path) as store:
        world = await world_on(HumanInputHandler(store=store))
        refused, kept = await world.ask(actor_id=None), await world.ask(actor_id=None)
        with closing(sqlite3.connect(path)) as db, db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_history "
                f"WHEN NEW.pending_id = '{refused}' BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        with caplog.at_level(logging.WARNING, logger="roomkit.tools.human_input"):
            listed = await get(world, "/api/requests", "alice")
        assert [view["id"] for view in listed["requests"]] == [refused, kept]
        assert [r.getMessage() for r in caplog.records if refused in r.getMessage()]
        assert await shown(world.handler, refused) == []
        assert await shown(world.handler, kept) == [("desk", "alice")]

        with closing(sqlite3.connect(path)) as db, db:
            db.execute("DROP TRIGGER refuse")
        await get(world, "/api/requests", "bob")
        assert await shown(world.handler, refused) == [("desk", "bob")]
        assert await chain_breaks(world.handler, [refused, kept]) == dict.fromkeys([refused, kept])


@pytest.mark.parametrize("hops", [1, 8], ids=["reading the marks", "writing"])
async def test_a_surface_cut_off_while_recording_still_gets_its_entry(
    tmp_path: Any, hops: int
) -> None:
    """The person saw the request: a cancelled recording (a socket closed mid-write, or
    while the marks are read) still writes its entry, once."""
    path = tmp_path / "desk.db"
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        asked = (await handler.create("AskUserQuestion", {"question": "Ship it?"})).pending_id
        trail = ShownTrail(handler)
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            # Another connection holds the write lock: the spend waits for it on its thread.
            other.execute("BEGIN IMMEDIATE")
            recording = asyncio.create_task(trail.record([asked], "websocket", "alice"))
            for _ in range(hops):  # the recording reaches its thread (the write waits on the lock)
                await asyncio.to_thread(lambda: None)
            recording.cancel()
            other.execute("COMMIT")
        async with asyncio.timeout(PATIENCE):
            await trail.idle()

        assert await shown(handler, asked) == [("websocket", "alice")]
        assert await ShownTrail(handler).record([asked], "websocket", "bob") == 0
        assert await shown(handler, asked) == [("websocket", "alice")]
        await handler.close()
