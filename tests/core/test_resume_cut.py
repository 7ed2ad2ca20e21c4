"""A re-driven turn cut on purpose (``kit.resumed.cut``) at start-up: one cut while the
journal is still read never runs, and one cut as soon as it is started frees its room's lane."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.core.held_journal import HeldJournal

from roomkit import RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.store import OpenTurn
from roomkit.models.room import Room, RoomEvent
from roomkit.providers.ai.mock import MockAIProvider


async def _kit_with_an_open_turn(tmp_path: Path) -> tuple[RoomKit, HeldJournal, MockAIProvider]:
    store = HeldJournal(tmp_path / "rooms.db")
    await store.create_room(Room("r1"))
    said = RoomEvent("r1", "ws", "alice", TextContent("hi"))
    await store.record_inbound(said, [OpenTurn("t1", "r1", "ai", "alice")])
    model = MockAIProvider(["Hello."])
    kit = RoomKit(store=store)
    kit.register_channel(AIChannel("ai", provider=model))
    return kit, store, model


def _t1(turn: OpenTurn) -> bool:
    return turn.turn_id == "t1"


async def test_a_turn_cut_while_the_journal_is_read_never_runs(tmp_path: Path) -> None:
    kit, store, model = await _kit_with_an_open_turn(tmp_path)
    resuming = asyncio.create_task(kit.resume_pending())
    await store.reading.wait()
    assert await kit.resumed.cut(_t1) == []
    store.go.set()
    assert await resuming == []
    assert model.calls == []
    assert await store.open_turns() == []
    await kit.close()
    await store.close()


async def test_a_turn_cut_before_its_first_step_frees_its_lane(tmp_path: Path) -> None:
    """The cut comes as the turn is started, before its task ever ran: the room's lane is
    let go, so the room's next turn does not wait for it forever."""
    kit, store, model = await _kit_with_an_open_turn(tmp_path)
    store.go.set()

    async def cut_once_leased() -> None:
        await store.leased.wait()
        await kit.resumed.cut(_t1)

    cutting = asyncio.create_task(cut_once_leased())
    assert await kit.resume_pending() == []
    await cutting
    assert model.calls == []
    assert kit.queued_turns("r1", "ai") == 0
    await kit.close()
    await store.close()
