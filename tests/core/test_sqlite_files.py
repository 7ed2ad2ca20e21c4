"""A SQLite store's files deleted under it: the next write is refused, and nothing acknowledged
is lost when the process is killed afterwards.

The writer is another process (``sqlite_files_peer.py``, beside this file), killed with
SIGKILL at the end, so that nothing is checkpointed or closed on its way out. Both SQLite
stores are run: the pending-request store and the room store.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.sqlite import SQLiteRoomStore, SQLiteStore

PEER = Path(__file__).with_name("sqlite_files_peer.py")
COUNT = 100
BOUND = 60.0
"""Seconds the writer has to make its writes and report them."""


@dataclass
class Run:
    """What the writer reported."""

    acked: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


async def write_while_deleting(kind: str, database: Path, suffix: str) -> Run:
    """Run the writer, delete ``database + suffix`` between its two phases, then kill it."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PEER),
        kind,
        str(database),
        str(COUNT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    run = Run()
    try:
        async with asyncio.timeout(BOUND):
            while True:
                line = await process.stdout.readline()
                if not line:
                    _, errors = await process.communicate()
                    pytest.fail(f"the writer stopped: {errors.decode(errors='replace')}")
                message = json.loads(line)
                if "acked" in message:
                    run.acked.append(message["acked"])
                elif "refused" in message:
                    run.refused.append((message["refused"], message["error"]))
                elif message["ready"] == 1:
                    os.remove(f"{database}{suffix}")
                    process.stdin.write(b"go\n")
                    await process.stdin.drain()
                else:
                    break
    finally:
        process.kill()
        await process.wait()
    return run


async def kept(kind: str, database: Path) -> set[str]:
    """The writes found in the database once its writer is dead."""
    if kind == "pending":
        async with SQLiteStore(database) as store:
            keys = [f"w{phase}-{n}" for phase in (1, 2) for n in range(COUNT)]
            records = await store.fetch_many(keys)
        resolved = PendingInputStatus.RESOLVED
        return {r.pending_id for r in records if r.status is resolved and r.result == r.pending_id}
    async with SQLiteRoomStore(database) as rooms:
        return {event.content.body for event in await rooms.list_events("room", limit=10 * COUNT)}


@pytest.mark.parametrize("kind", ["pending", "rooms"])
@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
async def test_a_deleted_log_refuses_the_next_write_and_loses_nothing_acknowledged(
    kind: str, suffix: str, tmp_path: Path
) -> None:
    database = tmp_path / "store.db"

    run = await write_while_deleting(kind, database, suffix)

    first_refused, error = run.refused[0]
    assert first_refused == "w2-0"
    assert error.startswith("StoreUnavailableError")
    assert f"{database}{suffix}" in error
    assert "deleted or replaced" in error
    assert [key for key, _ in run.refused] == ["w2-0"]  # the store opened fresh files after
    assert len(run.acked) == 2 * COUNT - 1
    lost = set(run.acked) - await kept(kind, database)
    assert lost == set()


@pytest.mark.parametrize("kind", ["pending", "rooms"])
async def test_a_deleted_database_file_refuses_the_next_write(kind: str, tmp_path: Path) -> None:
    database = tmp_path / "store.db"

    run = await write_while_deleting(kind, database, "")

    first_refused, error = run.refused[0]
    assert first_refused == "w2-0"
    assert error.startswith("StoreUnavailableError")
    assert f"{database}' was deleted or replaced" in error
    # What follows goes to the new, empty file at the path: nothing is acknowledged as kept
    # in the old one.
    assert [key for key in run.acked if key.startswith("w2-")] == []
