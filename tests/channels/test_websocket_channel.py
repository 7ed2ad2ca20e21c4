"""WebSocketChannel: delivers a room's events to the connections registered for that room."""

from __future__ import annotations

import asyncio
import logging

import pytest

from roomkit import WebSocketChannel
from roomkit.models.room import RoomEvent, TextContent


def event(room_id: str = "r1", body: str = "hello") -> RoomEvent:
    return RoomEvent(room_id, "agent", "agent", TextContent(body))


class Inbox:
    """A connection's send function that keeps what it receives."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []

    async def __call__(self, connection_id: str, event: RoomEvent) -> None:
        self.received.append((connection_id, event.content.body))


async def test_events_reach_the_connections_of_their_room_only() -> None:
    ws = WebSocketChannel("ws")
    here, there = Inbox(), Inbox()
    ws.register_connection("c1", here, room_id="r1")
    ws.register_connection("c2", there, room_id="r2")

    await ws.deliver(event("r1", "for r1"))

    assert here.received == [("c1", "for r1")]
    assert there.received == []
    assert ws.connections("r1") == ["c1"]


def test_a_sync_send_function_is_refused_with_a_clear_error() -> None:
    ws = WebSocketChannel("ws")

    def send(connection_id: str, event: RoomEvent) -> None:
        pass

    with pytest.raises(TypeError, match="send_fn must be an async function"):
        ws.register_connection("c1", send, room_id="r1")  # type: ignore[arg-type]
    assert ws.connections("r1") == []


async def test_a_failing_send_drops_the_connection_and_spares_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ws = WebSocketChannel("ws")
    healthy = Inbox()

    async def broken(connection_id: str, event: RoomEvent) -> None:
        raise ConnectionResetError("client went away")

    ws.register_connection("bad", broken, room_id="r1")
    ws.register_connection("good", healthy, room_id="r1")

    with caplog.at_level(logging.WARNING, logger="roomkit.channels.websocket"):
        await ws.deliver(event(body="one"))
    await ws.deliver(event(body="two"))

    assert ws.connections("r1") == ["good"]
    assert healthy.received == [("good", "one"), ("good", "two")]
    assert "WebSocket send failed for bad" in caplog.text


async def test_a_send_slower_than_send_timeout_drops_the_connection() -> None:
    ws = WebSocketChannel("ws", send_timeout=2)
    never = asyncio.Event()

    async def stalled(connection_id: str, event: RoomEvent) -> None:
        await never.wait()

    ws.register_connection("slow", stalled, room_id="r1")

    await ws.deliver(event())  # the 2 s pass on the virtual clock

    assert ws.connections("r1") == []


async def test_unregister_and_close_stop_delivery() -> None:
    ws = WebSocketChannel("ws")
    first, second = Inbox(), Inbox()
    ws.register_connection("c1", first, room_id="r1")
    ws.register_connection("c2", second, room_id="r1")

    ws.unregister_connection("c1")
    await ws.deliver(event(body="one"))
    await ws.close()
    await ws.deliver(event(body="two"))

    assert first.received == []
    assert second.received == [("c2", "one")]


def test_send_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="send_timeout"):
        WebSocketChannel("ws", send_timeout=0)


async def test_a_stalled_client_does_not_delay_the_others() -> None:
    """The first client only finishes once the second one has received the event."""
    ws = WebSocketChannel("ws", send_timeout=2)
    second_received = asyncio.Event()
    received: list[str] = []

    async def waits_for_the_other(connection_id: str, event: RoomEvent) -> None:
        await second_received.wait()
        received.append(connection_id)

    async def quick(connection_id: str, event: RoomEvent) -> None:
        received.append(connection_id)
        second_received.set()

    ws.register_connection("slow", waits_for_the_other, room_id="r1")
    ws.register_connection("quick", quick, room_id="r1")

    await ws.deliver(event())

    assert received == ["quick", "slow"]
    assert ws.connections("r1") == ["slow", "quick"]


async def test_a_connection_registered_again_during_a_failing_send_is_kept() -> None:
    ws = WebSocketChannel("ws")
    replacement = Inbox()

    async def failing(connection_id: str, event: RoomEvent) -> None:
        ws.register_connection("c1", replacement, room_id="r1")  # the client reconnected
        raise ConnectionResetError("old socket closed")

    ws.register_connection("c1", failing, room_id="r1")

    await ws.deliver(event(body="one"))
    await ws.deliver(event(body="two"))

    assert replacement.received == [("c1", "two")]


async def test_an_old_client_going_away_leaves_a_newer_one_of_the_same_id() -> None:
    ws = WebSocketChannel("ws")
    old_tab, new_tab = Inbox(), Inbox()
    ws.register_connection("alice", old_tab, room_id="r1")
    ws.register_connection("alice", new_tab, room_id="r1")  # reconnected before the old closed

    ws.unregister_connection("alice", send_fn=old_tab)
    await ws.deliver(event(body="one"))
    ws.unregister_connection("alice", send_fn=new_tab)
    await ws.deliver(event(body="two"))

    assert old_tab.received == []
    assert new_tab.received == [("alice", "one")]
    assert ws.connections("r1") == []
