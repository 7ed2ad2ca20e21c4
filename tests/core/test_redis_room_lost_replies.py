"""A write of the Redis room store whose reply is lost lands once, though the client sends it
again.

The relay lets a write reach the server, drops the server's reply and cuts the connection:
the client connects again and sends the same command, which the server runs a second time.
Each write below is made once more by nobody but the client, and lands once: the room its
caller created, one event, the turn its caller finished, the binding its caller removed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import TypeVar

import pytest
from redis import Redis
from tests.core.conftest import fresh_prefix
from tests.servers.redis_server import RedisServer
from tests.tools.human_input.stores.redis_relay import Relay

from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent, TextContent
from roomkit.stores.redis import RedisRoomStore
from roomkit.stores.redis._room_records import Layout, encode_binding, encode_event

T = TypeVar("T")


@pytest.fixture
def prefix() -> str:
    return fresh_prefix()


@pytest.fixture
async def rooms(relay: Relay, prefix: str) -> AsyncIterator[RedisRoomStore]:
    async with RedisRoomStore(relay.url, prefix=prefix) as store:
        await warm_up(store)
        await store.create_room(Room("r1"))
        yield store


@pytest.fixture
def elsewhere(redis_server: RedisServer) -> Iterator[Redis]:
    """Another process's client, which writes between a command and the client's re-send."""
    client = Redis.from_url(redis_server.url)
    yield client
    client.close()


async def warm_up(rooms: RedisRoomStore) -> None:
    """Run every write once, so that the server knows its script: the reply a test loses is
    the write's own, not the ``NOSCRIPT`` that has the client load the script first."""
    await rooms.create_room(Room("warm-up"))
    await rooms.add_participant(Participant("ann", "warm-up"))
    await rooms.add_binding(ChannelBinding("warm-up", "ws"))
    await rooms.remove_binding("warm-up", "ws")
    await rooms.add_event(said("warm-up", "warm"))
    await rooms.record_inbound(said("warm-up", "warm"), [OpenTurn("w1", "warm-up", "ai", None)])
    await rooms.record_step("w1", JournalStep(0, "response", {}))
    await rooms.finish_turn("w1", said("warm-up", "warm"))
    await rooms.begin_turn(OpenTurn("w2", "warm-up", "ai", None))
    await rooms.finish_turn("w2", None)
    await rooms.begin_turn(OpenTurn("w3", "warm-up", "ai", None))
    await rooms.end_turn("w3")


async def lost(relay: Relay, marker: bytes, call: Awaitable[T]) -> T:
    """Await ``call`` with the reply to its command that holds ``marker`` lost once: the
    client sends the command again."""
    relay.lose_reply_to(marker)
    result = await call
    assert relay.lost.is_set(), "the relay saw no command holding the marker"
    return result


def said(room_id: str, body: str, *, by: str = "alice", event_id: int | None = None) -> RoomEvent:
    if event_id is None:
        return RoomEvent(room_id, "ws", by, TextContent(body))
    return RoomEvent(room_id, "ws", by, TextContent(body), id=event_id)


async def bodies(rooms: RedisRoomStore, room_id: str = "r1") -> list[str]:
    return [event.content.body for event in await rooms.list_events(room_id)]


async def test_a_room_is_created_for_its_caller(rooms: RedisRoomStore, relay: Relay) -> None:
    """The re-sent create finds the room this very call wrote: created, not "exists"."""
    room = Room("lost-reply", {"topic": "holiday"})

    await lost(relay, b"lost-reply", rooms.create_room(room))

    assert await rooms.get_room("lost-reply") == room
    with pytest.raises(ValueError, match="already exists"):
        await rooms.create_room(Room("lost-reply"))
    with pytest.raises(ValueError, match="already exists"):
        await rooms.create_room(room)


async def test_an_event_is_in_the_history_once(rooms: RedisRoomStore, relay: Relay) -> None:
    await rooms.add_event(said("r1", "first"))

    await lost(relay, b"lost-reply", rooms.add_event(said("r1", "lost-reply")))

    assert await bodies(rooms) == ["first", "lost-reply"]


async def test_an_event_sent_again_finds_itself_under_a_later_one(
    rooms: RedisRoomStore, relay: Relay, elsewhere: Redis, prefix: str
) -> None:
    """Another process, whose ids run higher, appends an event between the write and the
    client's re-send of it: the re-send finds its event below that one and writes nothing."""
    event = said("r1", "lost-reply")
    later = said("r1", "elsewhere", by="bob", event_id=event.id + 1_000)
    keys = Layout(prefix)

    def add_elsewhere() -> None:
        elsewhere.rpush(keys.events("r1"), encode_event(later))
        elsewhere.set(keys.last_event, later.id)

    # Before the write goes in: arm the other process's event for the command after it,
    # the client's re-send of the write.
    relay.call_before(b"lost-reply", lambda: relay.call_before(b"lost-reply", add_elsewhere))
    await lost(relay, b"lost-reply", rooms.add_event(event))

    assert await bodies(rooms) == ["lost-reply", "elsewhere"]


async def test_a_message_and_its_turns_are_recorded_once(
    rooms: RedisRoomStore, relay: Relay
) -> None:
    turn = OpenTurn("t1", "r1", "ai", "alice", {"n": 1})

    await lost(relay, b"lost-reply", rooms.record_inbound(said("r1", "lost-reply"), [turn]))

    assert await bodies(rooms) == ["lost-reply"]
    assert await rooms.open_turns() == [turn]


async def test_a_turn_finished_says_so_and_keeps_its_reply_once(
    rooms: RedisRoomStore, relay: Relay
) -> None:
    """The re-sent finish finds the turn ended and its reply stored, by this very call: the
    caller is told it finished the turn, so the reply is delivered."""
    await rooms.record_inbound(said("r1", "hi"), [OpenTurn("t1", "r1", "ai", "alice")])
    await rooms.record_step("t1", JournalStep(0, "response", {"content": "hello"}))
    reply = said("r1", "lost-reply", by="ai")

    assert await lost(relay, b"lost-reply", rooms.finish_turn("t1", reply)) is True

    assert await bodies(rooms) == ["hi", "lost-reply"]
    assert await rooms.open_turns() == []
    assert await rooms.steps("t1") == []
    assert await rooms.finish_turn("t1", said("r1", "again", by="ai")) is False
    assert await bodies(rooms) == ["hi", "lost-reply"]


async def test_a_turn_finished_without_a_reply_says_so(rooms: RedisRoomStore, relay: Relay) -> None:
    await rooms.begin_turn(OpenTurn("t-lost-reply", "r1", "ai", None))

    assert await lost(relay, b"t-lost-reply", rooms.finish_turn("t-lost-reply", None)) is True

    assert await rooms.open_turns() == []
    assert await rooms.finish_turn("t-lost-reply", None) is False


async def test_a_binding_removed_says_so(rooms: RedisRoomStore, relay: Relay) -> None:
    await rooms.add_binding(ChannelBinding("r1", "lost-reply"))

    assert await lost(relay, b"lost-reply", rooms.remove_binding("r1", "lost-reply")) is True

    assert await rooms.list_bindings("r1") == []
    assert await rooms.rooms_for_channel("lost-reply") == []
    assert await rooms.remove_binding("r1", "lost-reply") is False


async def test_a_removal_sent_again_spares_a_binding_attached_after_it(
    rooms: RedisRoomStore, relay: Relay, elsewhere: Redis, prefix: str
) -> None:
    """Another process attaches the channel again between the removal and the client's
    re-send of it: that binding stands."""
    await rooms.add_binding(ChannelBinding("r1", "lost-reply"))
    again = ChannelBinding("r1", "lost-reply", "transport", {"v": 2})
    keys = Layout(prefix)

    def attach_elsewhere() -> None:
        records, order = keys.bindings("r1")
        elsewhere.hset(records, "lost-reply", encode_binding(again))
        elsewhere.zadd(order, {"lost-reply": 1_000})
        elsewhere.zadd(keys.channel("lost-reply"), {"r1": 1_000})

    relay.call_before(b"lost-reply", lambda: relay.call_before(b"lost-reply", attach_elsewhere))
    assert await lost(relay, b"lost-reply", rooms.remove_binding("r1", "lost-reply")) is True

    assert await rooms.list_bindings("r1") == [again]
    assert await rooms.rooms_for_channel("lost-reply") == ["r1"]


async def test_a_participant_joins_once(rooms: RedisRoomStore, relay: Relay) -> None:
    """Already safe: the re-sent join finds the participant's record and keeps it."""
    alice = Participant("lost-reply", "r1", "Alice")

    await lost(relay, b"lost-reply", rooms.add_participant(alice))

    assert await rooms.list_participants("r1") == [alice]


async def test_a_binding_is_attached_once(rooms: RedisRoomStore, relay: Relay) -> None:
    """Already safe: the re-sent attach writes the same binding in the same place."""
    await rooms.add_binding(ChannelBinding("r1", "first"))
    binding = ChannelBinding("r1", "lost-reply", "transport", {"v": 1})

    await lost(relay, b"lost-reply", rooms.add_binding(binding))

    assert [bound.channel_id for bound in await rooms.list_bindings("r1")] == [
        "first",
        "lost-reply",
    ]
    assert await rooms.rooms_for_channel("lost-reply") == ["r1"]


async def test_a_turn_begun_stepped_and_ended_is_written_once(
    rooms: RedisRoomStore, relay: Relay
) -> None:
    """Already safe: a turn begun, a step and an end each write the same when run twice."""
    await rooms.begin_turn(OpenTurn("first", "r1", "ai", None))
    turn = OpenTurn("t-lost-reply", "r1", "ai", "alice", {"n": 1})
    step = JournalStep(0, "response", {"content": "hello"})

    await lost(relay, b"t-lost-reply", rooms.begin_turn(turn))
    assert [begun.turn_id for begun in await rooms.open_turns()] == ["first", "t-lost-reply"]
    await lost(relay, b"t-lost-reply", rooms.record_step("t-lost-reply", step))
    assert await rooms.steps("t-lost-reply") == [step]
    await lost(relay, b"t-lost-reply", rooms.end_turn("t-lost-reply"))
    assert [begun.turn_id for begun in await rooms.open_turns()] == ["first"]
    assert await rooms.steps("t-lost-reply") == []


NEWER = 1_001
"""Events other processes append between a write and the client's re-send of it."""


async def every_body(rooms: RedisRoomStore) -> list[str]:
    return [event.content.body for event in await rooms.list_events("r1", 0, 2 * NEWER)]


def arm_newer_events(relay: Relay, elsewhere: Redis, prefix: str, marker: bytes) -> None:
    """Have other processes append :data:`NEWER` events, ids above every other, between the
    write holding ``marker`` and the client's re-send of it."""
    keys = Layout(prefix)

    def add_elsewhere() -> None:
        first = said("r1", "lost-reply").id + 1_000_000
        newer = [said("r1", f"newer {n}", by="bob", event_id=first + n) for n in range(NEWER)]
        pipe = elsewhere.pipeline()
        pipe.rpush(keys.events("r1"), *[encode_event(event) for event in newer])
        pipe.set(keys.last_event, newer[-1].id)
        pipe.execute()

    relay.call_before(marker, lambda: relay.call_before(marker, add_elsewhere))


async def test_an_event_sent_again_after_many_newer_ones_is_in_the_history_once(
    rooms: RedisRoomStore, relay: Relay, elsewhere: Redis, prefix: str
) -> None:
    arm_newer_events(relay, elsewhere, prefix, b"lost-reply")

    await lost(relay, b"lost-reply", rooms.add_event(said("r1", "lost-reply")))

    assert (await every_body(rooms)).count("lost-reply") == 1


async def test_a_message_sent_again_after_many_newer_ones_opens_its_turns_once(
    rooms: RedisRoomStore, relay: Relay, elsewhere: Redis, prefix: str
) -> None:
    turn = OpenTurn("t1", "r1", "ai", "alice")
    arm_newer_events(relay, elsewhere, prefix, b"lost-reply")

    await lost(relay, b"lost-reply", rooms.record_inbound(said("r1", "lost-reply"), [turn]))

    assert (await every_body(rooms)).count("lost-reply") == 1
    assert await rooms.open_turns() == [turn]


async def test_a_turn_finished_after_many_newer_events_says_so(
    rooms: RedisRoomStore, relay: Relay, elsewhere: Redis, prefix: str
) -> None:
    """The re-sent finish finds the turn ended by this very call, its reply under many
    newer events: the caller is told it finished the turn, and the reply is stored once."""
    await rooms.record_inbound(said("r1", "hi"), [OpenTurn("t1", "r1", "ai", "alice")])
    arm_newer_events(relay, elsewhere, prefix, b"lost-reply")

    finished = await lost(
        relay, b"lost-reply", rooms.finish_turn("t1", said("r1", "lost-reply", by="ai"))
    )

    assert finished is True
    assert (await every_body(rooms)).count("lost-reply") == 1
    assert await rooms.open_turns() == []
