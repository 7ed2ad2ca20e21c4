"""A process writing to a SQLite store while the test deletes one of the store's files.

Run as a script, it speaks JSON, one object per line on stdout::

    python sqlite_files_peer.py pending|rooms DATABASE COUNT

It makes COUNT writes (``pending``: answers requests it created first on a ``SQLiteStore``;
``rooms``: adds events to a room of a ``SQLiteRoomStore``), printing ``{"acked": key}`` for
each one acknowledged, then ``{"ready": 1}``, and waits for a line on stdin (the test deletes
a file meanwhile). It then makes COUNT more writes, printing ``{"acked": key}`` or
``{"refused": key, "error": "ErrorType: message"}`` for each, then ``{"ready": 2}``, and waits to be
killed: it never closes the store, so nothing is checkpointed on the way out.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.room import Room, RoomEvent, TextContent
from roomkit.stores.sqlite import SQLiteRoomStore, SQLiteStore

ROOM = "room"


def say(**message: object) -> None:
    print(json.dumps(message), flush=True)


def keys(count: int) -> list[list[str]]:
    """The keys of the writes of each phase."""
    return [[f"w{phase}-{n}" for n in range(count)] for phase in (1, 2)]


async def pending_writer(path: str, count: int) -> Callable[[str], Awaitable[None]]:
    """Creates a request per key first; one write then answers the request ``key``."""
    store = SQLiteStore(path)
    for key in (key for phase in keys(count) for key in phase):
        await store.insert(PendingInput(key, "AskUserQuestion", {"q": "?"}, ROOM, key, "ai"))

    async def write(key: str) -> None:
        if await store.settle(key, PendingInputStatus.RESOLVED, result=key) is None:
            raise LookupError(f"the settle of {key} found no open request")

    return write


async def rooms_writer(path: str, count: int) -> Callable[[str], Awaitable[None]]:
    """One write adds an event saying ``key`` to the room."""
    store = SQLiteRoomStore(path)
    await store.create_room(Room(ROOM))

    async def write(key: str) -> None:
        await store.add_event(RoomEvent(ROOM, "ws", "alice", TextContent(key)))

    return write


async def main(kind: str, path: str, count: int) -> None:
    write = await (pending_writer if kind == "pending" else rooms_writer)(path, count)
    for phase, phase_keys in enumerate(keys(count), start=1):
        for key in phase_keys:
            try:
                await write(key)
            except Exception as error:
                say(refused=key, error=f"{type(error).__name__}: {error}")
            else:
                say(acked=key)
        say(ready=phase)
        await asyncio.to_thread(sys.stdin.readline)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
