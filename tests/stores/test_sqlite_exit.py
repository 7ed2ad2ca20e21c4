"""A program that ends without closing its SQLite stores still exits, its writes kept."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

PROGRAM = textwrap.dedent(
    """
    import asyncio, sys
    from roomkit.models.room import Room
    from roomkit.stores.sqlite import SQLiteRoomStore, SQLiteStore
    from roomkit.tools.human_input import HumanInputHandler

    kept = []  # held to the end, as a long-lived application holds its stores

    async def main(path):
        store, rooms = SQLiteStore(path), SQLiteRoomStore(path)
        kept.extend([store, rooms])
        handler = HumanInputHandler(store=store)
        asked = await handler.create("AskUserQuestion", {"question": "Colour?"}, room_id="r")
        await handler.aresolve(asked.pending_id, "blue")
        await rooms.create_room(Room("r"))
        print(await handler.wait(asked.pending_id), flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)


def test_a_program_that_never_closes_its_stores_exits_with_its_writes_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kit.db"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(path)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,  # a hang, not a timing: the program ends in well under a second
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "blue"
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM roomkit_rooms").fetchone() == (1,)
        assert db.execute("SELECT status FROM roomkit_pending").fetchall() == [("resolved",)]
