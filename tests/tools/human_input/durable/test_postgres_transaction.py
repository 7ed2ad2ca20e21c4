"""``aresolve(..., connection=conn)``: an answer that commits in the application's own
transaction on Postgres, and that every other store refuses."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from tests.postgres_server import PostgresServer
from tests.tools.human_input.durable.cross_process_peer import parked

from roomkit.core.exceptions import InvalidAnswerError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores.postgres import PostgresStore
from roomkit.tools.human_input.stores.sqlite import SQLiteStore


class Deployment:
    """An agent and a desk on one Postgres schema, and the application's own table."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.schema = f"tx{os.urandom(4).hex()}"
        self.stores = [PostgresStore(dsn, schema=self.schema) for _ in range(2)]
        self.agent = HumanInputHandler(store=self.stores[0])
        self.desk = HumanInputHandler(store=self.stores[1])
        self.table = f'"{self.schema}".approvals'

    async def open(self) -> None:
        for store in self.stores:
            await store.open()
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as db:
            await db.execute(f"CREATE TABLE {self.table} (pending_id text, note text)")

    async def notes(self) -> list[tuple[str, str]]:
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as db:
            cursor = await db.execute(f"SELECT pending_id, note FROM {self.table}")
            return [(str(a), str(b)) for a, b in await cursor.fetchall()]

    async def close(self) -> None:
        await self.agent.close()
        for store in self.stores:
            await store.close()


@pytest.fixture
async def deployment(postgres_server: PostgresServer) -> AsyncIterator[Deployment]:
    made = Deployment(postgres_server.dsn)
    await made.open()
    yield made
    await made.close()


async def test_the_answer_and_the_application_write_commit_together(
    deployment: Deployment,
) -> None:
    request = await deployment.agent.create("Approve", {"amount": 10}, room_id="r")
    waiting = asyncio.create_task(deployment.agent.wait(request.pending_id, timeout=30))
    await parked(deployment.agent, 1)

    async with await psycopg.AsyncConnection.connect(deployment.dsn) as conn:
        async with conn.transaction():
            await conn.execute(
                f"INSERT INTO {deployment.table} VALUES (%s, 'approved')", (request.pending_id,)
            )
            won = await deployment.desk.aresolve(
                request.pending_id, "yes", by="alice", connection=conn
            )
            assert won is True
            # Not committed yet: every other connection still sees the request open.
            seen = await deployment.stores[1].fetch(request.pending_id)
            assert seen is not None
            assert seen.status is PendingInputStatus.PENDING
            assert not waiting.done()
        # Committed: the waiter wakes with the answer, and the application's row is there.
        assert await waiting == "yes"
    assert await deployment.notes() == [(request.pending_id, "approved")]
    record = await deployment.stores[0].fetch(request.pending_id)
    assert record is not None
    assert record.settled_by == "alice"


async def test_a_rollback_leaves_the_request_pending(deployment: Deployment) -> None:
    request = await deployment.agent.create("Approve", {"amount": 10}, room_id="r")

    async with (
        await psycopg.AsyncConnection.connect(deployment.dsn) as conn,
        conn.transaction(force_rollback=True),
    ):
        await conn.execute(
            f"INSERT INTO {deployment.table} VALUES (%s, 'approved')", (request.pending_id,)
        )
        assert await deployment.desk.aresolve(
            request.pending_id, "yes", by="alice", connection=conn
        )

    assert await deployment.notes() == []
    assert [r.pending_id for r in await deployment.desk.list_pending()] == [request.pending_id]
    assert await deployment.desk.aresolve(request.pending_id, "no", by="bob") is True
    assert await deployment.agent.wait(request.pending_id, timeout=30) == "no"


async def test_a_racing_answer_elsewhere_loses_to_the_committed_transaction(
    deployment: Deployment,
) -> None:
    request = await deployment.agent.create("Approve", {"amount": 10}, room_id="r")

    async with await psycopg.AsyncConnection.connect(deployment.dsn) as conn:
        async with conn.transaction():
            assert await deployment.desk.aresolve(
                request.pending_id, "yes", by="alice", connection=conn
            )
            # The row stays locked until the commit: an answer sent meanwhile loses.
            racing = asyncio.create_task(
                deployment.agent.aresolve(request.pending_id, "no", by="bob")
            )
        assert await racing is False

    record = await deployment.stores[0].fetch(request.pending_id)
    assert record is not None
    assert (record.result, record.settled_by) == ("yes", "alice")


async def test_an_answer_that_breaks_its_schema_is_refused_in_the_transaction(
    deployment: Deployment,
) -> None:
    request = await deployment.agent.create(
        "Approve",
        {"amount": 10},
        room_id="r",
        answer_schema={"type": "object", "required": ["ok"]},
    )
    async with await psycopg.AsyncConnection.connect(deployment.dsn) as conn:
        with pytest.raises(InvalidAnswerError):
            await deployment.desk.aresolve(request.pending_id, "{}", connection=conn)
    assert [r.pending_id for r in await deployment.desk.list_pending()] == [request.pending_id]


async def test_a_vote_on_a_quorum_cannot_join_a_transaction(deployment: Deployment) -> None:
    request = await deployment.agent.create_approval(
        "pay", {"amount": 10}, approvers=["ann", "bob"], quorum=2, room_id="r"
    )
    async with await psycopg.AsyncConnection.connect(deployment.dsn) as conn:
        with pytest.raises(TypeError, match="quorum approval"):
            await deployment.desk.aresolve(request.pending_id, approve(), by="ann", connection=conn)
    record = await deployment.desk.get_request(request.pending_id)
    assert record is not None
    assert (record.status, record.votes) == (PendingInputStatus.PENDING, ())


async def test_a_connection_that_is_not_psycopg_is_refused(deployment: Deployment) -> None:
    request = await deployment.agent.create("Approve", {"amount": 10}, room_id="r")
    with pytest.raises(TypeError, match=r"psycopg\.AsyncConnection"):
        await deployment.desk.aresolve(request.pending_id, "yes", connection=object())


async def test_other_stores_refuse_a_connection(tmp_path: Path) -> None:
    memory = HumanInputHandler()
    store = SQLiteStore(tmp_path / "pending.db")
    durable = HumanInputHandler(store=store)
    try:
        for handler in (memory, durable):
            request = await handler.create("Approve", {}, room_id="r")
            with pytest.raises(TypeError, match="only PostgresStore offers"):
                await handler.aresolve(request.pending_id, "yes", connection=object())
            assert [r.pending_id for r in await handler.list_pending()] == [request.pending_id]
    finally:
        await memory.close()
        await durable.close()
        await store.close()
