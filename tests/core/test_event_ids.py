"""Event ids stay distinct across the processes open on one durable room store at once.

Each test starts real processes (``event_id_writer.py``) on one store, SQLite, Redis or
PostgreSQL, written first as a store of an earlier version was: small event ids, and no
counter of node numbers.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys

from tests.core.conftest import OpenRooms
from tests.core.room_stores import Place

from roomkit.models.room import Room, RoomEvent, TextContent

_OLD = 5
"""The largest id the store holds before the replicas open it."""


async def _write_an_old_store(place: Place, open_rooms: OpenRooms) -> list[RoomEvent]:
    """Room ``r1`` with events 1 to :data:`_OLD`, and no node counter, as before node ids."""
    old = [
        RoomEvent("r1", "ws", "alice", TextContent(f"old {n}"), id=n) for n in range(1, _OLD + 1)
    ]
    async with open_rooms() as store:  # type: ignore[attr-defined]
        await store.create_room(Room("r1"))
        for event in old:
            await store.add_event(event)
    if place.kind == "sqlite":
        with sqlite3.connect(place.where) as db:
            db.execute("DROP TABLE IF EXISTS roomkit_event_nodes")
        db.close()
    elif place.kind == "redis":
        from redis.asyncio import Redis

        url, _, prefix = place.where.partition("#")
        raw = Redis.from_url(url)
        await raw.delete(f"{prefix}:rooms:event-nodes")
        await raw.aclose()
    else:
        import psycopg

        dsn, _, schema = place.where.partition("#")
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
            await db.execute(f'DROP SEQUENCE IF EXISTS "{schema}".roomkit_event_nodes')
    return old


async def _replica(place: Place, tag: str, count: int) -> asyncio.subprocess.Process:
    """A process that has opened the store and waits for its go."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.core.event_id_writer",
        place.kind,
        place.where,
        tag,
        str(count),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert process.stdout is not None
    if await process.stdout.readline() != b"open\n":
        _, errors = await process.communicate()
        raise AssertionError(f"replica {tag} did not open the store: {errors.decode()}")
    return process


async def _ids(process: asyncio.subprocess.Process) -> list[int]:
    """Send the go; the ids of the events the replica added."""
    out, errors = await process.communicate(b"go\n")
    assert process.returncode == 0, errors.decode()
    ids = json.loads(out)
    assert isinstance(ids, list)
    return ids


async def test_replicas_open_at_once_never_share_an_event_id(
    place: Place, open_rooms: OpenRooms
) -> None:
    """Two processes open on one store, adding events at the same time, hand out distinct
    ids, each its own increasing, all above the ids stored before they opened."""
    old = await _write_an_old_store(place, open_rooms)
    count = 40
    # Both open the store before either adds an event: each reads the same largest id.
    first, second = await _replica(place, "one", count), await _replica(place, "two", count)
    ids_one, ids_two = await asyncio.gather(_ids(first), _ids(second))

    everything = ids_one + ids_two
    assert len(set(everything)) == 2 * count
    assert ids_one == sorted(ids_one)
    assert ids_two == sorted(ids_two)
    assert min(everything) > _OLD
    assert max(everything) < 2**53
    async with open_rooms() as store:  # type: ignore[attr-defined]
        stored = await store.list_events("r1", limit=1000)
        fresh = RoomEvent("r1", "ws", "alice", TextContent("after the replicas"))
        await store.add_event(fresh)
    assert stored[: len(old)] == old
    by_replica = {tag: [e.id for e in stored if e.sender_id == tag] for tag in ("one", "two")}
    assert by_replica == {"one": ids_one, "two": ids_two}
    assert fresh.id > max(everything)


async def test_a_replica_started_later_goes_on_above_every_stored_id(
    place: Place, open_rooms: OpenRooms
) -> None:
    """A process opening a store that replicas wrote with node ids starts above them all."""
    await _write_an_old_store(place, open_rooms)
    earlier = await _ids(await _replica(place, "one", 3))
    later = await _ids(await _replica(place, "two", 3))

    assert min(later) > max(earlier) > _OLD
