"""Any text a message or a reply may hold, and any id or name, is kept by every durable room
store, NUL included (which PostgreSQL text cannot hold as it is)."""

from __future__ import annotations

from tests.core.room_stores import DurableRoomStore

from roomkit import AIChannel, InboundMessage, RoomKit
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent, TextContent
from roomkit.providers.ai.mock import MockAIProvider

ODD = ["a\x00b", "\x00", "\x01starts with the escape", "\x01\x00"]
"""A NUL anywhere, and text that starts as an escaped one is stored."""


async def test_a_message_and_a_reply_holding_a_nul_are_stored_and_read_back(
    durable_store: DurableRoomStore,
) -> None:
    await durable_store.create_room(Room("r1"))
    for body in ODD:
        event = RoomEvent("r1", "ws", "alice", TextContent(body, "e\x00n"))
        await durable_store.record_inbound(event, [OpenTurn(f"t-{event.id}", "r1", "ai", "alice")])
        reply = RoomEvent("r1", "ai", "ai", TextContent(f"re: {body}"))
        assert await durable_store.finish_turn(f"t-{event.id}", reply)
    await durable_store.add_event(RoomEvent("r1", "ws", "alice", TextContent("plain\x00")))
    expected = [text for body in ODD for text in (body, f"re: {body}")] + ["plain\x00"]
    listed = await durable_store.list_events("r1")
    assert [event.content.body for event in listed] == expected
    recent = await durable_store.recent_events("r1", 100)
    assert [event.content.body for event in recent] == expected
    assert listed[0].content.language == "e\x00n"


async def test_ids_and_names_holding_a_nul_are_stored_and_found_by(
    durable_store: DurableRoomStore,
) -> None:
    """A room, a participant, a channel, a sender and a turn are found by the ids given."""
    room, person, channel, turn = "r\x00", "ali\x00ce", "c\x00h", "t\x00"
    await durable_store.create_room(Room(room))
    found = await durable_store.get_room(room)
    assert found is not None
    assert found.id == room
    await durable_store.add_participant(Participant(person, room, "A\x00"))
    await durable_store.add_binding(ChannelBinding(room, channel, "cat\x00"))
    said = RoomEvent(room, channel, person, TextContent("hi"))
    await durable_store.record_inbound(said, [OpenTurn(turn, room, channel, person, {"k": "\x00"})])
    await durable_store.record_step(turn, JournalStep(0, "kind\x00", {"p": "\x00"}))

    roster = await durable_store.list_participants(room)
    assert [(p.id, p.room_id, p.name) for p in roster] == [(person, room, "A\x00")]
    [binding] = await durable_store.list_bindings(room)
    assert (binding.room_id, binding.channel_id, binding.category) == (room, channel, "cat\x00")
    assert await durable_store.rooms_for_channel(channel) == [room]
    assert await durable_store.open_turns() == [
        OpenTurn(turn, room, channel, person, {"k": "\x00"})
    ]
    assert await durable_store.steps(turn) == [JournalStep(0, "kind\x00", {"p": "\x00"})]
    assert await durable_store.renew_turns([OpenTurn(turn, room, channel, person)]) == {turn}
    assert await durable_store.finish_turn(turn, RoomEvent(room, "ai", "ai\x00", TextContent("re")))
    listed = await durable_store.list_events(room)
    assert [(e.channel_id, e.sender_id) for e in listed] == [(channel, person), ("ai", "ai\x00")]
    assert await durable_store.remove_binding(room, channel)


async def test_a_message_from_a_sender_whose_id_holds_a_nul_is_answered(
    durable_store: DurableRoomStore,
) -> None:
    """Through the kit: the message, its turn and the agent's reply are all stored."""
    kit = RoomKit(store=durable_store)
    kit.register_channel(AIChannel("agent", provider=MockAIProvider(["re: \x00"])))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    said = InboundMessage("web\x00", "ali\x00ce", TextContent("hi \x00"))

    result = await kit.process_inbound(said, room_id="r1")

    assert [reply.content.body for reply in result.responses] == ["re: \x00"]
    listed = await durable_store.list_events("r1")
    assert [(e.channel_id, e.sender_id, e.content.body) for e in listed] == [
        ("web\x00", "ali\x00ce", "hi \x00"),
        ("agent", "agent", "re: \x00"),
    ]
    assert await durable_store.open_turns() == []
