"""A wait in one OS process, the answer in another, on SQLite, Redis and Postgres.

The other process runs ``cross_process_peer.main`` (beside this file), forked from one that
imported it (:mod:`tests.forked_processes`), and reports in JSON lines; see that module for
what it says.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests import forked_processes
from tests.tools.human_input.durable import cross_process_peer
from tests.tools.human_input.durable.cross_process_peer import feed_live, parked

from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler

BOUND = 30.0
"""Seconds a test gives the other processes to start, answer and report."""


@dataclass(frozen=True)
class SharedStore:
    """A store two processes open: its kind, its file or URL, and its key prefix."""

    kind: str
    location: str
    prefix: str

    def open(self) -> Any:
        if self.kind == "sqlite":
            from roomkit.stores.sqlite import SQLiteStore

            return SQLiteStore(self.location, backstop_interval=0.05)
        if self.kind == "postgres":
            from roomkit.stores.postgres import PostgresStore

            return PostgresStore(self.location, schema=self.prefix, backstop_interval=0.25)
        from roomkit.stores.redis import RedisStore

        return RedisStore(self.location, prefix=self.prefix, backstop_interval=0.25)

    def args(self) -> list[str]:
        return [self.kind, self.location, self.prefix]


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> SharedStore:
    if request.param == "postgres":
        dsn = request.getfixturevalue("postgres_server").dsn
        return SharedStore("postgres", dsn, request.getfixturevalue("postgres_schema"))
    prefix = f"xp{os.urandom(4).hex()}"
    if request.param == "sqlite":
        return SharedStore("sqlite", str(tmp_path / "pending.db"), prefix)
    return SharedStore("redis", request.getfixturevalue("redis_server").url, prefix)


class Peer:
    """The other process: started, read line by line, and checked for a clean exit (its
    traceback, should it fail, is in the test's standard error)."""

    def __init__(self, process: forked_processes.Peer) -> None:
        self.process = process

    @classmethod
    async def start(cls, mode: str, shared: SharedStore, *rest: str) -> Peer:
        main = cross_process_peer.main
        root = forked_processes.ROOT
        return cls(await forked_processes.start(main, root, mode, *shared.args(), *rest))

    async def read(self) -> dict[str, Any]:
        line = await self.process.stdout.readline()
        if not line:
            await self.finish()
            pytest.fail("the other process stopped before it reported")
        message: dict[str, Any] = json.loads(line)
        return message

    async def finish(self) -> None:
        await self.process.communicate()
        assert self.process.returncode == 0

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
        await self.process.wait()


async def test_an_answer_here_ends_a_wait_in_another_process(shared: SharedStore) -> None:
    store = shared.open()
    # Opened before the other process starts: two processes creating a new SQLite file at
    # once can find it locked.
    await store.open()
    handler = HumanInputHandler(store=store)
    peer = await Peer.start("wait", shared, "30", "30", "0.3")
    try:
        async with asyncio.timeout(BOUND):
            await feed_live(handler, shared.kind)
            answered, rejected, forgotten = (await peer.read())["ready"]

            assert await handler.aresolve(answered, "yes", by="here") is True
            assert await handler.areject(rejected, "not now", by="here") is True
            outcomes = {}
            for _ in range(3):
                message = await peer.read()
                outcomes[message["id"]] = message["outcome"]
            await peer.finish()
    finally:
        await peer.stop()

    assert outcomes == {
        answered: ["answer", "yes"],
        rejected: ["rejected", "not now"],
        forgotten: ["timeout", ""],
    }
    # The other process recorded its deadline in the store: an answer now comes too late.
    assert await handler.aresolve(forgotten, "too late") is False
    record = await handler.get_request(forgotten)
    assert record is not None
    assert record.status is PendingInputStatus.TIMED_OUT
    await handler.close()
    await store.close()


async def test_two_other_processes_race_to_answer_and_one_wins_each(
    shared: SharedStore,
) -> None:
    store = shared.open()
    handler = HumanInputHandler(store=store)
    requests = [
        await handler.create("AskUserQuestion", {"question": f"q{n}"}, room_id="here")
        for n in range(20)
    ]
    ids = [request.pending_id for request in requests]
    waits = {
        pending_id: asyncio.create_task(handler.wait(pending_id, timeout=BOUND))
        for pending_id in ids
    }
    peers: list[Peer] = []
    try:
        async with asyncio.timeout(BOUND):
            await feed_live(handler, shared.kind)
            await parked(handler, len(ids))
            for name in ("left", "right"):
                peers.append(await Peer.start("answer", shared, name, *ids))
            won: dict[str, list[str]] = {pending_id: [] for pending_id in ids}
            for peer, name in zip(peers, ("left", "right"), strict=True):
                for _ in ids:
                    message = await peer.read()
                    if message["won"]:
                        won[message["id"]].append(name)
                await peer.finish()
            results = {pending_id: await wait for pending_id, wait in waits.items()}
    finally:
        for peer in peers:
            await peer.stop()

    for pending_id in ids:
        assert len(won[pending_id]) == 1, won[pending_id]
        (winner,) = won[pending_id]
        assert results[pending_id] == f"{winner}: {pending_id}"
        record = await handler.get_request(pending_id)
        assert record is not None
        assert record.settled_by == winner
    await handler.close()
    await store.close()
