"""The Postgres store's settles under load and its clock: concurrent settles share one
transaction, a bad one fails alone, batches of two processes that share requests never
deadlock, a plain settle leaves alone what needs its answer checked, and deadlines are
judged by the database server's clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import psycopg
import pytest
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.postgres_kit import PostgresBackend
from tests.tools.human_input.stores.store_kit import RESOLVED, make_request, public_fields

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores._records import FORMAT
from roomkit.stores.postgres import PostgresStore

TIMED_OUT = PendingInputStatus.TIMED_OUT


@pytest.fixture
async def backend(postgres_server: PostgresServer) -> AsyncIterator[PostgresBackend]:
    made = PostgresBackend(postgres_server.dsn)
    yield made
    await made.close()


async def rows(dsn: str, statement: str, *parameters: object) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
        cursor = await db.execute(statement, parameters)
        return list(await cursor.fetchall())


async def test_concurrent_settles_commit_in_one_transaction(backend: PostgresBackend) -> None:
    store = backend.make()
    requests = [(await store.insert(make_request()))[0] for _ in range(50)]
    ids = [request.pending_id for request in requests]

    won = await asyncio.gather(
        *(store.settle(pending_id, RESOLVED, result=pending_id) for pending_id in ids)
    )

    assert [record.result if record else None for record in won] == ids
    # Rows written by one transaction carry its id as their xmin.
    found = await rows(
        backend.dsn,
        f'SELECT count(DISTINCT xmin::text) FROM "{backend.schema}".roomkit_pending '
        "WHERE pending_id = ANY(%s)",
        ids,
    )
    assert found == [(1,)]


async def test_an_unreadable_record_fails_alone_in_its_batch(backend: PostgresBackend) -> None:
    store = backend.make()
    await store.open()
    await backend.write_foreign(format=FORMAT, arguments="{not json")
    others = [(await store.insert(make_request()))[0] for _ in range(5)]

    outcomes = await asyncio.gather(
        store.settle("alien", RESOLVED, result="x"),
        *(store.settle(other.pending_id, RESOLVED, result="y") for other in others),
        return_exceptions=True,
    )

    assert isinstance(outcomes[0], CorruptRecordError)
    assert [getattr(outcome, "result", None) for outcome in outcomes[1:]] == ["y"] * 5
    assert await backend.stored_status("alien") == "pending"


async def test_a_request_settled_twice_in_one_batch_has_one_winner(
    backend: PostgresBackend,
) -> None:
    store = backend.make()
    requests = [(await store.insert(make_request()))[0] for _ in range(10)]

    outcomes = await asyncio.gather(
        *(
            store.settle(request.pending_id, RESOLVED, result=f"{request.pending_id}:{n}")
            for n in range(3)
            for request in requests
        )
    )

    winners = [outcome for outcome in outcomes if outcome is not None]
    assert sorted(winner.pending_id for winner in winners) == sorted(
        request.pending_id for request in requests
    )
    for winner in winners:
        stored = await store.fetch(winner.pending_id)
        assert stored is not None
        assert stored.result == winner.result


async def test_batches_of_two_stores_sharing_requests_take_turns(
    backend: PostgresBackend,
) -> None:
    """Two stores (as two processes) settle the same requests in opposite orders."""
    first, second = backend.make(), backend.make()
    requests = [(await first.insert(make_request()))[0] for _ in range(200)]
    ids = [request.pending_id for request in requests]

    async def settle_all(store: PostgresStore, order: list[str], name: str) -> list[str]:
        won = await asyncio.gather(
            *(store.settle(pending_id, RESOLVED, result=name) for pending_id in order)
        )
        return [record.pending_id for record in won if record is not None]

    a, b = await asyncio.gather(settle_all(first, ids, "a"), settle_all(second, ids[::-1], "b"))

    assert sorted(a + b) == sorted(ids)
    assert not set(a) & set(b)


async def test_a_plain_settle_leaves_what_needs_checking_to_its_caller(
    backend: PostgresBackend,
) -> None:
    """A request with an answer schema, or an approval, comes back pending; a question
    settles in the same batch."""
    store = backend.make()
    schema = {"type": "object"}
    checked = (await store.insert(make_request(answer_schema=schema)))[0]
    approval = (await store.insert(make_request(kind="approval", approvers=("alice",))))[0]
    question = (await store.insert(make_request()))[0]

    outcomes = await asyncio.gather(
        *(
            store.settle_plain(request.pending_id, "{}", settled_by="bob")
            for request in (checked, approval, question)
        )
    )

    (won_checked, left_checked), (won_approval, left_approval), (won, left) = outcomes
    assert won_checked is None
    assert won_approval is None
    assert left_checked is not None
    assert left_checked.answer_schema == schema
    assert left_approval is not None
    assert left_approval.kind == "approval"
    assert {left_checked.status, left_approval.status} == {PendingInputStatus.PENDING}
    assert won is not None
    assert left is not None
    assert public_fields(won) == public_fields(left)
    assert (won.status, won.result, won.settled_by) == (RESOLVED, "{}", "bob")
    lost, stored = await store.settle_plain(question.pending_id, "{}", settled_by="bob")
    assert lost is None
    assert stored is not None
    assert public_fields(stored) == public_fields(won)
    assert await store.settle_plain("missing", "{}") == (None, None)


async def test_deadlines_are_judged_by_the_servers_clock(
    backend: PostgresBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process whose own clock runs an hour ahead neither sets deadlines an hour late nor
    records a timeout an hour early."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)
    store = backend.make()
    await store.open()
    request, _ = await store.insert(make_request())
    [(server_now,)] = await rows(
        backend.dsn, "SELECT extract(epoch FROM clock_timestamp())::double precision"
    )
    assert isinstance(server_now, float)

    deadline = await store.set_deadline(request.pending_id, store.clock() + 600)

    assert deadline is not None
    assert server_now + 540 < deadline < server_now + 660
    assert await store.settle(request.pending_id, TIMED_OUT) is None
    assert await backend.stored_status(request.pending_id) == "pending"


async def test_a_given_clock_judges_the_deadlines(backend: PostgresBackend) -> None:
    """With ``clock=``, the store's clock decides (as a test's fake clock needs)."""
    now = [time.time() + 86_400]
    store = backend.make(clock=lambda: now[0])
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, now[0] + 10)

    assert await store.settle(request.pending_id, TIMED_OUT) is None
    now[0] += 10
    won = await store.settle(request.pending_id, TIMED_OUT)

    assert won is not None
    assert won.status is TIMED_OUT
