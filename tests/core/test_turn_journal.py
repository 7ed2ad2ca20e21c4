"""The turn journal's atomic writes, on every durable room store, and what the kit does with them.

``record_inbound`` stores a message with the turns it starts; ``finish_turn`` stores a reply
with the turn's end. Each is all or nothing, and a reply is stored once however many runs
finish the same turn. Every durable room store (SQLite, Redis) runs this suite.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.core.conftest import OpenRooms
from tests.core.room_stores import DurableRoomStore

from roomkit import InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.exceptions import TurnNotOpenError
from roomkit.core.store import JournalStep, OpenTurn, turn_journal
from roomkit.models.room import Room, RoomEvent
from roomkit.providers.ai.mock import MockAIProvider


@pytest.fixture
async def journal(durable_store: DurableRoomStore) -> DurableRoomStore:
    await durable_store.create_room(Room("r1"))
    return durable_store


def said(body: str, room_id: str = "r1", channel_id: str = "ws") -> RoomEvent:
    return RoomEvent(room_id, channel_id, "alice", TextContent(body))


async def history(journal: DurableRoomStore, room_id: str = "r1") -> list[str]:
    events = await journal.list_events(room_id)
    return [event.content.body for event in events]


async def test_a_message_is_stored_with_the_turns_it_starts(journal: DurableRoomStore) -> None:
    turns = [OpenTurn("t1", "r1", "ai", "alice"), OpenTurn("t2", "r1", "helper", "alice")]

    await journal.record_inbound(said("hi"), turns)

    assert await history(journal) == ["hi"]
    assert await journal.open_turns() == turns


async def test_a_message_for_a_missing_room_stores_neither_it_nor_its_turns(
    journal: DurableRoomStore,
) -> None:
    with pytest.raises(KeyError, match="create it first"):
        await journal.record_inbound(
            said("hi", room_id="nowhere"), [OpenTurn("t1", "r1", "ai", None)]
        )

    assert await journal.open_turns() == []
    assert await history(journal, "nowhere") == []


async def test_finishing_a_turn_stores_its_reply_and_ends_it(journal: DurableRoomStore) -> None:
    await journal.record_inbound(said("hi"), [OpenTurn("t1", "r1", "ai", "alice")])
    await journal.record_step("t1", JournalStep(0, "response", {"content": "hello"}))

    assert await journal.finish_turn("t1", said("hello", channel_id="ai")) is True

    assert await history(journal) == ["hi", "hello"]
    assert await journal.open_turns() == []
    assert await journal.steps("t1") == []


async def test_a_turn_finished_twice_stores_its_reply_once(journal: DurableRoomStore) -> None:
    await journal.record_inbound(said("hi"), [OpenTurn("t1", "r1", "ai", "alice")])

    assert await journal.finish_turn("t1", said("hello", channel_id="ai")) is True
    assert await journal.finish_turn("t1", said("hello again", channel_id="ai")) is False
    assert await journal.finish_turn("never-begun", said("stray", channel_id="ai")) is False

    assert await history(journal) == ["hi", "hello"]


async def test_a_turn_finishes_without_a_reply(journal: DurableRoomStore) -> None:
    await journal.record_inbound(said("hi"), [OpenTurn("t1", "r1", "ai", None)])

    assert await journal.finish_turn("t1", None) is True

    assert await history(journal) == ["hi"]
    assert await journal.open_turns() == []


async def test_a_reply_that_cannot_be_stored_leaves_the_turn_open(
    journal: DurableRoomStore,
) -> None:
    """The turn's end is undone with the reply: a restart still finishes the turn."""
    turn = OpenTurn("t1", "r1", "ai", None, {"messages": []})
    await journal.begin_turn(turn)
    await journal.record_step("t1", JournalStep(0, "response", {"content": "hello"}))

    with pytest.raises(KeyError, match="create it first"):
        await journal.finish_turn("t1", said("hello", room_id="gone", channel_id="ai"))

    assert await journal.open_turns() == [turn]
    assert await journal.steps("t1") == [JournalStep(0, "response", {"content": "hello"})]


@pytest.mark.parametrize("end", ["ended", "finished"])
async def test_a_step_for_a_turn_no_longer_open_is_refused_with_its_own_error(
    journal: DurableRoomStore, end: str
) -> None:
    """A turn ended elsewhere (an A2A task cancelled on another replica) or finished by
    another run records no more steps: a ``TurnNotOpenError`` names it, still a
    ``KeyError`` for callers that catch one."""
    await journal.record_inbound(said("hi"), [OpenTurn("t1", "r1", "ai", "alice")])
    await journal.record_step("t1", JournalStep(0, "response", {"content": "hello"}))
    if end == "ended":
        await journal.end_turn("t1")
    else:
        await journal.finish_turn("t1", None)

    with pytest.raises(TurnNotOpenError, match="No open turn 't1'") as refused:
        await journal.record_step("t1", JournalStep(1, "result", {}))

    assert isinstance(refused.value, KeyError)
    assert refused.value.turn_id == "t1"
    assert await journal.steps("t1") == []
    assert await journal.open_turns() == []


async def test_other_writes_wait_for_a_transaction_and_survive_its_rollback(
    journal: DurableRoomStore,
) -> None:
    await journal.begin_turn(OpenTurn("t1", "r1", "ai", None))
    failing = journal.finish_turn("t1", said("hello", room_id="gone", channel_id="ai"))
    concurrent = journal.add_event(said("meanwhile"))

    outcomes = await asyncio.gather(failing, concurrent, return_exceptions=True)

    assert isinstance(outcomes[0], KeyError)
    assert await history(journal) == ["meanwhile"]
    assert [turn.turn_id for turn in await journal.open_turns()] == ["t1"]


# -- the kit on a durable room store ----------------------------------------------------------


async def kit_on(open_rooms: OpenRooms, *replies: str) -> RoomKit:
    kit = RoomKit(store=open_rooms())
    kit.register_channel(AIChannel("ai", provider=MockAIProvider(list(replies) or ["Hello."])))
    return kit


async def test_process_inbound_stores_the_message_then_the_reply_once(
    open_rooms: OpenRooms,
) -> None:
    """``on_recorded`` hears of the message once it is stored, before the turn runs."""
    kit = await kit_on(open_rooms, "Hello, Ann.")
    provider = kit.get_channel("ai").provider  # type: ignore[union-attr]
    await kit.create_room("r1")
    await kit.attach_channel("r1", "ai")
    recorded: list[tuple[RoomEvent, int]] = []

    def stored(event: RoomEvent) -> None:
        recorded.append((event, len(provider.calls)))

    message = InboundMessage("ws", "ann", TextContent("hi"))
    result = await kit.process_inbound(message, room_id="r1", on_recorded=stored)

    assert recorded == [(result.event, 0)]
    assert [reply.content.body for reply in result.responses] == ["Hello, Ann."]
    assert [e.content.body for e in await kit.store.list_events("r1")] == ["hi", "Hello, Ann."]
    store = turn_journal(kit.store)
    assert store is not None
    assert await store.open_turns() == []
    await kit.close()


async def test_a_turn_recorded_with_its_message_and_never_started_runs_on_resume(
    open_rooms: OpenRooms,
) -> None:
    async with open_rooms() as store:  # type: ignore[attr-defined]
        await store.create_room(Room("r1"))
        await store.record_inbound(said("hi"), [OpenTurn("t1", "r1", "ai", "alice")])

    kit = await kit_on(open_rooms, "Hello, Alice.")
    provider = kit.get_channel("ai").provider  # type: ignore[union-attr]
    replies = await kit.resume_pending()

    assert [reply.content.body for reply in replies] == ["Hello, Alice."]
    # The turn started from the room's history, the message included.
    assert provider.calls[0].messages[-1].content == "hi"
    assert [e.content.body for e in await kit.store.list_events("r1")] == ["hi", "Hello, Alice."]
    assert await kit.resume_pending() == []
    await kit.close()


async def test_two_runs_of_one_turn_store_one_reply(open_rooms: OpenRooms) -> None:
    """Two kits sharing the store both re-drive a turn: the first to finish stores the
    reply; the other stores and delivers nothing."""
    async with open_rooms() as store:  # type: ignore[attr-defined]
        await store.create_room(Room("r1"))
        await store.record_inbound(said("hi"), [OpenTurn("t1", "r1", "ai", "alice")])
        [turn] = await store.open_turns()

    first, second = await kit_on(open_rooms, "One."), await kit_on(open_rooms, "Two.")
    first_channel, second_channel = first.get_channel("ai"), second.get_channel("ai")
    assert isinstance(first_channel, AIChannel)
    assert isinstance(second_channel, AIChannel)

    assert (await first_channel.resume_turn(turn)) is not None
    assert await second_channel.resume_turn(turn) is None

    assert [e.content.body for e in await first.store.list_events("r1")] == ["hi", "One."]
    for kit in (first, second):
        await kit.close()
