"""Any text a message or a reply may hold is kept by every durable room store, NUL included
(which PostgreSQL text cannot hold as it is)."""

from __future__ import annotations

from tests.core.room_stores import DurableRoomStore

from roomkit.core.store import OpenTurn
from roomkit.models.room import Room, RoomEvent, TextContent

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
