"""Every durable store names each change since a look, and nothing else: what a waiter's
backstop reads instead of every request it waits on.

Each way a request changes (created, answered, refused, withdrawn, timed out, an answer that
met the deadline, voted on, edited, decided by a vote, an earlier deadline, settles sharing a
batch) is named by the next look from another store object on the same file or server; a
look after it names nothing. A look that cannot vouch for what changed says so.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from redis.asyncio import Redis
from tests.tools.human_input.stores.store_kit import (
    REJECTED,
    RESOLVED,
    TIMED_OUT,
    Backend,
    FakeClock,
    SQLiteBackend,
    Store,
    make_request,
)

from roomkit import HumanInputHandler
from roomkit.stores._durable_base import LISTED
from roomkit.stores.base import ChangeMark, ChangeTracking
from roomkit.stores.redis._changes import LOG_SIZE
from roomkit.tools.approvals import approve, edit


class Looks:
    """Looks at a store's change log from one mark to the next."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.mark: ChangeMark | None = None

    async def start(self) -> None:
        first = await self.store.changes_since(None)
        assert first.pending_ids is None  # nothing to vouch from yet
        self.mark = first.mark

    async def named(self) -> frozenset[str] | None:
        """What changed since the last look (``None``: the store cannot tell)."""
        changed = await self.store.changes_since(self.mark)
        self.mark = changed.mark
        return changed.pending_ids


@pytest.fixture
async def writer(backend: Backend, clock: FakeClock) -> AsyncIterator[Store]:
    async with backend.make(clock=clock) as store:
        yield store


@pytest.fixture
async def looks(backend: Backend, clock: FakeClock) -> AsyncIterator[Looks]:
    async with backend.make(clock=clock) as store:
        assert isinstance(store, ChangeTracking)
        looking = Looks(store)
        await looking.start()
        yield looking


async def test_a_look_after_nothing_changed_names_nothing(looks: Looks) -> None:
    assert await looks.named() == frozenset()
    assert await looks.named() == frozenset()


async def test_a_created_request_is_named_once(writer: Store, looks: Looks) -> None:
    request, _ = await writer.insert(make_request())

    assert await looks.named() == {request.pending_id}
    assert await looks.named() == frozenset()


async def test_a_request_created_with_a_key_is_named_once(writer: Store, looks: Looks) -> None:
    """The key index is the script's last key on Redis, after the chain's and the log's."""
    request, created = await writer.insert(make_request(key="order-7"))
    again, created_again = await writer.insert(make_request(key="order-7"))

    assert (created, created_again, again.pending_id) == (True, False, request.pending_id)
    assert await looks.named() == {request.pending_id}
    assert await looks.named() == frozenset()


@pytest.mark.parametrize(
    "outcome",
    [
        {"status": RESOLVED, "result": "yes", "settled_by": "bob"},
        {"status": REJECTED, "reason": "no"},
        {"status": REJECTED, "reason": "gone", "withdrawn": True},
    ],
    ids=["answered", "refused", "withdrawn"],
)
async def test_a_settle_is_named(writer: Store, looks: Looks, outcome: dict[str, object]) -> None:
    request, _ = await writer.insert(make_request())
    assert await looks.named() == {request.pending_id}

    assert await writer.settle(request.pending_id, **outcome) is not None  # type: ignore[arg-type]

    assert await looks.named() == {request.pending_id}
    assert await looks.named() == frozenset()


async def test_a_timeout_and_an_answer_that_met_the_deadline_are_named(
    writer: Store, looks: Looks, clock: FakeClock
) -> None:
    timed, _ = await writer.insert(make_request(deadline=clock() + 5))
    late, _ = await writer.insert(make_request(deadline=clock() + 5))
    await looks.named()
    clock.advance(10)

    assert await writer.settle(timed.pending_id, TIMED_OUT) is not None
    # The deadline came first: the store records the timeout in the answer's place.
    assert await writer.settle(late.pending_id, RESOLVED, result="too late") is None

    assert await looks.named() == {timed.pending_id, late.pending_id}


async def test_an_earlier_deadline_is_named_and_a_later_one_is_not(
    writer: Store, looks: Looks, clock: FakeClock
) -> None:
    request, _ = await writer.insert(make_request())
    await looks.named()

    assert await writer.set_deadline(request.pending_id, clock() + 60) == clock() + 60
    assert await looks.named() == {request.pending_id}
    assert await writer.set_deadline(request.pending_id, clock() + 120) == clock() + 60
    assert await looks.named() == frozenset()


async def test_votes_edits_and_the_deciding_vote_are_named(writer: Store, looks: Looks) -> None:
    handler = HumanInputHandler(store=writer)
    held = await handler.create_approval(
        "deploy", {"to": "staging"}, approvers=["ann", "bob", "cy"], quorum=3
    )
    pending_id = held.pending_id
    assert await looks.named() == {pending_id}

    assert await handler.aresolve(pending_id, edit({"to": "prod"}), by="ann")
    assert await looks.named() == {pending_id}
    assert await handler.aresolve(pending_id, approve(), by="bob")
    assert await looks.named() == {pending_id}
    assert await handler.aresolve(pending_id, approve(), by="cy")
    assert await looks.named() == {pending_id}
    record = await handler.get_request(pending_id)
    assert record is not None
    assert record.status is RESOLVED


async def test_settles_sharing_a_batch_are_all_named(writer: Store, looks: Looks) -> None:
    requests = [(await writer.insert(make_request()))[0] for _ in range(20)]
    await looks.named()

    settled = await asyncio.gather(
        *(writer.settle(request.pending_id, RESOLVED, result="ok") for request in requests)
    )

    assert all(record is not None for record in settled)
    assert await looks.named() == {request.pending_id for request in requests}


async def test_an_answer_from_a_handler_that_never_read_the_request_is_named(
    backend: Backend, writer: Store, looks: Looks
) -> None:
    """On PostgreSQL such an answer settles without a read first (``settle_plain``)."""
    request, _ = await writer.insert(make_request())
    await looks.named()

    async with backend.make() as elsewhere:
        assert await HumanInputHandler(store=elsewhere).aresolve(request.pending_id, "hi")

    assert await looks.named() == {request.pending_id}


async def test_more_changes_than_one_look_lists_leave_it_unable_to_tell(
    writer: Store, looks: Looks
) -> None:
    await asyncio.gather(*(writer.insert(make_request()) for _ in range(LISTED + 1)))

    assert await looks.named() is None
    assert await looks.named() == frozenset()


async def test_a_mark_the_store_did_not_give_is_refused(looks: Looks) -> None:
    for mark in ("7", (1.5,), (), (True,)):
        with pytest.raises(TypeError, match="mark"):
            await looks.store.changes_since(mark)  # type: ignore[arg-type]


# -- what only one store does -----------------------------------------------------------------


async def test_sqlite_a_counter_that_went_back_leaves_the_look_unable_to_tell(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The file was restored from an older copy: its counter is below the mark."""
    backend = SQLiteBackend(tmp_path / "pending.db")
    async with backend.make(clock=clock) as store:
        await store.insert(make_request())
        looks = Looks(store)
        await looks.start()
        with closing(sqlite3.connect(backend.path)) as db, db:
            db.execute("UPDATE roomkit_pending_seq SET value = 0")

        assert await looks.named() is None
        request, _ = await store.insert(make_request())
        # From the new counter on, the look names what changes again.
        assert request.pending_id in (await looks.named() or ())


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_redis_a_look_from_before_the_log_was_trimmed_cannot_tell(
    writer: Store, looks: Looks
) -> None:
    older = [(await writer.insert(make_request()))[0] for _ in range(3)]
    assert await looks.named() == {request.pending_id for request in older}

    # More changes than the log holds, each named once by a look that keeps up.
    for start in range(0, LOG_SIZE + 1, LISTED):
        count = min(LISTED, LOG_SIZE + 1 - start)
        await asyncio.gather(*(writer.insert(make_request()) for _ in range(count)))
        assert len(await looks.named() or ()) == count
    stale = Looks(looks.store)
    stale.mark = (looks.mark[0] - LOG_SIZE - 1, *looks.mark[1:])  # type: ignore[index]

    assert await stale.named() is None


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_redis_a_counter_that_went_back_leaves_the_look_unable_to_tell(
    writer: Store, looks: Looks, raw: Redis, prefix: str
) -> None:
    """The server lost its data (restarted without persistence)."""
    await writer.insert(make_request())
    await looks.named()
    await raw.delete(f"{prefix}:changes", f"{prefix}:changes:seq", f"{prefix}:changes:epoch")

    # The count starts again, and reaches the mark's number with another change.
    await writer.insert(make_request())
    assert await looks.named() is None
    assert await looks.named() == frozenset()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_postgres_a_change_that_commits_after_a_later_one_is_named(
    backend: Backend, writer: Store, looks: Looks
) -> None:
    """A transaction that took its id (and ``seq``) first commits last: the look between the
    two commits names the later one, and the next look names the first."""
    first, _ = await writer.insert(make_request())
    second, _ = await writer.insert(make_request())
    await looks.named()
    dsn = backend.dsn  # type: ignore[attr-defined]

    async with await psycopg.AsyncConnection.connect(dsn) as db, db.transaction():
        won = await writer.settle_in(  # type: ignore[union-attr]
            db, first.pending_id, RESOLVED, result="slow"
        )
        assert won is not None
        assert await writer.settle(second.pending_id, RESOLVED, result="fast") is not None
        assert await looks.named() == {second.pending_id}
        # Committed now, with a lower id and seq than the change the last look named.

    assert await looks.named() == {first.pending_id}
    assert await looks.named() == frozenset()
