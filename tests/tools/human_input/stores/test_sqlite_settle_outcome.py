"""A SQLite settle whose commit fails learns its outcome; files from before settle tokens
gain the column they keep them in.

A COMMIT that fails with an I/O error leaves the store unable to tell from the error
whether the transaction reached the disk, so the settle runs again with its token. The
fault is real: a process whose files may not grow (``RLIMIT_FSIZE``) cannot append its
commit to the write-ahead log. It runs in a process of its own, since the limit binds
every file the process writes.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import pytest
from tests.tools.human_input.stores.store_kit import (
    PATIENCE,
    RESOLVED,
    make_request,
    sqlite_insert_raw,
)

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.sqlite import SQLiteStore
from roomkit.stores.sqlite import _schema as sql

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="file-size limits are a POSIX resource"
)

SETTLE_ON_A_FULL_DISK = """
import asyncio, json, logging, resource, sys
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import settled_entry
from roomkit.stores.sqlite import SQLiteStore

async def main(path, retry):
    retrying = asyncio.Event()

    class Sentinel(logging.Handler):
        def emit(self, record):
            if "may or may not have landed" in record.getMessage():
                retrying.set()

    log = logging.getLogger("roomkit.tools.human_input.stores.sqlite")
    log.setLevel(logging.INFO)
    log.addHandler(Sentinel())
    async with SQLiteStore(path, settle_retry=float(retry)) as store:
        request = PendingInput("p1", "AskUserQuestion", {"question": "?"}, "room", "call", "ai")
        await store.insert(request)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        # No file may grow past its first byte: the commit cannot reach the log.
        resource.setrlimit(resource.RLIMIT_FSIZE, (1, hard))
        settling = asyncio.ensure_future(
            store.settle("p1", PendingInputStatus.RESOLVED, result="kept", settled_by="alice",
                         history=[settled_entry("resolved", actor="alice")])
        )
        await asyncio.wait([settling, asyncio.ensure_future(retrying.wait())],
                           return_when=asyncio.FIRST_COMPLETED)
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        try:
            record = await settling
        except Exception as error:
            print(json.dumps({"error": type(error).__name__, "message": str(error)}))
            return
    print(json.dumps({"won": record is not None}))

asyncio.run(main(*sys.argv[1:]))
"""
"""Run with ``path retry``: settles ``p1`` while no file may grow, lifts the limit once the
store runs the settle again, and prints what the settle returned or raised, as JSON."""


async def settle_on_a_full_disk(path: Path, retry: float) -> dict[str, object]:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SETTLE_ON_A_FULL_DISK,
        str(path),
        str(retry),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(PATIENCE):
        out, err = await child.communicate()
    assert child.returncode == 0, err.decode()
    told: dict[str, object] = json.loads(out.decode().strip().splitlines()[-1])
    return told


async def test_a_settle_whose_commit_failed_runs_again_and_reports_that_it_won(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"

    told = await settle_on_a_full_disk(path, PATIENCE)

    assert told == {"won": True}
    async with SQLiteStore(path) as store:
        record = await store.fetch("p1")
        history = await store.read_history("p1")
    assert record is not None
    assert (record.status, record.result, record.settled_by) == (RESOLVED, "kept", "alice")
    # Run again, the settle found its token: its entry went in with the first commit, once.
    assert [(entry["type"], entry["actor"]) for entry in history] == [("settled", "alice")]


async def test_a_settle_that_cannot_commit_in_time_says_its_outcome_is_unknown(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"

    told = await settle_on_a_full_disk(path, 0)

    assert told["error"] == StoreUnavailableError.__name__
    assert "unknown" in str(told["message"])
    async with SQLiteStore(path) as store:
        record = await store.fetch("p1")
        assert record is not None
        assert record.status is not RESOLVED
        # Nothing was recorded: the answer sent again wins now.
        assert await store.settle("p1", RESOLVED, result="kept") is not None


# -- files from before settle tokens -----------------------------------------------------------


def make_old_file(path: Path) -> None:
    """A file as the store wrote it before settle tokens (and announcements) were kept."""
    old_schema = sql.SCHEMA.replace(",\n    unannounced INTEGER,\n    settle_token TEXT", "")
    assert old_schema != sql.SCHEMA
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.executescript(old_schema)
    sqlite_insert_raw(path, pending_id="old")


def columns(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        return {row[1] for row in db.execute("PRAGMA table_info(roomkit_pending)")}


async def test_an_old_file_gains_the_token_column_and_keeps_its_records(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    make_old_file(path)
    assert "settle_token" not in columns(path)

    async with SQLiteStore(path) as store:
        first = await store.settle("old", RESOLVED, result="yes", token="t-1")
        again = await store.settle("old", RESOLVED, result="yes", token="t-1")

    assert {"settle_token", "unannounced"} <= columns(path)
    assert first is not None
    assert again is not None


async def test_stores_opening_an_old_file_at_once_all_bring_it_up_to_date(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    make_old_file(path)
    stores = [SQLiteStore(path) for _ in range(4)]
    try:
        await asyncio.gather(*(store.open() for store in stores))
        request, _ = await stores[0].insert(make_request())
        assert await stores[1].settle(request.pending_id, RESOLVED, result="x") is not None
    finally:
        for store in stores:
            await store.close()
