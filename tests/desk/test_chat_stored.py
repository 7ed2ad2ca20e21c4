"""The chat's 202 means the message is in the room's history; a message the room store could
not take gets a 503 and reaches no one."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from desk_harness import ROOMY, SECRET, bearer
from tests.failing_model import Down

from roomkit import RoomKit
from roomkit.channels.ai import AIChannel
from roomkit.core.failed_turns import TURN_FAILED
from roomkit.core.store import turn_journal
from roomkit.desk import create_desk_app
from roomkit.models.room import RoomEvent, TextContent
from roomkit.stores.sqlite import SQLiteRoomStore
from roomkit.tools.human_input import HumanInputHandler


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another connection holds the file's write lock (as a busy process would)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            db.execute("ROLLBACK")


@pytest.fixture
async def chat(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Path]]:
    path = tmp_path / "rooms.db"
    store = SQLiteRoomStore(path, busy_timeout=0)
    kit = RoomKit(store=store)
    app = create_desk_app(
        kit, handler=HumanInputHandler(), secret=SECRET, limits=ROOMY, chat_channel_id="chat"
    )
    await kit.create_room("room")
    await kit.add_participant("room", "alice")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        yield client, path
    await store.close()


async def history(client: httpx.AsyncClient) -> list[str]:
    reply = await client.get("/api/rooms/room/messages", headers=bearer("alice"))
    return [message["body"] for message in reply.json()["messages"]]


async def test_a_message_the_store_cannot_take_gets_a_503(
    chat: tuple[httpx.AsyncClient, Path],
) -> None:
    client, path = chat
    url, alice = "/api/rooms/room/messages", bearer("alice")
    first = await client.post(url, json={"text": "first"}, headers=alice)
    with write_locked(path):
        refused = await client.post(url, json={"text": "lost?"}, headers=alice)
    after = await client.post(url, json={"text": "again"}, headers=alice)
    assert first.status_code == 202
    assert (refused.status_code, refused.json()["detail"]) == (
        503,
        "The message could not be stored: try again",
    )
    assert after.status_code == 202
    assert await history(client) == ["first", "again"]


async def test_a_202_comes_once_the_message_is_in_the_history(
    chat: tuple[httpx.AsyncClient, Path],
) -> None:
    client, path = chat
    accepted = await client.post(
        "/api/rooms/room/messages", json={"text": "hello"}, headers=bearer("alice")
    )
    with closing(sqlite3.connect(path)) as db:
        stored = [row[0] for row in db.execute("SELECT room_id FROM roomkit_events")]
    assert accepted.status_code == 202
    assert len(stored) == 1
    assert await history(client) == ["hello"]


async def test_a_failed_turn_ends_says_so_and_is_not_run_again_on_restart(
    tmp_path: Path,
) -> None:
    """As the AG-UI and A2A doors do: the room hears to send it again; no restart re-runs it."""
    store = SQLiteRoomStore(tmp_path / "rooms.db")
    kit = RoomKit(store=store)
    model = Down()
    kit.register_channel(AIChannel("agent", provider=model))
    app = create_desk_app(
        kit, handler=HumanInputHandler(), secret=SECRET, limits=ROOMY, chat_channel_id="chat"
    )
    await kit.create_room("room")
    await kit.add_participant("room", "alice")
    await kit.attach_channel("room", "agent")
    published: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    hub = app.state.desk_hub
    original = hub.publish_room_message

    async def spy(room_id: str, message: dict[str, Any]) -> None:
        await published.put(message)
        await original(room_id, message)

    hub.publish_room_message = spy
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
            accepted = await client.post(
                "/api/rooms/room/messages", json={"text": "hi"}, headers=bearer("alice")
            )
            assert accepted.status_code == 202
            async with asyncio.timeout(10):
                # The person's own message, and what the room is told of its turn, in any order.
                own, told = sorted(
                    [await published.get(), await published.get()], key=lambda m: "failed" in m
                )
        assert own["id"] == accepted.json()["id"]
        assert told["failed"] == own["id"]
        assert told["body"] == (
            "The message of alice was recorded but not answered: its turn failed "
            "(RuntimeError); send it again as a new message"
        )
        journal = turn_journal(store)
        assert journal is not None
        assert await journal.open_turns() == []
        assert model.calls == 1
        assert await kit.resume_pending() == []
        assert model.calls == 1
    finally:
        await kit.close()
        await store.close()


async def test_the_history_leaves_out_a_failed_turns_ending_and_keeps_a_persons_message(
    chat: tuple[httpx.AsyncClient, Path], tmp_path: Path
) -> None:
    store = SQLiteRoomStore(tmp_path / "rooms.db")
    marker = {"what": "AG-UI message m0", "error": "RuntimeError", "sender": "alice"}
    await store.add_event(
        RoomEvent(
            "room", "agent", "agent", TextContent("It failed."), metadata={TURN_FAILED: marker}
        )
    )
    # A person's own metadata may hold the same key: their message is still shown.
    await store.add_event(
        RoomEvent("room", "chat", "alice", TextContent("Hello"), metadata={TURN_FAILED: marker})
    )
    await store.close()

    assert await history(chat[0]) == ["Hello"]
