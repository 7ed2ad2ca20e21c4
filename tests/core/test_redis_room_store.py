"""The Redis room store on its own: server restarts, the format version, its keys, bad records.

The conformance suite, the turn journal and the restart tests run on it with the SQLite
store (``test_sqlite_room_store.py``, ``test_turn_journal.py``, ``test_restart.py``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.core.conftest import fresh_prefix
from tests.tools.human_input.stores.redis_server import RedisServer, running_redis

from roomkit import RoomKit
from roomkit._extras import install_command
from roomkit.core.exceptions import CorruptRecordError, StoreFormatError, StoreUnavailableError
from roomkit.core.store import JournalStep, OpenTurn, turn_journal
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent, TextContent
from roomkit.stores.redis import RedisRoomStore, RedisStore
from roomkit.stores.redis._room_records import FORMAT
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A server of this test alone, which it may stop and restart."""
    with running_redis(tmp_path) as server:
        yield server


@pytest.fixture
def prefix() -> str:
    return fresh_prefix()


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """A plain client, to look at and tamper with what the store wrote."""
    client = Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def rooms(redis_server: RedisServer, prefix: str) -> AsyncIterator[RedisRoomStore]:
    async with RedisRoomStore(redis_server.url, prefix=prefix) as store:
        yield store


def said(room_id: str, body: str) -> RoomEvent:
    return RoomEvent(room_id, "ws", "alice", TextContent(body))


async def _fill(store: RedisRoomStore) -> dict[str, object]:
    """Write one of everything; what reading it back must give."""
    room = Room("trip", {"topic": "holiday"})
    alice = Participant("alice", "trip", "Alice")
    binding = ChannelBinding("trip", "ai", "intelligence", {"tools": []}, group="agents")
    turn = OpenTurn("t1", "trip", "ai", "alice", {"n": 1})
    step = JournalStep(0, "response", {"text": "Where?"})
    message = said("trip", "Plan my holiday")
    await store.create_room(room)
    await store.add_participant(alice)
    await store.add_binding(binding)
    await store.record_inbound(message, [turn])
    await store.record_step("t1", step)
    return {
        "room": room,
        "roster": [alice],
        "bindings": [binding],
        "events": [message],
        "turns": [turn],
        "steps": [step],
    }


async def _read(store: RedisRoomStore) -> dict[str, object]:
    return {
        "room": await store.get_room("trip"),
        "roster": await store.list_participants("trip"),
        "bindings": await store.list_bindings("trip"),
        "events": await store.list_events("trip"),
        "turns": await store.open_turns(),
        "steps": await store.steps("t1"),
    }


# -- the server restarts ----------------------------------------------------------------------


@pytest.mark.parametrize("kill", [False, True], ids=["shutdown", "crash"])
async def test_a_redis_restart_with_aof_keeps_the_rooms(
    own_server: RedisServer, kill: bool
) -> None:
    """With ``appendfsync always``, what a write acknowledged is there after a restart,
    even a crash (SIGKILL); the store's client reconnects on its own."""
    async with RedisRoomStore(own_server.url) as before:
        written = await _fill(before)
        own_server.restart(kill=kill)
        # The same store object goes on once the server is back.
        assert await _read(before) == written
        await before.add_event(said("trip", "after the restart"))

    own_server.restart(kill=kill)
    async with RedisRoomStore(own_server.url) as after:
        found = await _read(after)
        assert [e.content.body for e in found.pop("events")] == [  # type: ignore[attr-defined]
            "Plan my holiday",
            "after the restart",
        ]
        written.pop("events")
        assert found == written


async def test_a_server_that_is_down_is_reported_and_the_store_recovers(
    own_server: RedisServer,
) -> None:
    store = RedisRoomStore(own_server.url)
    await store.create_room(Room("r1"))
    own_server.stop()
    try:
        with pytest.raises(StoreUnavailableError, match="Redis room store at redis://"):
            await store.get_room("r1")
        with pytest.raises(ConnectionError):
            await store.add_event(said("r1", "lost?"))
    finally:
        own_server.start()
    assert await store.get_room("r1") is not None
    assert await store.list_events("r1") == []
    await store.close()


# -- the format version -----------------------------------------------------------------------


async def test_opening_an_empty_database_claims_it_for_this_format(
    rooms: RedisRoomStore, raw: Redis, prefix: str
) -> None:
    assert await raw.get(f"{prefix}:rooms:format") == FORMAT == "roomkit.rooms.v1"


async def test_a_store_of_another_format_version_is_refused_and_left_alone(
    redis_server: RedisServer, raw: Redis, prefix: str
) -> None:
    await raw.set(f"{prefix}:rooms:format", "roomkit.rooms.v2")
    store = RedisRoomStore(redis_server.url, prefix=prefix)

    with pytest.raises(StoreFormatError, match=r"format 'roomkit.rooms.v2'.*'roomkit.rooms.v1'"):
        await store.open()
    with pytest.raises(StoreFormatError, match="another prefix= or database"):
        await store.create_room(Room("r1"))
    with pytest.raises(StoreFormatError):
        await store.get_room("r1")
    await store.close()
    assert await raw.keys(f"{prefix}:*") == [f"{prefix}:rooms:format"]


async def test_a_write_is_refused_once_the_format_changed_under_an_open_store(
    rooms: RedisRoomStore, raw: Redis, prefix: str
) -> None:
    """Every write checks the format on the server, in the same script."""
    await rooms.create_room(Room("r1"))
    await raw.set(f"{prefix}:rooms:format", "roomkit.rooms.v2")

    with pytest.raises(StoreFormatError):
        await rooms.record_inbound(said("r1", "hi"), [OpenTurn("t1", "r1", "ai", None)])
    with pytest.raises(StoreFormatError):
        await rooms.finish_turn("t1", None)
    assert await raw.llen(f"{prefix}:rooms:events:r1") == 0
    assert await raw.zcard(f"{prefix}:rooms:turns") == 0


# -- keys, clients, misuse --------------------------------------------------------------------


async def test_rooms_and_pending_requests_share_a_prefix_on_separate_keys(
    redis_server: RedisServer, raw: Redis, prefix: str
) -> None:
    kit = RoomKit(store=RedisRoomStore(redis_server.url, prefix=prefix))
    pending = RedisStore(redis_server.url, prefix=prefix)
    await kit.create_room("trip")
    await kit.add_participant("trip", "ann")
    asked = await HumanInputHandler(store=pending).create("Ask", {}, room_id="trip")

    room_keys = set(await raw.keys(f"{prefix}:rooms:*"))
    pending_keys = set(await raw.keys(f"{prefix}:*")) - room_keys
    assert room_keys >= {f"{prefix}:rooms:room:trip", f"{prefix}:rooms:roster:trip"}
    assert f"{prefix}:p:{asked.pending_id}" in pending_keys
    assert [p.id for p in await kit.store.list_participants("trip")] == ["ann"]
    assert turn_journal(kit.store) is kit.store
    await pending.close()
    await kit.store.close()  # type: ignore[attr-defined]


async def test_a_client_passed_in_is_used_and_left_open(
    redis_server: RedisServer, prefix: str
) -> None:
    client = Redis.from_url(redis_server.url)
    async with RedisRoomStore(client=client, prefix=prefix) as store:
        await store.create_room(Room("r1"))
    assert await client.ping() is True
    await client.aclose()


def test_misuse_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="prefix must be a non-empty str"):
        RedisRoomStore(prefix="")
    with pytest.raises(TypeError, match="to RedisRoomStore, not both"):
        RedisRoomStore("redis://localhost", client=Redis())
    with pytest.raises(ValueError, match="not a Redis URL"):
        RedisRoomStore("http://localhost")


def test_without_the_redis_extra_the_import_names_it() -> None:
    """``import roomkit`` needs no redis-py; the Redis room store says which extra to add."""
    probe = (
        "import sys; sys.modules['redis'] = None\n"
        "import roomkit, roomkit.core.store, roomkit.core.framework\n"
        "try:\n"
        "    import roomkit.stores.redis._rooms\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert install_command("redis") in done.stdout
    assert "RedisRoomStore" in done.stdout


# -- records the store cannot read ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("{oops", "room 'r1' holds unreadable JSON"),
        ("[1, 2]", "room 'r1' holds list, not a JSON object"),
        ('{"metadata": {}, "created_at": "tuesday"}', "unreadable timestamp"),
        ('{"created_at": "2025-01-01T00:00:00"}', "no dict 'metadata'"),
    ],
)
async def test_a_room_the_store_cannot_read_is_reported_as_corrupt(
    rooms: RedisRoomStore, raw: Redis, prefix: str, value: str, complaint: str
) -> None:
    await rooms.create_room(Room("r1"))
    await raw.set(f"{prefix}:rooms:room:r1", value)

    with pytest.raises(CorruptRecordError, match=complaint):
        await rooms.get_room("r1")


async def test_other_records_the_store_cannot_read_are_reported_as_corrupt(
    rooms: RedisRoomStore, raw: Redis, prefix: str
) -> None:
    await rooms.create_room(Room("r1"))
    await rooms.add_binding(ChannelBinding("r1", "ai", group="agents"))
    await rooms.add_event(said("r1", "hi"))
    await rooms.begin_turn(OpenTurn("t1", "r1", "ai", None))
    await rooms.record_step("t1", JournalStep(0, "response", {}))
    base = f"{prefix}:rooms:"
    await raw.hset(base + "bindings:r1", "ai", '{"channel_id": "ai", "metadata": {}, "group": 3}')
    await raw.lset(base + "events:r1", 0, '{"id": "seven", "metadata": {}}')
    await raw.set(base + "turn:t1", '{"turn_id": "t1", "state": {}}')
    await raw.hset(base + "steps:t1", "zero", '{"kind": "response", "payload": {}}')

    with pytest.raises(CorruptRecordError, match="group that is not a string"):
        await rooms.list_bindings("r1")
    with pytest.raises(CorruptRecordError, match="an event of room 'r1' holds no"):
        await rooms.list_events("r1")
    with pytest.raises(CorruptRecordError, match="turn 't1' holds no str 'room_id'"):
        await rooms.open_turns()
    with pytest.raises(CorruptRecordError, match="index that is not a number"):
        await rooms.steps("t1")
