"""Turn leases, on every durable room store: a turn the kit runs is leased to its process
and renewed while it runs; a renewal never reopens an ended turn; a turn without a lease
(journalled by an earlier version) counts as running."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.core.conftest import OpenRooms
from tests.core.room_stores import DurableRoomStore

from roomkit import InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.store import OpenTurn, TurnLeases
from roomkit.models.room import Room, RoomEvent
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse


class Held(AIProvider):
    """A model that answers once let go: its turn runs until then."""

    def __init__(self) -> None:
        self.called = asyncio.Event()
        self.go = asyncio.Event()

    @property
    def model_name(self) -> str:
        return "held"

    async def generate(self, context: AIContext) -> AIResponse:
        self.called.set()
        await self.go.wait()
        return AIResponse(content="Done.")


class Ticks:
    """The wall clock, telling a test each time it is read."""

    def __init__(self) -> None:
        self.reads = 0
        self.read = asyncio.Event()

    def __call__(self) -> float:
        self.reads += 1
        self.read.set()
        return time.time()

    async def reads_past(self, count: int) -> None:
        while self.reads <= count:
            self.read.clear()
            await self.read.wait()


async def test_a_renewal_replaces_an_open_turns_state_and_reopens_no_ended_turn(
    durable_store: DurableRoomStore,
) -> None:
    assert isinstance(durable_store, TurnLeases)
    await durable_store.create_room(Room("r1"))
    event = RoomEvent("r1", "ws", "alice", TextContent("hi"))
    first, second = OpenTurn("t1", "r1", "ai", "alice"), OpenTurn("t2", "r1", "ai", "alice")
    await durable_store.record_inbound(event, [first, second])

    renewed = OpenTurn("t1", "r1", "ai", "alice", {"lease_until": 5.0})
    assert await durable_store.renew_turn(renewed) is True
    assert await durable_store.open_turns() == [renewed, second]

    await durable_store.end_turn("t1")
    assert await durable_store.renew_turn(renewed) is False
    assert await durable_store.renew_turn(OpenTurn("never", "r1", "ai", None)) is False
    assert await durable_store.open_turns() == [second]


async def test_a_running_turn_is_leased_and_renewed_until_it_ends(
    open_rooms: OpenRooms,
) -> None:
    clock, model = Ticks(), Held()
    kit = RoomKit(store=open_rooms(), turn_lease=0.03, clock=clock)
    kit.register_channel(AIChannel("ai", provider=model))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "ai")
    message = InboundMessage("ws", "ann", TextContent("hi"))
    running = asyncio.get_running_loop().create_task(kit.process_inbound(message, room_id="r1"))
    try:
        await model.called.wait()
        [begun] = await kit.store.open_turns()  # type: ignore[attr-defined]
        assert isinstance(begun.state["lease_until"], float)
        # Two renewal rounds later, the first has written its lease.
        await clock.reads_past(clock.reads + 2)
        [renewed] = await kit.store.open_turns()  # type: ignore[attr-defined]
        assert renewed.state["lease_until"] > begun.state["lease_until"]
        assert renewed.state["message_id"] == begun.state["message_id"]
        model.go.set()
        await running
        assert await kit.store.open_turns() == []  # type: ignore[attr-defined]
    finally:
        model.go.set()
        await kit.close()


async def test_a_turn_without_a_lease_counts_as_running() -> None:
    """A turn an earlier version journalled carries no lease: the doors wait for it, as
    they did before leases."""
    kit = RoomKit(clock=lambda: 1e12)
    assert kit.leases.running(OpenTurn("t1", "r1", "ai", None, {"message_id": 1}))
    assert not kit.leases.running(OpenTurn("t1", "r1", "ai", None, {"lease_until": 5.0}))


@pytest.mark.parametrize("lease", [0, -1.0, float("nan")])
def test_a_lease_that_is_no_positive_number_of_seconds_is_refused(lease: float) -> None:
    with pytest.raises(ValueError, match="turn_lease must be more than 0 seconds"):
        RoomKit(turn_lease=lease)
