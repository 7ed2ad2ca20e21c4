"""A turn ``resume_pending()`` re-drives and that fails ends failed, as a turn that fails
where it started does: the journal ends it with an event recording the failure, in the write
that ends it, so no later ``resume_pending()`` runs it again and followers of the room in
other processes read the failure. On every durable room store."""

from __future__ import annotations

import pytest
from tests.core.conftest import OpenRooms
from tests.failing_model import Down

from roomkit import RoomKit
from roomkit.channels.ai import AIChannel
from roomkit.core.failed_turns import MESSAGE_NAME, FailedTurn, failed_turn
from roomkit.core.store import InMemoryStore, OpenTurn, RoomStore, turn_journal
from roomkit.models.room import InboundMessage, Room, RoomEvent, TextContent


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


# -- a turn that fails under process_inbound() --------------------------------------------------

_HI = InboundMessage("ws", "alice", TextContent("hi"))


async def _failing_kit(store: RoomStore, *channels: str) -> tuple[RoomKit, list[Down]]:
    """A kit on ``store`` with room ``r1``, its AI channels ``channels`` each on a model
    that raises."""
    kit = RoomKit(store=store)
    models = [Down() for _ in channels]
    await kit.create_room("r1")
    for channel_id, model in zip(channels, models, strict=True):
        kit.register_channel(AIChannel(channel_id, provider=model))
        await kit.attach_channel("r1", channel_id)
    return kit, models


async def test_a_turn_that_fails_under_process_inbound_ends_failed(
    open_rooms: OpenRooms,
) -> None:
    """The caller gets the error; the turn ends with an event recording the failure, so a
    follower reads it and a restart's ``resume_pending()`` does not run it again."""
    kit, [model] = await _failing_kit(open_rooms(), "ai")
    try:
        with pytest.raises(RuntimeError, match="model down"):
            await kit.process_inbound(
                InboundMessage("ws", "alice", TextContent("hi")), room_id="r1"
            )
        journal = turn_journal(kit.store)
        assert journal is not None
        assert await journal.open_turns() == []
    finally:
        await kit.close()
    restarted = RoomKit(store=open_rooms())
    again = Down()
    restarted.register_channel(AIChannel("ai", provider=again))
    try:
        assert await restarted.resume_pending() == []
        [stored, ending] = await restarted.store.list_events("r1")
    finally:
        await restarted.close()
    assert (model.calls, again.calls) == (1, 0)
    assert stored.content.body == "hi"
    assert (ending.channel_id, ending.sender_id) == ("ai", "ai")
    assert failed_turn(ending) == FailedTurn(
        f"message {stored.id} of room r1",
        "RuntimeError",
        "alice",
        f"message {stored.id} of room r1 was recorded but not handled: its turn failed "
        "(RuntimeError); send it again as a new message",
    )


async def test_a_failed_message_ends_the_turns_it_never_ran(open_rooms: OpenRooms) -> None:
    """A message whose first turn fails runs none of the others: each ends failed too,
    and no ``resume_pending()`` runs any of them."""
    kit, models = await _failing_kit(open_rooms(), "ai", "other")
    try:
        with pytest.raises(RuntimeError):
            await kit.process_inbound(
                InboundMessage("ws", "alice", TextContent("hi")), room_id="r1"
            )
        assert await kit.resume_pending() == []
        [_, *endings] = await kit.store.list_events("r1")
    finally:
        await kit.close()
    assert [model.calls for model in models] == [1, 0]
    assert sorted(ending.channel_id for ending in endings) == ["ai", "other"]
    assert all(failed_turn(ending) is not None for ending in endings)


async def test_a_turn_that_fails_on_the_memory_store_records_only_its_message() -> None:
    """A store without a journal has no turn to end: the caller gets the error, and the
    room's history holds the message alone, as before."""
    kit, [model] = await _failing_kit(InMemoryStore(), "ai")
    try:
        with pytest.raises(RuntimeError, match="model down"):
            await kit.process_inbound(
                InboundMessage("ws", "alice", TextContent("hi")), room_id="r1"
            )
        assert await kit.resume_pending() == []
        events = await kit.store.list_events("r1")
    finally:
        await kit.close()
    assert model.calls == 1
    assert [event.content.body for event in events] == ["hi"]
