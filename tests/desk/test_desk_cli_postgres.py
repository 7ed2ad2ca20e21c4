"""``roomkit desk --store postgresql://...``: the desk shares an agent's Postgres stores."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import psycopg
import pytest
from tests.desk.test_desk_cli import _started, clean_env, run
from tests.postgres_server import PostgresServer

from roomkit.desk.stores import open_stores

__all__ = ["clean_env"]


def test_both_postgres_url_schemes_name_the_postgres_stores() -> None:
    from roomkit.core.postgres_store import PostgresRoomStore
    from roomkit.tools.human_input.stores.postgres import PostgresStore

    for url in ("postgresql://app@db/app", "postgres://app@db/app"):
        pending, rooms = open_stores(url)
        assert isinstance(pending, PostgresStore)
        assert isinstance(rooms, PostgresRoomStore)


async def test_roomkit_desk_on_postgres_shows_a_question_asked_of_no_one_to_the_rooms_people(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_server: PostgresServer
) -> None:
    """The desk reads the rosters the agent keeps in Postgres: a question with no actor is
    listed to the room's participants, not to others."""
    from roomkit import RoomKit
    from roomkit.core.postgres_store import PostgresRoomStore
    from roomkit.tools.human_input import HumanInputHandler
    from roomkit.tools.human_input.stores.postgres import PostgresStore

    database = f"desk{os.urandom(4).hex()}"
    # A database of this test's own: the desk uses the default schema.
    async with await psycopg.AsyncConnection.connect(postgres_server.dsn, autocommit=True) as db:
        await db.execute(f'CREATE DATABASE "{database}"')
    dsn = postgres_server.dsn_for(database)
    kit = RoomKit(store=PostgresRoomStore(dsn))
    await kit.create_room("trip")
    await kit.add_participant("trip", "alice")
    store = PostgresStore(dsn, backstop_interval=0.05)
    asked = await HumanInputHandler(store=store).create(
        "AskUserQuestion", {"question": "Where?"}, room_id="trip"
    )
    data = str(tmp_path / "data")
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0", "--data-dir", data,
        "--store", dsn,
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        base = await _started(desk)
        _, alice, _ = await run(capsys, "token", "alice", "--data-dir", data)
        _, bob, _ = await run(capsys, "token", "bob", "--data-dir", data)
        seen = await run(capsys, "pending", "list", "--url", base, "--token", alice.strip())
        unseen = await run(capsys, "pending", "list", "--url", base, "--token", bob.strip())
    finally:
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
        await store.close()
        await kit.store.close()  # type: ignore[attr-defined]
    assert asked.pending_id in seen[1]
    assert unseen[0] == 0
    assert asked.pending_id not in unseen[1]
    assert desk.returncode == 0
