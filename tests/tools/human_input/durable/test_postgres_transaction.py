"""``aresolve(..., connection=conn)``: an answer that commits in the application's own
transaction on Postgres, and that every other store refuses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.postgres_server import PostgresServer
from tests.tools.human_input.durable.cross_process_peer import parked

from roomkit.core.exceptions import InvalidAnswerError
from roomkit.models.pending_input import PendingInputStatus, arguments_digest
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve, edit, reject
from roomkit.tools.human_input import HumanInputHandler


class Deployment:
    """An agent and a desk on one Postgres schema, and the application's own table."""

    def __init__(self, dsn: str, schema: str) -> None:
        self.dsn = dsn
        self.schema = schema
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
async def deployment(
    postgres_server: PostgresServer, postgres_schema: str
) -> AsyncIterator[Deployment]:
    made = Deployment(postgres_server.dsn, postgres_schema)
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


_PAY_SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "maximum": 100}},
    "required": ["amount"],
}


def _without_times(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history`` without what differs from one request to the next: times, places in the
    store and the chain of hashes."""
    return [{k: v for k, v in e.items() if k not in ("at", "seq", "prev")} for e in history]


async def test_a_bad_edit_is_refused_and_the_transaction_goes_on(
    deployment: Deployment,
) -> None:
    request = await deployment.agent.create_approval(
        "pay", {"amount": 10}, approvers=["ann"], tool_schema=_PAY_SCHEMA, room_id="r"
    )
    async with (
        await psycopg.AsyncConnection.connect(deployment.dsn) as conn,
        conn.transaction(),
    ):
        with pytest.raises(InvalidAnswerError, match="Invalid edit for 'pay'"):
            await deployment.desk.aresolve(
                request.pending_id, edit({"amount": 5000}), by="ann", connection=conn
            )
        # Refused before the database was touched: the application's transaction goes on.
        await conn.execute(
            f"INSERT INTO {deployment.table} VALUES (%s, 'refused')", (request.pending_id,)
        )
    assert await deployment.notes() == [(request.pending_id, "refused")]
    record = await deployment.desk.get_request(request.pending_id)
    assert record is not None
    assert record.status is PendingInputStatus.PENDING
    history = await deployment.desk.history(request.pending_id)
    assert [entry["type"] for entry in history] == ["created"]


async def test_no_decision_is_refused_in_the_transaction(deployment: Deployment) -> None:
    request = await deployment.agent.create_approval(
        "pay", {"amount": 10}, approvers=["ann"], tool_schema=_PAY_SCHEMA, room_id="r"
    )
    async with await psycopg.AsyncConnection.connect(deployment.dsn) as conn:
        with pytest.raises(InvalidAnswerError):
            await deployment.desk.aresolve(
                request.pending_id, '{"amount": 10}', by="ann", connection=conn
            )
    assert [r.pending_id for r in await deployment.desk.list_pending()] == [request.pending_id]


async def test_an_edit_in_the_transaction_records_what_aresolve_records(
    deployment: Deployment,
) -> None:
    made = [
        await deployment.agent.create_approval(
            "pay", {"amount": 10}, approvers=["ann"], tool_schema=_PAY_SCHEMA, room_id="r"
        )
        for _ in range(2)
    ]
    inside, outside = (request.pending_id for request in made)
    async with (
        await psycopg.AsyncConnection.connect(deployment.dsn) as conn,
        conn.transaction(),
    ):
        assert await deployment.desk.aresolve(
            inside, edit({"amount": 7}), by="ann", surface="app", connection=conn
        )
    assert await deployment.desk.aresolve(outside, edit({"amount": 7}), by="ann", surface="app")

    records = [await deployment.stores[0].fetch(pending_id) for pending_id in (inside, outside)]
    assert [(r.status, r.result, r.settled_by) for r in records if r is not None] == [
        (PendingInputStatus.RESOLVED, edit({"amount": 7}), "ann")
    ] * 2
    histories = [await deployment.desk.history(pending_id) for pending_id in (inside, outside)]
    assert _without_times(histories[0]) == _without_times(histories[1])
    decided = [entry for entry in histories[0] if entry["type"] == "decided"]
    assert decided[0]["digest"] == arguments_digest("pay", {"amount": 7})
    assert [entry["type"] for entry in histories[0]] == ["created", "decided", "settled"]


async def test_a_rejection_in_the_transaction_rejects_the_call(deployment: Deployment) -> None:
    request = await deployment.agent.create_approval(
        "pay", {"amount": 10}, approvers=["ann"], room_id="r"
    )
    async with (
        await psycopg.AsyncConnection.connect(deployment.dsn) as conn,
        conn.transaction(),
    ):
        assert await deployment.desk.aresolve(
            request.pending_id, reject("too much"), by="ann", connection=conn
        )
    record = await deployment.stores[0].fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.reject_reason) == (PendingInputStatus.REJECTED, "too much")


async def test_a_rolled_back_decision_leaves_the_approval_pending(
    deployment: Deployment,
) -> None:
    request = await deployment.agent.create_approval(
        "pay", {"amount": 10}, approvers=["ann"], room_id="r"
    )
    async with (
        await psycopg.AsyncConnection.connect(deployment.dsn) as conn,
        conn.transaction(force_rollback=True),
    ):
        assert await deployment.desk.aresolve(
            request.pending_id, approve(), by="ann", connection=conn
        )
    record = await deployment.desk.get_request(request.pending_id)
    assert record is not None
    assert record.status is PendingInputStatus.PENDING
    assert [e["type"] for e in await deployment.desk.history(request.pending_id)] == ["created"]
    assert await deployment.desk.aresolve(request.pending_id, approve(), by="ann") is True
