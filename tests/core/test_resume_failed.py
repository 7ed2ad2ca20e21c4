"""A turn ``resume_pending()`` re-drives and that fails ends failed, as a turn that fails
where it started does: the journal ends it with an event recording the failure, in the write
that ends it, so no later ``resume_pending()`` runs it again and followers of the room in
other processes read the failure. On every durable room store."""

from __future__ import annotations

from tests.core.conftest import OpenRooms

from roomkit import RoomKit
from roomkit.channels.ai import AIChannel
from roomkit.core.failed_turns import MESSAGE_NAME, FailedTurn, failed_turn
from roomkit.core.store import OpenTurn, turn_journal
from roomkit.models.room import Room, RoomEvent, TextContent
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse


class Down(AIProvider):
    """A model that raises on every call, counting them."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def model_name(self) -> str:
        return "down"

    async def generate(self, context: AIContext) -> AIResponse:
        self.calls += 1
        raise RuntimeError("model down")


async def test_a_resumed_turn_that_fails_ends_failed(open_rooms: OpenRooms) -> None:
    message = RoomEvent("r1", "ws", "alice", TextContent("hi"))
    async with open_rooms() as store:  # type: ignore[attr-defined]
        await store.create_room(Room("r1"))
        await store.record_inbound(
            message, [OpenTurn("t1", "r1", "ai", "alice", {"message_id": message.id})]
        )
    model = Down()
    kit = RoomKit(store=open_rooms())
    kit.register_channel(AIChannel("ai", provider=model))
    try:
        assert await kit.resume_pending() == []
        journal = turn_journal(kit.store)
        assert journal is not None
        assert await journal.open_turns() == []
        events = await kit.store.list_events("r1")
        # A later start owes nothing: the model is not called again.
        assert await kit.resume_pending() == []
    finally:
        await kit.close()
    assert model.calls == 1
    [stored, ending] = events
    assert stored.content.body == "hi"
    assert (ending.channel_id, ending.sender_id) == ("ai", "ai")
    assert failed_turn(ending) == FailedTurn(
        f"message {stored.id} of room r1", "RuntimeError", "alice", ending.content.body
    )


async def test_a_resumed_turn_fails_under_the_name_its_door_gave(open_rooms: OpenRooms) -> None:
    """The name a door recorded with the turn's message names the failure, as the door
    names a failure where the turn started."""
    name = "A2A message of task t9"
    message = RoomEvent("r1", "a2a", "alice", TextContent("hi"), metadata={MESSAGE_NAME: name})
    state = {"message_id": message.id, MESSAGE_NAME: name}
    async with open_rooms() as store:  # type: ignore[attr-defined]
        await store.create_room(Room("r1"))
        await store.record_inbound(message, [OpenTurn("t1", "r1", "ai", "alice", state)])
    kit = RoomKit(store=open_rooms())
    kit.register_channel(AIChannel("ai", provider=Down()))
    try:
        assert await kit.resume_pending() == []
        [_, ending] = await kit.store.list_events("r1")
    finally:
        await kit.close()
    assert failed_turn(ending) == FailedTurn(
        name,
        "RuntimeError",
        "alice",
        f"{name} was recorded but not handled: its turn failed (RuntimeError); "
        "send it again as a new message",
    )
