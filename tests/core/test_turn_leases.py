"""Turn leases, on every durable room store: a turn the kit runs is leased to its process
and renewed while it runs; a renewal never reopens an ended turn; a turn without a lease
(journalled by an earlier version) counts as running."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest
from tests.core.conftest import OpenRooms
from tests.core.room_stores import DurableRoomStore, Place
from tests.core.store_writes import counting_writes

from roomkit import InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core._leases import Leases
from roomkit.core.store import OpenTurn, TurnLeases
from roomkit.models.room import Room, RoomEvent
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse
from roomkit.stores.sqlite import SQLiteRoomStore


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
    assert await durable_store.renew_turns([renewed]) == {"t1"}
    assert await durable_store.open_turns() == [renewed, second]

    await durable_store.end_turn("t1")
    later = OpenTurn("t2", "r1", "ai", "alice", {"lease_until": 6.0})
    never = OpenTurn("never", "r1", "ai", None)
    assert await durable_store.renew_turns([renewed, later, never]) == {"t2"}
    assert await durable_store.renew_turns([]) == frozenset()
    assert await durable_store.open_turns() == [later]


async def _waiting_turns(store: DurableRoomStore, count: int) -> list[OpenTurn]:
    """``count`` turns begun in room r1 by one message, as turns waiting for people are."""
    await store.create_room(Room("r1"))
    event = RoomEvent("r1", "ws", "alice", TextContent("hi"))
    turns = [OpenTurn(f"t{n}", "r1", "ai", "alice", {"message_id": event.id}) for n in range(count)]
    await store.record_inbound(event, turns)
    return turns


async def test_a_round_renews_every_turn_held_in_one_write(
    place: Place, durable_store: DurableRoomStore
) -> None:
    """Turns waiting for people for hours cost one write a round, however many they are;
    the turns ended meanwhile are let go of, not reopened."""
    assert isinstance(durable_store, TurnLeases)
    now = [1000.0]
    leases = Leases(term=3600.0, clock=lambda: now[0])
    turns = await _waiting_turns(durable_store, 12)
    # The store's first renewal readies what it runs (a script on Redis) and writes nothing.
    assert await durable_store.renew_turns([OpenTurn("never", "r1", "ai", None)]) == set()

    async with counting_writes(place, durable_store) as claiming:
        claimed = await leases.claim(durable_store, turns)
    assert claiming.count == 1, claiming.commands
    assert [turn.turn_id for turn in claimed] == [turn.turn_id for turn in turns]

    with leases.held(durable_store, claimed):
        for turn_id in ("t3", "t7", "t8"):
            await durable_store.end_turn(turn_id)
        now[0] = 2200.0
        async with counting_writes(place, durable_store) as renewing:
            await leases.renew(durable_store)
        assert renewing.count == 1, renewing.commands

        still = [
            turn_id for turn_id in (f"t{n}" for n in range(12)) if turn_id not in {"t3", "t7", "t8"}
        ]
        open_turns = await durable_store.open_turns()
        assert [turn.turn_id for turn in open_turns] == still
        assert {turn.state["lease_until"] for turn in open_turns} == {2200.0 + 3600.0}

        # The ended turns were let go of: the next round renews only the open ones.
        now[0] = 3400.0
        async with counting_writes(place, durable_store) as again:
            await leases.renew(durable_store)
        assert again.count == 1, again.commands
        assert [turn.turn_id for turn in await durable_store.open_turns()] == still


async def test_a_turn_whose_state_is_refused_holds_back_no_other_lease(
    durable_store: DurableRoomStore, caplog: pytest.LogCaptureFixture
) -> None:
    now = [1000.0]
    leases = Leases(term=3600.0, clock=lambda: now[0])
    first, odd, last = await _waiting_turns(durable_store, 3)
    unstorable = OpenTurn(odd.turn_id, "r1", "ai", "alice", {"seen": {1, 2}})  # no JSON
    with leases.held(durable_store, [first, unstorable, last]):
        now[0] = 2000.0
        with caplog.at_level(logging.ERROR, logger="roomkit.framework"):
            await leases.renew(durable_store)
        assert "The lease of turn t1 cannot be renewed" in caplog.text
        found = {turn.turn_id: turn.state for turn in await durable_store.open_turns()}
        assert found["t0"]["lease_until"] == found["t2"]["lease_until"] == 2000.0 + 3600.0
        assert "lease_until" not in found["t1"]


async def test_a_round_the_store_refuses_is_logged_and_the_next_round_renews(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteRoomStore(tmp_path / "kit.db")
    leases = Leases(term=3600.0, clock=lambda: 1000.0)
    try:
        turns = await _waiting_turns(store, 2)
        with leases.held(store, turns):
            unreachable = SQLiteRoomStore(tmp_path / "gone" / "kit.db")
            with caplog.at_level(logging.WARNING, logger="roomkit.framework"):
                await leases.renew(unreachable)  # raises nothing: the round is logged
            assert "The leases of 2 turns were not renewed" in caplog.text
            await leases.renew(store)
            assert [t.state["lease_until"] for t in await store.open_turns()] == [4600.0] * 2
    finally:
        await store.close()


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
