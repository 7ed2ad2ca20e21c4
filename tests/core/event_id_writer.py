"""A replica for the event-id tests: opens a room store, waits for a go, adds events.

``python event_id_writer.py KIND WHERE TAG COUNT``: opens the room store at ``KIND WHERE``
(as :class:`tests.core.room_stores.Place` names it), prints ``open``, waits for a line on
stdin (the test sends it once every replica has opened), then adds ``COUNT`` events to room
``r1``, each created just before it is stored, and prints their ids as one JSON list.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tests.core.room_stores import Place

from roomkit.models.room import RoomEvent, TextContent


async def main(kind: str, where: str, tag: str, count: int) -> None:
    store = Place(kind, where).rooms()
    async with store:  # type: ignore[attr-defined]
        print("open", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        ids = []
        for n in range(count):
            event = RoomEvent("r1", "ws", tag, TextContent(f"{tag} {n}"))
            await store.add_event(event)
            ids.append(event.id)
        print(json.dumps(ids), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
