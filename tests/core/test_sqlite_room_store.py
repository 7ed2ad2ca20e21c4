"""The room stores: one conformance suite for memory, SQLite, Redis and PostgreSQL, then what
every durable store keeps across restarts and its turn journal, then SQLite on its own.

SQLite does real I/O on aiosqlite's thread and Redis on a real redis-server, so these tests
run on the real event loop. (Redis on its own: ``test_redis_room_store.py``.)
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.core.conftest import OpenRooms, fresh_prefix
from tests.core.room_stores import DURABLE, DurableRoomStore, Place
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit.core.exceptions import CorruptRecordError, StoreUnavailableError
from roomkit.core.store import InMemoryStore, JournalStep, OpenTurn, RoomStore, TurnJournal
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent, TextContent
from roomkit.stores import _sql_rows as _sqlite_rows
from roomkit.stores.sqlite import SQLiteRoomStore

METADATA = {"topic": "colours", "tags": ["a", "é"], "nested": {"n": 1, "x": 2.5, "ok": None}}


@pytest.fixture(params=["memory", *DURABLE])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RoomStore]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    if request.param == "sqlite":
        place = Place.sqlite(tmp_path / "rooms.db")
    elif request.param == "postgres":
        dsn = request.getfixturevalue("postgres_server").dsn
        place = Place.postgres(dsn, request.getfixturevalue("postgres_schema"))
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        place = Place.redis(server.url, fresh_prefix())
    durable = place.rooms()
    await durable.open()
    yield durable
    await durable.close()


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SQLiteRoomStore]:
    async with SQLiteRoomStore(tmp_path / "rooms.db") as opened:
        yield opened


def said(room_id: str, body: str, **options: Any) -> RoomEvent:
    return RoomEvent(room_id, "ws", "alice", TextContent(body), **options)


async def fill(store: RoomStore, room_id: str, count: int) -> list[RoomEvent]:
    events = [said(room_id, f"m{n}") for n in range(count)]
    for event in events:
        await store.add_event(event)
    return events


# -- every store ------------------------------------------------------------------------------


async def test_a_room_round_trips_and_an_unknown_room_is_none(store: RoomStore) -> None:
    room = Room("r1", METADATA, datetime(2025, 1, 2, 3, 4, 5, 6789, tzinfo=UTC))
    await store.create_room(room)

    assert await store.get_room("r1") == room
    assert await store.get_room("nope") is None


async def test_creating_an_existing_room_raises_and_keeps_the_first(store: RoomStore) -> None:
    first = Room("r1", {"v": 1})
    await store.create_room(first)

    with pytest.raises(ValueError, match="already exists"):
        await store.create_room(Room("r1", {"v": 2}))
    assert await store.get_room("r1") == first


async def test_the_roster_keeps_join_order_and_the_first_record(store: RoomStore) -> None:
    await store.create_room(Room("r1"))
    await store.create_room(Room("r2"))
    bob = Participant("bob", "r1", "Bob")
    alice = Participant(
        "alice", "r1", None, datetime(2024, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    )
    await store.add_participant(bob)
    await store.add_participant(alice)
    await store.add_participant(Participant("bob", "r1", "Robert"))
    await store.add_participant(Participant("bob", "r2", "Bob in r2"))

    assert await store.list_participants("r1") == [bob, alice]
    assert [p.name for p in await store.list_participants("r2")] == ["Bob in r2"]
    assert await store.list_participants("nope") == []


async def test_writes_into_an_unknown_room_raise_key_error(store: RoomStore) -> None:
    with pytest.raises(KeyError):
        await store.add_participant(Participant("bob", "nope"))
    with pytest.raises(KeyError):
        await store.add_binding(ChannelBinding("nope", "ws"))
    with pytest.raises(KeyError):
        await store.add_event(said("nope", "hi"))
    assert await store.list_events("nope") == []


async def test_an_unknown_room_s_long_id_is_cut_short_in_the_error(store: RoomStore) -> None:
    room_id = "r" * 10_000
    with pytest.raises(KeyError) as participant:
        await store.add_participant(Participant("bob", room_id))
    with pytest.raises(KeyError) as binding:
        await store.add_binding(ChannelBinding(room_id, "ws"))
    with pytest.raises(KeyError) as event:
        await store.add_event(said(room_id, "hi"))

    for raised in (participant, binding, event):
        message = str(raised.value)
        assert len(message) < 200
        assert "No room 'rrrrr" in message
        assert message.endswith('... in the store: create it first"')


async def test_an_event_added_twice_is_in_the_history_twice(store: RoomStore) -> None:
    """Every store keeps what the application adds: only the client's re-send of one write
    lands once (on Redis, where the client sends a write again)."""
    await store.create_room(Room("r1"))
    event = said("r1", "hi")
    await store.add_event(event)
    await store.add_event(event)

    assert await store.list_events("r1") == [event, event]


async def test_attaching_a_channel_again_replaces_its_binding_in_place(store: RoomStore) -> None:
    await store.create_room(Room("r1"))
    await store.add_binding(ChannelBinding("r1", "agent", "intelligence", {"tools": []}))
    ws = ChannelBinding("r1", "ws", "transport")
    await store.add_binding(ws)
    agent = ChannelBinding("r1", "agent", None, {"tools": [{"name": "AskUserQuestion"}]})
    await store.add_binding(agent)

    assert await store.list_bindings("r1") == [agent, ws]
    assert await store.list_bindings("nope") == []


async def test_a_bindings_group_reads_back_apart_from_its_metadata(store: RoomStore) -> None:
    await store.create_room(Room("r1"))
    grouped = ChannelBinding("r1", "agent", "intelligence", dict(METADATA), group="agents")
    plain = ChannelBinding("r1", "ws", "transport", dict(METADATA))
    await store.add_binding(grouped)
    await store.add_binding(plain)

    assert await store.list_bindings("r1") == [grouped, plain]


async def test_rooms_for_channel_lists_bound_rooms_oldest_first(store: RoomStore) -> None:
    for room_id in ("r1", "r2", "r3"):
        await store.create_room(Room(room_id))
    await store.add_binding(ChannelBinding("r3", "ws"))
    await store.add_binding(ChannelBinding("r1", "ws"))
    await store.add_binding(ChannelBinding("r2", "agent"))

    assert await store.rooms_for_channel("ws") == ["r1", "r3"]
    assert await store.rooms_for_channel("agent") == ["r2"]
    assert await store.rooms_for_channel("nobody") == []


async def test_events_round_trip_in_the_order_they_were_added(store: RoomStore) -> None:
    await store.create_room(Room("r1"))
    await store.create_room(Room("r2"))
    older = RoomEvent("r1", "ws", "alice", TextContent("bonjour", "fr"), metadata=METADATA)
    newer = said("r1", "second")
    await store.add_event(newer)  # added first although created second
    await store.add_event(said("r2", "elsewhere"))
    await store.add_event(older)

    assert await store.list_events("r1") == [newer, older]
    assert [e.content.body for e in await store.list_events("r2")] == ["elsewhere"]


async def test_list_events_pages_with_offset_and_limit(store: RoomStore) -> None:
    await store.create_room(Room("r1"))
    events = await fill(store, "r1", 7)

    assert await store.list_events("r1", 2, 3) == events[2:5]
    assert await store.list_events("r1", offset=5) == events[5:]
    assert await store.list_events("r1", offset=9) == []
    assert await store.list_events("r1", limit=0) == []


async def test_recent_events_is_the_last_window_oldest_first(store: RoomStore) -> None:
    await store.create_room(Room("r1"))
    events = await fill(store, "r1", 6)

    assert await store.recent_events("r1", 3) == events[3:]
    assert await store.recent_events("r1", 50) == events
    assert await store.recent_events("r1", 0) == []
    assert await store.recent_events("nope", 5) == []


# -- the same answers from every store, whatever the sequence of writes ----------------------

_ids = st.sampled_from(["r1", "r2", "r3"])
_channels = st.sampled_from(["ws", "agent", "sms"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
_metadata = st.dictionaries(st.text(max_size=4), _json, max_size=3)
_writes = st.lists(
    st.one_of(
        st.builds(Room, _ids, _metadata),
        st.builds(Participant, st.sampled_from(["alice", "bob"]), _ids, st.none() | st.text()),
        st.builds(ChannelBinding, _ids, _channels, st.none() | st.text(max_size=4), _metadata),
        st.builds(said, _ids, st.text(max_size=8), metadata=_metadata),
    ),
    max_size=25,
)


async def _write(store: RoomStore, item: object) -> str:
    """Apply one write; the name of the error it raised, or "ok"."""
    try:
        if isinstance(item, Room):
            await store.create_room(item)
        elif isinstance(item, Participant):
            await store.add_participant(item)
        elif isinstance(item, ChannelBinding):
            await store.add_binding(item)
        else:
            assert isinstance(item, RoomEvent)
            await store.add_event(item)
    except (KeyError, ValueError) as error:
        return type(error).__name__
    return "ok"


async def _reads(store: RoomStore) -> list[object]:
    seen: list[object] = []
    for room_id in ("r1", "r2", "r3"):
        seen += [
            await store.get_room(room_id),
            await store.list_participants(room_id),
            await store.list_bindings(room_id),
            await store.list_events(room_id),
            await store.list_events(room_id, 2, 3),
            await store.recent_events(room_id, 4),
        ]
    for channel_id in ("ws", "agent", "sms"):
        seen.append(await store.rooms_for_channel(channel_id))
    return seen


@pytest.mark.parametrize("durable_kind", DURABLE)
@given(rooms=st.lists(st.builds(Room, _ids, _metadata), max_size=3), writes=_writes)
async def test_durable_stores_answer_as_the_memory_store_does(
    durable_kind: str, redis_server: RedisServer, rooms: list[Room], writes: list[object]
) -> None:
    memory = InMemoryStore()
    if durable_kind == "sqlite":
        durable: DurableRoomStore = SQLiteRoomStore(":memory:")
    else:
        durable = Place.redis(redis_server.url, fresh_prefix()).rooms()
    async with durable:  # type: ignore[attr-defined]
        for item in [*rooms, *writes]:
            assert await _write(durable, item) == await _write(memory, item)
        assert await _reads(durable) == await _reads(memory)


# -- every durable store: restarts, several store objects -------------------------------------


async def test_an_id_holding_a_nul_finds_nothing(open_rooms: OpenRooms) -> None:
    """An id from the network (a chat route's room) may hold a NUL, which no stored id
    holds (PostgreSQL text cannot): every read of it finds nothing, and none fails."""
    store = open_rooms()
    await store.create_room(Room("r1"))
    await store.add_participant(Participant("alice", "r1"))
    await store.add_event(said("r1", "hello"))
    for room_id in ("r1\x00", "\x00"):
        assert await store.get_room(room_id) is None
        assert await store.list_participants(room_id) == []
        assert await store.list_bindings(room_id) == []
        assert await store.list_events(room_id) == []
        assert await store.recent_events(room_id, 10) == []
    assert await store.rooms_for_channel("ws\x00") == []
    assert [event.room_id for event in await store.list_events("r1")] == ["r1"]


async def test_everything_is_there_after_a_restart(open_rooms: OpenRooms) -> None:
    room = Room("r1", METADATA)
    alice = Participant("alice", "r1", "Alice")
    binding = ChannelBinding("r1", "agent", "intelligence", {"tools": []}, group="agents")
    turn = OpenTurn("t1", "r1", "agent", "alice", {"event_id": 7})
    step = JournalStep(0, "response", {"text": "Which colour?"})
    async with open_rooms() as before:  # type: ignore[attr-defined]
        await before.create_room(room)
        await before.add_participant(alice)
        await before.add_binding(binding)
        events = await fill(before, "r1", 3)
        await before.begin_turn(turn)
        await before.record_step("t1", step)

    async with open_rooms() as after:  # type: ignore[attr-defined]
        assert await after.get_room("r1") == room
        assert await after.list_participants("r1") == [alice]
        assert await after.list_bindings("r1") == [binding]
        assert await after.rooms_for_channel("agent") == ["r1"]
        assert await after.list_events("r1") == events
        assert await after.open_turns() == [turn]
        assert await after.steps("t1") == [step]


async def test_events_created_after_reopening_get_ids_after_the_stored_ones(
    open_rooms: OpenRooms,
) -> None:
    ahead = said("r1", "from a process that ran longer", id=said("r1", "probe").id + 10_000)
    async with open_rooms() as before:  # type: ignore[attr-defined]
        await before.create_room(Room("r1"))
        await before.add_event(ahead)

    async with open_rooms() as after:  # type: ignore[attr-defined]
        fresh = said("r1", "after the restart")
        await after.add_event(fresh)
        assert fresh.id > ahead.id
        assert await after.list_events("r1") == [ahead, fresh]


_WRITER = """
import asyncio, sys
from tests.core.room_stores import Place
from roomkit.models.room import Room, RoomEvent, TextContent

async def main(kind: str, where: str, tag: str) -> None:
    store = Place(kind, where).rooms()
    async with store:
        if await store.get_room("r1") is None:
            await store.create_room(Room("r1"))
        for n in range(3):
            await store.add_event(RoomEvent("r1", "ws", "alice", TextContent(f"{tag}{n}")))

asyncio.run(main(*sys.argv[1:]))
"""


async def _run_writer(place: Place, tag: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _WRITER,
        place.kind,
        place.where,
        tag,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    _, errors = await process.communicate()
    assert process.returncode == 0, errors.decode()


async def test_a_new_process_never_reuses_an_event_id(place: Place, open_rooms: OpenRooms) -> None:
    await _run_writer(place, "first")
    await _run_writer(place, "second")

    async with open_rooms() as store:  # type: ignore[attr-defined]
        events = await store.list_events("r1")
    assert [e.content.body for e in events] == [
        f"{t}{n}" for t in ("first", "second") for n in range(3)
    ]
    ids = [e.id for e in events]
    assert ids == sorted(set(ids))


async def test_two_store_objects_on_one_store_see_each_others_writes(
    open_rooms: OpenRooms,
) -> None:
    async with open_rooms() as agent, open_rooms() as desk:  # type: ignore[attr-defined]
        await agent.create_room(Room("r1"))
        await desk.add_participant(Participant("alice", "r1"))
        event = said("r1", "hi")
        await agent.add_event(event)
        await agent.begin_turn(OpenTurn("t1", "r1", "agent", "alice"))

        with pytest.raises(ValueError, match="already exists"):
            await desk.create_room(Room("r1"))
        assert [p.id for p in await agent.list_participants("r1")] == ["alice"]
        assert await desk.recent_events("r1", 5) == [event]
        assert [t.turn_id for t in await desk.open_turns()] == ["t1"]
        await desk.end_turn("t1")
        assert await agent.open_turns() == []


async def test_the_store_opens_on_first_use_and_again_after_close(
    open_rooms: OpenRooms,
) -> None:
    store = open_rooms()
    await asyncio.gather(*(store.create_room(Room(f"r{n}")) for n in range(10)))
    await store.close()
    await store.close()

    assert [await store.get_room(f"r{n}") is not None for n in range(10)] == [True] * 10
    await store.close()


async def test_non_json_metadata_is_refused_and_nothing_is_stored(
    durable_store: DurableRoomStore,
) -> None:
    with pytest.raises(TypeError, match="Room metadata must be JSON-ready"):
        await durable_store.create_room(Room("r1", {"when": datetime.now(UTC)}))
    assert await durable_store.get_room("r1") is None


# -- SQLite: the file ------------------------------------------------------------------------


async def test_the_file_is_in_wal_mode_beside_other_tables(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE roomkit_pending (pending_id TEXT PRIMARY KEY)")
        other.execute("INSERT INTO roomkit_pending VALUES ('p1')")
    other.close()
    async with SQLiteRoomStore(path) as store:
        await store.create_room(Room("r1"))

    with sqlite3.connect(path) as check:
        [(mode,)] = check.execute("PRAGMA journal_mode").fetchall()
        tables = {
            name for (name,) in check.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        pending = check.execute("SELECT pending_id FROM roomkit_pending").fetchall()
    check.close()
    assert mode == "wal"
    assert tables == {"roomkit_pending", *_sqlite_rows.TABLES}
    assert pending == [("p1",)]


def _plan(path: Path, sql: str, params: tuple[Any, ...]) -> list[str]:
    with sqlite3.connect(path) as db:
        details = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    db.close()
    return details


async def test_room_reads_use_indexes_not_table_scans(sqlite_store: SQLiteRoomStore) -> None:
    """A read's cost does not grow with the room's age or the number of rooms."""
    await sqlite_store.create_room(Room("r1"))
    path = Path(sqlite_store.path)
    reads = {
        _sqlite_rows.GET_ROOM: ("r1",),
        _sqlite_rows.LIST_PARTICIPANTS: ("r1",),
        _sqlite_rows.LIST_BINDINGS: ("r1",),
        _sqlite_rows.ROOMS_FOR_CHANNEL: ("ws",),
        _sqlite_rows.LIST_EVENTS: ("r1", 50, 0),
        _sqlite_rows.RECENT_EVENTS: ("r1", 20),
        _sqlite_rows.LIST_STEPS: ("t1",),
        _sqlite_rows.LAST_EVENT_ID: (),
    }
    for sql, params in reads.items():
        plan = _plan(path, sql, params)
        scans = [d for d in plan if d.startswith("SCAN") and "subquery" not in d]
        assert scans == [], (sql, plan)
        if sql in (_sqlite_rows.LIST_EVENTS, _sqlite_rows.RECENT_EVENTS):
            assert not [d for d in plan if "TEMP" in d], (sql, plan)


@pytest.mark.parametrize(
    ("column", "value", "complaint"),
    [
        ("metadata", "{oops", "holds unreadable JSON"),
        ("metadata", "[1, 2]", "holds list, not a JSON object"),
        ("created_at", "last tuesday", "holds an unreadable timestamp"),
    ],
)
async def test_a_record_the_store_cannot_read_is_reported_as_corrupt(
    sqlite_store: SQLiteRoomStore, column: str, value: str, complaint: str
) -> None:
    await sqlite_store.create_room(Room("r1"))
    with sqlite3.connect(sqlite_store.path) as db:
        db.execute(f"UPDATE roomkit_rooms SET {column} = ? WHERE room_id = 'r1'", (value,))
    db.close()

    with pytest.raises(CorruptRecordError, match=f"room 'r1' {complaint}"):
        await sqlite_store.get_room("r1")


async def test_a_binding_group_that_is_not_a_string_is_reported_as_corrupt(
    sqlite_store: SQLiteRoomStore,
) -> None:
    await sqlite_store.create_room(Room("r1"))
    await sqlite_store.add_binding(ChannelBinding("r1", "agent", group="agents"))
    with sqlite3.connect(sqlite_store.path) as db:
        db.execute("UPDATE roomkit_bindings SET metadata = ?", ('{"roomkit:group": 3}',))
    db.close()

    with pytest.raises(CorruptRecordError, match="group that is not a string"):
        await sqlite_store.list_bindings("r1")


# -- SQLite: unavailable ----------------------------------------------------------------------


async def test_a_path_in_a_missing_directory_is_unavailable(tmp_path: Path) -> None:
    store = SQLiteRoomStore(tmp_path / "missing" / "rooms.db")

    with pytest.raises(StoreUnavailableError, match="check that the directory exists"):
        await store.get_room("r1")
    with pytest.raises(ConnectionError):
        await store.open()


async def test_a_file_that_is_not_a_database_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are not the tables you are looking for\n" * 200)

    with pytest.raises(StoreUnavailableError, match="names a SQLite database"):
        await SQLiteRoomStore(path).open()


async def test_a_write_lock_held_too_long_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "rooms.db"
    async with SQLiteRoomStore(path, busy_timeout=0) as store:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreUnavailableError, match="write lock"):
                await store.create_room(Room("r1"))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await store.create_room(Room("r1"))
        assert await store.get_room("r1") is not None


async def test_a_write_cancelled_while_it_waits_for_the_lock_leaves_no_transaction_open(
    tmp_path: Path,
) -> None:
    """Cancelled while its BEGIN waits for another connection's lock, a write is rolled back
    once that BEGIN gets through: the store's next write commits, for every connection."""
    path = tmp_path / "rooms.db"
    async with SQLiteRoomStore(path) as store, SQLiteRoomStore(path) as other:
        await store.create_room(Room("r"))
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        write = asyncio.create_task(store.record_inbound(said("r", "cancelled"), []))
        await asyncio.sleep(0)  # one turn of the loop: the write's BEGIN is queued, blocked
        write.cancel()
        holder.execute("ROLLBACK")
        holder.close()
        with pytest.raises(asyncio.CancelledError):
            await write

        await store.record_inbound(said("r", "kept"), [])
        await other.add_event(said("r", "from another connection"))
        events = await other.list_events("r")
    assert [event.content.body for event in events] == ["kept", "from another connection"]


def test_a_negative_busy_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="busy_timeout must be 0 or more"):
        SQLiteRoomStore("rooms.db", busy_timeout=-1)


# -- every durable store: the turn journal -----------------------------------------------------


async def test_a_durable_store_is_a_turn_journal(durable_store: DurableRoomStore) -> None:
    assert isinstance(durable_store, TurnJournal)
    assert type(durable_store).durable is True


async def test_steps_come_back_by_index_and_an_index_recorded_again_is_replaced(
    durable_store: DurableRoomStore,
) -> None:
    await durable_store.begin_turn(OpenTurn("t1", "r1", "agent", None))
    await durable_store.record_step("t1", JournalStep(1, "result", {"id": "c1", "text": "blue"}))
    await durable_store.record_step("t1", JournalStep(0, "response", {"calls": ["c1"]}))
    await durable_store.record_step("t1", JournalStep(1, "result", {"id": "c1", "text": "red"}))

    assert await durable_store.steps("t1") == [
        JournalStep(0, "response", {"calls": ["c1"]}),
        JournalStep(1, "result", {"id": "c1", "text": "red"}),
    ]
    assert await durable_store.steps("t2") == []


async def test_open_turns_are_oldest_first_and_a_turn_begun_again_keeps_its_place(
    durable_store: DurableRoomStore,
) -> None:
    for turn_id in ("t1", "t2", "t3"):
        await durable_store.begin_turn(OpenTurn(turn_id, "r1", "agent", "alice"))
    await durable_store.record_step("t1", JournalStep(0, "response", {}))
    again = OpenTurn("t1", "r1", "agent", "alice", {"resumed": True})
    await durable_store.begin_turn(again)

    turns = await durable_store.open_turns()
    assert [t.turn_id for t in turns] == ["t1", "t2", "t3"]
    assert turns[0] == again
    assert await durable_store.steps("t1") == [JournalStep(0, "response", {})]


async def test_end_turn_forgets_the_turn_and_its_steps(durable_store: DurableRoomStore) -> None:
    await durable_store.begin_turn(OpenTurn("t1", "r1", "agent", None))
    await durable_store.begin_turn(OpenTurn("t2", "r1", "agent", None))
    await durable_store.record_step("t1", JournalStep(0, "response", {"text": "hi"}))
    await durable_store.end_turn("t1")
    await durable_store.end_turn("never-begun")
    await durable_store.begin_turn(OpenTurn("t1", "r1", "agent", None))

    assert [t.turn_id for t in await durable_store.open_turns()] == ["t2", "t1"]
    assert await durable_store.steps("t1") == []


async def test_a_step_for_a_turn_not_begun_raises_key_error(
    durable_store: DurableRoomStore,
) -> None:
    with pytest.raises(KeyError, match="call begin_turn"):
        await durable_store.record_step("t9", JournalStep(0, "response", {}))
    assert await durable_store.steps("t9") == []


async def test_a_detached_channel_leaves_the_room_on_every_store(store: RoomStore) -> None:
    await store.create_room(Room("r"))
    await store.add_binding(ChannelBinding("r", "ai"))
    await store.add_binding(ChannelBinding("r", "ws"))

    assert await store.remove_binding("r", "ai") is True
    assert await store.remove_binding("r", "ai") is False

    assert [b.channel_id for b in await store.list_bindings("r")] == ["ws"]
    assert await store.rooms_for_channel("ai") == []


async def test_room_stores_opening_a_new_file_at_once_all_open(tmp_path: Path) -> None:
    """Switching a new file to WAL is not covered by the busy timeout: openers retry."""
    for trial in range(10):
        path = tmp_path / f"fresh-{trial}.db"
        stores = [SQLiteRoomStore(path) for _ in range(4)]
        try:
            await asyncio.gather(*(store.open() for store in stores))
            found = await asyncio.gather(*(store.get_room("none") for store in stores))
        finally:
            await asyncio.gather(*(store.close() for store in stores))
        assert found == [None, None, None, None]
