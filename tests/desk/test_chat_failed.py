"""A chat message whose turn failed reads as failed wherever the room's history is read: a
page that reloads, or a desk in another process on the same room store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from desk_harness import ROOMY, SECRET, bearer
from tests.adapters.door_peer import durable_place
from tests.core.room_stores import DURABLE, Place
from tests.failing_model import Down

from roomkit import RoomKit
from roomkit.channels.ai import AIChannel
from roomkit.core.failed_turns import MESSAGE_NAME, TURN_FAILED, failed_turn
from roomkit.core.store import InMemoryStore, RoomStore
from roomkit.desk import create_desk_app
from roomkit.models.room import RoomEvent, TextContent
from roomkit.tools.human_input import HumanInputHandler

MESSAGES = "/api/rooms/room/messages"


class Desk:
    """A desk process: its kit on a room store, its chat, and what its hub publishes."""

    def __init__(self, store: RoomStore, *, agents: int) -> None:
        self.kit = RoomKit(store=store)
        for number in range(agents):
            self.kit.register_channel(AIChannel(f"agent{number}", provider=Down()))
        self.app = create_desk_app(
            self.kit,
            handler=HumanInputHandler(),
            secret=SECRET,
            limits=ROOMY,
            chat_channel_id="chat",
        )
        self.published: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        hub = self.app.state.desk_hub
        original = hub.publish_room_message

        async def spy(room_id: str, message: dict[str, Any]) -> None:
            await self.published.put(message)
            await original(room_id, message)

        hub.publish_room_message = spy

    def client(self) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app)
        return httpx.AsyncClient(transport=transport, base_url="http://desk.test")

    async def history(self) -> list[dict[str, Any]]:
        async with self.client() as client:
            reply = await client.get(MESSAGES, headers=bearer("alice"))
        assert reply.status_code == 200
        messages: list[dict[str, Any]] = reply.json()["messages"]
        return messages

    async def failed_post(self, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Post ``text`` as alice; the message published, and the one telling its turn
        failed."""
        async with self.client() as client:
            accepted = await client.post(MESSAGES, json={"text": text}, headers=bearer("alice"))
        assert accepted.status_code == 202
        async with asyncio.timeout(10):
            own, told = sorted(
                [await self.published.get(), await self.published.get()],
                key=lambda message: "failed" in message,
            )
        assert own["id"] == accepted.json()["id"]
        return own, told


def ending(what: str) -> RoomEvent:
    """The agent's event that ended the failed turn of the message ``what`` sent by alice."""
    marker = {"what": what, "error": "RuntimeError", "sender": "alice"}
    told = f"{what} was recorded but not handled"
    return RoomEvent("room", "agent0", "agent0", TextContent(told), metadata={TURN_FAILED: marker})


@asynccontextmanager
async def first_desk(store: RoomStore, *, agents: int = 1) -> AsyncIterator[Desk]:
    """A desk on ``store`` with room ``room`` (alice on its roster, the agents attached)."""
    desk = Desk(store, agents=agents)
    await desk.kit.create_room("room")
    await desk.kit.add_participant("room", "alice")
    for number in range(agents):
        await desk.kit.attach_channel("room", f"agent{number}")
    try:
        yield desk
    finally:
        await desk.kit.close()


@pytest.fixture(params=["memory", *DURABLE])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RoomStore]:
    """The memory room store, then each durable one."""
    if request.param == "memory":
        yield InMemoryStore()
        return
    rooms = durable_place(request, tmp_path).rooms()
    await rooms.open()
    yield rooms
    await rooms.close()


@pytest.fixture(params=DURABLE)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """Where two desk processes keep the same rooms, on each durable store."""
    return durable_place(request, tmp_path)


async def test_a_reload_reads_the_failure_as_it_was_told_live(store: RoomStore) -> None:
    async with first_desk(store) as desk:
        own, told = await desk.failed_post("hi")
        # The turn has ended: the page was told once.
        assert desk.published.empty()
        messages = await desk.history()
    assert [message["id"] for message in messages] == [own["id"], f"{own['id']}-failed"]
    assert messages[0]["failed"] is None
    assert messages[1] == {**told, "created_at": messages[1]["created_at"]}


async def test_a_message_whose_turns_all_failed_is_told_failed_once(store: RoomStore) -> None:
    async with first_desk(store, agents=2) as desk:
        own, _ = await desk.failed_post("hi")
        messages = await desk.history()
    assert [message["failed"] for message in messages] == [None, own["id"]]
    assert desk.published.empty()


async def test_a_desk_in_another_process_reads_that_the_message_failed(place: Place) -> None:
    """Its failure names the message as the chat does, whichever process reads it."""
    here, there = place.rooms(), place.rooms()
    await here.open()
    await there.open()
    try:
        async with first_desk(here) as desk:
            own, told = await desk.failed_post("hi")
        elsewhere = Desk(there, agents=0)
        messages = await elsewhere.history()
        recorded = [failed_turn(event) for event in await there.recent_events("room", 10)]
    finally:
        await here.close()
        await there.close()
    assert [message["body"] for message in messages] == ["hi", told["body"]]
    assert messages[1]["failed"] == own["id"]
    assert [failure.what for failure in recorded if failure is not None] == [
        f"chat message {own['id']}"
    ]


async def test_a_failure_named_by_the_messages_place_shows_on_the_chat() -> None:
    """A chat message recorded before the chat named its messages fails by its place."""
    store = InMemoryStore()
    async with first_desk(store) as desk:
        sent = RoomEvent("room", "chat", "alice", TextContent("hi"), metadata={"message_id": "m1"})
        await store.add_event(sent)
        await store.add_event(ending(f"message {sent.id} of room room"))
        messages = await desk.history()
    assert [(message["id"], message["failed"]) for message in messages] == [
        ("m1", None),
        ("m1-failed", "m1"),
    ]


async def test_another_doors_failure_stays_with_its_caller() -> None:
    """The AG-UI door tells its caller; the chat shows the message, not its failure."""
    store = InMemoryStore()
    async with first_desk(store) as desk:
        name = {MESSAGE_NAME: "AG-UI message m0"}
        await store.add_event(RoomEvent("room", "agui", "alice", TextContent("hi"), metadata=name))
        await store.add_event(ending("AG-UI message m0"))
        messages = await desk.history()
    assert [message["body"] for message in messages] == ["hi"]
