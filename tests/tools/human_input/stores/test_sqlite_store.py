"""The SQLite store on its own: records, the check-and-set, deadlines, retention, the change
feed across store objects and processes, and its faults."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from roomkit.core.exceptions import CorruptRecordError, StoreError, StoreUnavailableError
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input.stores import DurableStore, PendingChange, PendingChangeKind
from roomkit.tools.human_input.stores._records import FIELDS
from roomkit.tools.human_input.stores.sqlite import SQLiteStore

RESOLVED = PendingInputStatus.RESOLVED
REJECTED = PendingInputStatus.REJECTED
TIMED_OUT = PendingInputStatus.TIMED_OUT
PENDING = PendingInputStatus.PENDING
CREATED = PendingChangeKind.CREATED
SETTLED = PendingChangeKind.SETTLED
RESYNC = PendingChangeKind.RESYNC

LOGGER = "roomkit.tools.human_input.stores.sqlite"
PATIENCE = 30.0
"""Seconds a test waits for an event the store's real-time feed should deliver."""


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


_ids = iter(range(1_000_000))


def make_request(**overrides: Any) -> PendingInput:
    values: dict[str, Any] = {
        "pending_id": f"p{next(_ids)}",
        "tool_name": "AskUserQuestion",
        "arguments": {"question": "Colour?"},
        "room_id": "room-1",
        "tool_call_id": "call-1",
        "channel_id": "ai-1",
    }
    values.update(overrides)
    return PendingInput(**values)


def public_fields(record: PendingInput) -> dict[str, Any]:
    return {
        field.name: getattr(record, field.name)
        for field in dataclasses.fields(record)
        if not field.name.startswith("_")
    }


def stored_ids(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        return {row[0] for row in db.execute("SELECT pending_id FROM roomkit_pending")}


def insert_raw(path: Path, **overrides: object) -> None:
    values: dict[str, object] = dict.fromkeys(FIELDS)
    values.update(
        {
            "format": "roomkit.pending.v1",
            "pending_id": "alien",
            "tool_name": "t",
            "arguments": "{}",
            "room_id": "",
            "tool_call_id": "",
            "channel_id": "",
            "status": "pending",
            "detached": 0,
            "created_at": "2024-01-01T00:00:00+00:00",
            "channel_type": "ai",
            "withdrawn": 0,
        }
    )
    values.update(overrides)
    columns = ", ".join(f'"{name}"' for name in values)
    marks = ", ".join("?" for _ in values)
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            f"INSERT INTO roomkit_pending ({columns}, seq) VALUES ({marks}, 0)",
            list(values.values()),
        )


class Changes:
    """A listener that records changes and lets a test await a particular one."""

    def __init__(self) -> None:
        self.seen: list[PendingChange] = []
        self._waits: list[tuple[PendingChange, asyncio.Event]] = []

    def __call__(self, change: PendingChange) -> None:
        self.seen.append(change)
        for expected, event in self._waits:
            if change == expected:
                event.set()

    async def arrival(self, expected: PendingChange) -> None:
        event = asyncio.Event()
        if expected in self.seen:
            return
        self._waits.append((expected, event))
        async with asyncio.timeout(PATIENCE):
            await event.wait()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "pending.db"


@pytest.fixture
async def store(db_path: Path, clock: FakeClock) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(db_path, clock=clock, retention_seconds=3600) as store:
        yield store


# -- records ---------------------------------------------------------------------------------


async def test_every_field_survives_the_round_trip(store: SQLiteStore) -> None:
    request = make_request(
        arguments={"question": "Ship it?", "options": ["yes", "no"], "weight": 2.5},
        detached=True,
        created_at=datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
        actor_id="alice",
        channel_type=ChannelType.REALTIME_VOICE,
        deadline=1_700_000_300.25,
        key="order-42",
        answer_schema={"type": "string", "enum": ["yes", "no"]},
        settled_by="nobody yet",
    )
    created, is_new = await store.insert(request)
    fetched = await store.fetch(request.pending_id)

    assert is_new
    assert fetched is not None
    assert fetched is not request
    assert public_fields(created) == public_fields(request)
    assert public_fields(fetched) == public_fields(request)


async def test_the_outcome_fields_survive_the_round_trip(store: SQLiteStore) -> None:
    answered, _ = await store.insert(make_request())
    refused, _ = await store.insert(make_request(settled_by="earlier"))

    won = await store.settle(answered.pending_id, RESOLVED, result='"yes"', settled_by="bob")
    lost = await store.settle(refused.pending_id, REJECTED, reason="no budget", withdrawn=True)

    assert won is not None
    assert lost is not None
    for record in (won, await store.fetch(answered.pending_id)):
        assert record is not None
        assert (record.status, record.result, record.settled_by) == (RESOLVED, '"yes"', "bob")
    refused_now = await store.fetch(refused.pending_id)
    assert refused_now is not None
    assert refused_now.status is REJECTED
    assert refused_now.reject_reason == "no budget"
    assert refused_now.withdrawn
    # A settle that does not say who settled keeps what the record said.
    assert refused_now.settled_by == "earlier"


async def test_an_unknown_id_reads_as_none(store: SQLiteStore) -> None:
    assert await store.fetch("never-created") is None
    assert await store.fetch_many(["never-created"]) == []
    assert await store.settle("never-created", RESOLVED, result="x") is None
    assert await store.set_deadline("never-created", 1.0) is None


async def test_a_key_reattaches_to_the_open_request(store: SQLiteStore) -> None:
    first, created_first = await store.insert(make_request(key="job-7"))
    second, created_second = await store.insert(make_request(key="job-7"))

    assert created_first
    assert not created_second
    assert second.pending_id == first.pending_id
    assert [r.pending_id for r in await store.list_pending()] == [first.pending_id]


async def test_a_key_reattaches_to_a_settled_outcome(store: SQLiteStore) -> None:
    first, _ = await store.insert(make_request(key="job-8"))
    await store.settle(first.pending_id, RESOLVED, result="done")

    again, created = await store.insert(make_request(key="job-8"))

    assert not created
    assert (again.pending_id, again.status, again.result) == (first.pending_id, RESOLVED, "done")


async def test_a_key_past_its_retention_opens_a_new_request(
    store: SQLiteStore, clock: FakeClock
) -> None:
    first, _ = await store.insert(make_request(key="job-9"))
    await store.settle(first.pending_id, RESOLVED, result="done")
    clock.advance(3601)

    again, created = await store.insert(make_request(key="job-9"))

    assert created
    assert again.pending_id != first.pending_id
    assert again.status is PENDING
    assert await store.fetch(first.pending_id) is None


async def test_an_id_is_stored_once(store: SQLiteStore) -> None:
    request = make_request()
    await store.insert(request)

    with pytest.raises(StoreError, match="already stored"):
        await store.insert(make_request(pending_id=request.pending_id))


async def test_only_pending_requests_go_in_and_only_outcomes_settle(store: SQLiteStore) -> None:
    request = make_request(status=RESOLVED)
    with pytest.raises(ValueError, match="pending"):
        await store.insert(request)
    with pytest.raises(ValueError, match="outcome"):
        await store.settle("p", PENDING)


async def test_list_pending_filters_and_lists_oldest_first(store: SQLiteStore) -> None:
    a, _ = await store.insert(make_request(room_id="r1", actor_id="alice", channel_id="c1"))
    b, _ = await store.insert(make_request(room_id="r2", actor_id="bob", channel_id="c1"))
    c, _ = await store.insert(make_request(room_id="r1", actor_id="bob", channel_id="c2"))
    settled, _ = await store.insert(make_request(room_id="r1"))
    await store.settle(settled.pending_id, RESOLVED, result="x")

    def ids(records: list[PendingInput]) -> list[str]:
        return [record.pending_id for record in records]

    assert ids(await store.list_pending()) == [a.pending_id, b.pending_id, c.pending_id]
    assert ids(await store.list_pending(room_id="r1")) == [a.pending_id, c.pending_id]
    assert ids(await store.list_pending(actor_id="bob")) == [b.pending_id, c.pending_id]
    assert ids(await store.list_pending(channel_id="c1", actor_id="bob")) == [b.pending_id]


async def test_fetch_many_returns_the_records_that_exist(store: SQLiteStore) -> None:
    open_one, _ = await store.insert(make_request())
    done, _ = await store.insert(make_request())
    await store.settle(done.pending_id, REJECTED, reason="no")

    records = await store.fetch_many([open_one.pending_id, done.pending_id, "missing"])

    assert {(r.pending_id, r.status) for r in records} == {
        (open_one.pending_id, PENDING),
        (done.pending_id, REJECTED),
    }


async def test_an_outcome_outlives_the_store_object(db_path: Path) -> None:
    async with SQLiteStore(db_path) as first:
        request, _ = await first.insert(make_request())
        await first.settle(request.pending_id, RESOLVED, result="kept")

    async with SQLiteStore(db_path) as second:
        record = await second.fetch(request.pending_id)

    assert record is not None
    assert (record.status, record.result) == (RESOLVED, "kept")
    with closing(sqlite3.connect(db_path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_the_store_is_a_durable_store(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    try:
        assert isinstance(store, DurableStore)
    finally:
        await store.close()


# -- the check-and-set -----------------------------------------------------------------------


async def test_the_first_settle_wins_and_the_outcome_stays(store: SQLiteStore) -> None:
    request, _ = await store.insert(make_request())

    first = await store.settle(request.pending_id, RESOLVED, result="first")
    second = await store.settle(request.pending_id, REJECTED, reason="second")

    assert first is not None
    assert second is None
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.result, record.reject_reason) == (RESOLVED, "first", None)


async def test_two_stores_racing_on_one_file_settle_each_request_once(db_path: Path) -> None:
    async with SQLiteStore(db_path) as a, SQLiteStore(db_path) as b:
        ids = [(await a.insert(make_request()))[0].pending_id for _ in range(200)]

        # The stores walk the ids from opposite ends, so both win some and meet mid-way.
        by_a = [a.settle(i, RESOLVED, result="a", settled_by="alice") for i in ids]
        by_b = [b.settle(i, REJECTED, reason="b", settled_by="bob") for i in reversed(ids)]
        outcomes = await asyncio.gather(*by_a, *by_b)
        wins_a = dict(zip(ids, outcomes[:200], strict=True))
        wins_b = dict(zip(reversed(ids), outcomes[200:], strict=True))

        for pending_id in ids:
            won_a, won_b = wins_a[pending_id], wins_b[pending_id]
            assert (won_a is None) != (won_b is None), pending_id
            winner = won_a or won_b
            assert winner is not None
            for reader in (a, b):
                record = await reader.fetch(pending_id)
                assert record is not None
                assert (record.status, record.result, record.reject_reason) == (
                    winner.status,
                    winner.result,
                    winner.reject_reason,
                )
                assert record.settled_by == ("alice" if winner.status is RESOLVED else "bob")


async def test_concurrent_settles_on_one_store_have_one_winner(store: SQLiteStore) -> None:
    request, _ = await store.insert(make_request())

    outcomes = await asyncio.gather(
        *(store.settle(request.pending_id, RESOLVED, result=str(n)) for n in range(10))
    )

    winners = [outcome for outcome in outcomes if outcome is not None]
    assert len(winners) == 1
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.result == winners[0].result


async def test_concurrent_inserts_of_one_key_open_one_request(store: SQLiteStore) -> None:
    outcomes = await asyncio.gather(*(store.insert(make_request(key="once")) for _ in range(5)))

    assert [created for _, created in outcomes].count(True) == 1
    assert len({record.pending_id for record, _ in outcomes}) == 1


async def test_a_refused_write_fails_alone_among_concurrent_writes(
    store: SQLiteStore, db_path: Path
) -> None:
    insert_raw(db_path, format="someone.else.v3")
    first, _ = await store.insert(make_request())
    duplicate = make_request(pending_id=first.pending_id)
    second, _ = await store.insert(make_request())

    outcomes = await asyncio.gather(
        store.settle("alien", RESOLVED, result="x"),
        store.insert(duplicate),
        store.settle(second.pending_id, RESOLVED, result="y"),
        return_exceptions=True,
    )

    assert isinstance(outcomes[0], CorruptRecordError)
    assert isinstance(outcomes[1], StoreError)
    assert isinstance(outcomes[2], PendingInput)
    assert outcomes[2].result == "y"
    with closing(sqlite3.connect(db_path)) as db:
        assert db.execute(
            "SELECT status FROM roomkit_pending WHERE pending_id = 'alien'"
        ).fetchone() == ("pending",)


async def test_a_fault_in_a_batch_writes_none_of_it(store: SQLiteStore) -> None:
    good, _ = await store.insert(make_request())
    bad, _ = await store.insert(make_request())

    outcomes = await asyncio.gather(
        store.settle(good.pending_id, RESOLVED, result="fine"),
        store.settle(bad.pending_id, RESOLVED, result=object()),  # type: ignore[arg-type]
        return_exceptions=True,
    )

    assert all(
        isinstance(outcome, sqlite3.InterfaceError | sqlite3.ProgrammingError)
        for outcome in outcomes
    )
    for request in (good, bad):
        record = await store.fetch(request.pending_id)
        assert record is not None
        assert record.status is PENDING
    assert await store.settle(good.pending_id, RESOLVED, result="again") is not None


async def test_a_write_cancelled_before_its_turn_is_dropped(store: SQLiteStore) -> None:
    kept, _ = await store.insert(make_request())
    dropped, _ = await store.insert(make_request())

    first = asyncio.create_task(store.settle(kept.pending_id, RESOLVED, result="kept"))
    second = asyncio.create_task(store.settle(dropped.pending_id, RESOLVED, result="dropped"))
    await asyncio.sleep(0)  # both are queued; the batch has not started
    second.cancel()

    assert await first is not None
    with pytest.raises(asyncio.CancelledError):
        await second
    record = await store.fetch(dropped.pending_id)
    assert record is not None
    assert record.status is PENDING


async def test_close_lets_queued_writes_finish(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    request, _ = await store.insert(make_request())
    settling = asyncio.create_task(store.settle(request.pending_id, RESOLVED, result="last"))
    await asyncio.sleep(0)  # the settle is queued

    await store.close()

    assert await settling is not None
    async with SQLiteStore(db_path) as reopened:
        record = await reopened.fetch(request.pending_id)
    assert record is not None
    assert record.result == "last"


# -- deadlines -------------------------------------------------------------------------------


async def test_set_deadline_only_moves_a_deadline_earlier(
    store: SQLiteStore, clock: FakeClock
) -> None:
    request, _ = await store.insert(make_request())
    now = clock.now

    assert await store.set_deadline(request.pending_id, now + 100) == now + 100
    assert await store.set_deadline(request.pending_id, now + 200) == now + 100
    assert await store.set_deadline(request.pending_id, now + 50) == now + 50
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.deadline == now + 50

    await store.settle(request.pending_id, RESOLVED, result="x")
    assert await store.set_deadline(request.pending_id, now + 10) is None


async def test_a_timeout_loses_before_the_deadline(store: SQLiteStore, clock: FakeClock) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(9.5)

    assert await store.settle(request.pending_id, TIMED_OUT) is None
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.status is PENDING


async def test_a_timeout_loses_without_a_deadline(store: SQLiteStore) -> None:
    request, _ = await store.insert(make_request())

    assert await store.settle(request.pending_id, TIMED_OUT) is None


async def test_a_timeout_wins_once_the_deadline_is_reached(
    store: SQLiteStore, clock: FakeClock
) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(10)

    won = await store.settle(request.pending_id, TIMED_OUT)

    assert won is not None
    assert won.status is TIMED_OUT
    assert await store.settle(request.pending_id, RESOLVED, result="late") is None


async def test_an_answer_before_the_deadline_wins(store: SQLiteStore, clock: FakeClock) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(9.999)

    won = await store.settle(request.pending_id, RESOLVED, result="just in time")

    assert won is not None
    assert won.result == "just in time"


async def test_an_answer_after_the_deadline_records_the_timeout_and_loses(
    store: SQLiteStore, clock: FakeClock
) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    changes = Changes()
    unsubscribe = store.subscribe(changes)
    clock.advance(11)

    lost = await store.settle(request.pending_id, RESOLVED, result="too late", settled_by="bob")
    unsubscribe()

    assert lost is None
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.result, record.settled_by) == (TIMED_OUT, None, None)
    assert PendingChange(SETTLED, request.pending_id) in changes.seen
    assert await store.settle(request.pending_id, TIMED_OUT) is None


# -- retention -------------------------------------------------------------------------------


async def test_purge_drops_outcomes_past_the_retention(
    store: SQLiteStore, clock: FakeClock, db_path: Path
) -> None:
    done, _ = await store.insert(make_request())
    still_open, _ = await store.insert(make_request())
    await store.settle(done.pending_id, RESOLVED, result="x")

    clock.advance(3599)
    assert await store.purge_expired() == 0
    assert await store.fetch(done.pending_id) is not None

    clock.advance(2)
    assert await store.purge_expired() == 1
    assert await store.fetch(done.pending_id) is None
    assert await store.fetch(still_open.pending_id) is not None
    assert stored_ids(db_path) == {still_open.pending_id}


async def test_reads_hide_an_expired_outcome_before_it_is_purged(
    store: SQLiteStore, clock: FakeClock, db_path: Path
) -> None:
    done, _ = await store.insert(make_request())
    await store.settle(done.pending_id, RESOLVED, result="x")
    clock.advance(3601)

    assert await store.fetch(done.pending_id) is None
    assert await store.fetch_many([done.pending_id]) == []
    assert done.pending_id in stored_ids(db_path)


async def test_inserts_purge_expired_outcomes_at_most_once_a_minute(
    db_path: Path, clock: FakeClock
) -> None:
    async with SQLiteStore(db_path, clock=clock, retention_seconds=10) as store:
        old, _ = await store.insert(make_request())
        await store.settle(old.pending_id, RESOLVED, result="x")
        clock.advance(30)
        await store.insert(make_request())
        assert old.pending_id in stored_ids(db_path)

        clock.advance(31)
        await store.insert(make_request())
        assert old.pending_id not in stored_ids(db_path)


# -- the change feed -------------------------------------------------------------------------


async def test_own_writes_reach_listeners_before_the_call_returns(store: SQLiteStore) -> None:
    changes = Changes()
    unsubscribe = store.subscribe(changes)

    request, _ = await store.insert(make_request())
    assert changes.seen == [PendingChange(CREATED, request.pending_id)]
    await store.settle(request.pending_id, RESOLVED, result="x")
    assert changes.seen[-1] == PendingChange(SETTLED, request.pending_id)

    unsubscribe()
    await store.insert(make_request())
    assert len(changes.seen) == 2


async def test_a_settle_on_one_store_reaches_a_listener_on_another(db_path: Path) -> None:
    async with SQLiteStore(db_path) as a, SQLiteStore(db_path) as b:
        changes = Changes()
        unsubscribe = b.subscribe(changes)
        request, _ = await a.insert(make_request())
        await a.settle(request.pending_id, RESOLVED, result="x")

        await changes.arrival(PendingChange(SETTLED, request.pending_id))
        unsubscribe()

        record = await b.fetch(request.pending_id)
        assert record is not None
        assert record.result == "x"


async def test_a_change_between_subscribing_and_connecting_is_not_lost(db_path: Path) -> None:
    async with SQLiteStore(db_path):
        pass  # the schema exists; the listener's store below has not connected yet
    listener_side = SQLiteStore(db_path)
    changes = Changes()
    listener_side.subscribe(changes)

    async def answer_elsewhere() -> str:
        async with SQLiteStore(db_path) as other:
            request, _ = await other.insert(make_request())
            await other.settle(request.pending_id, RESOLVED, result="x")
            return request.pending_id

    # This loop stands still while another thread writes, so the listener's store can only
    # connect once the change has committed.
    with ThreadPoolExecutor(1) as elsewhere:
        pending_id = elsewhere.submit(asyncio.run, answer_elsewhere()).result()
    try:
        await changes.arrival(PendingChange(SETTLED, pending_id))
    finally:
        await listener_side.close()


async def test_a_failing_listener_is_logged_and_the_feed_goes_on(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(change: PendingChange) -> None:
        raise RuntimeError("listener bug")

    async with SQLiteStore(db_path) as a, SQLiteStore(db_path) as b:
        changes = Changes()
        b.subscribe(broken)
        b.subscribe(changes)
        first, _ = await a.insert(make_request())
        await a.settle(first.pending_id, RESOLVED, result="1")
        await changes.arrival(PendingChange(SETTLED, first.pending_id))
        second, _ = await a.insert(make_request())
        await a.settle(second.pending_id, RESOLVED, result="2")
        await changes.arrival(PendingChange(SETTLED, second.pending_id))

    failures = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.ERROR]
    assert failures
    assert all("listener" in r.getMessage() for r in failures)


SETTLE_ELSEWHERE = """
import asyncio, sys
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input.stores.sqlite import SQLiteStore

async def main(path, pending_id):
    async with SQLiteStore(path) as store:
        won = await store.settle(
            pending_id, PendingInputStatus.RESOLVED, result="from afar", settled_by="carol"
        )
    sys.exit(0 if won is not None else 3)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_a_settle_in_another_process_reaches_the_listener(db_path: Path) -> None:
    async with SQLiteStore(db_path) as store:
        request, _ = await store.insert(make_request())
        changes = Changes()
        unsubscribe = store.subscribe(changes)

        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", SETTLE_ELSEWHERE, str(db_path), request.pending_id
        )
        async with asyncio.timeout(PATIENCE):
            assert await process.wait() == 0
        await changes.arrival(PendingChange(SETTLED, request.pending_id))
        unsubscribe()

        record = await store.fetch(request.pending_id)
        assert record is not None
        assert (record.status, record.result, record.settled_by) == (
            RESOLVED,
            "from afar",
            "carol",
        )


# -- faults ----------------------------------------------------------------------------------


async def test_an_unopenable_path_is_unavailable_until_it_is_fixed(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where a directory should be")
    store = SQLiteStore(blocker / "pending.db")
    try:
        with pytest.raises(StoreUnavailableError, match="not-a-directory") as caught:
            await store.insert(make_request())
        assert "writable" in str(caught.value)

        blocker.unlink()
        blocker.mkdir()
        request, created = await store.insert(make_request())
        assert created
        assert await store.fetch(request.pending_id) is not None
    finally:
        await store.close()


async def test_a_lock_held_past_the_busy_timeout_is_unavailable_then_clears(
    db_path: Path,
) -> None:
    async with SQLiteStore(db_path, busy_timeout=0.05) as store:
        request, _ = await store.insert(make_request())
        with closing(sqlite3.connect(db_path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreUnavailableError, match="busy_timeout"):
                await store.settle(request.pending_id, RESOLVED, result="blocked")
            # Writes that queued together fail together: none of them was written.
            outcomes = await asyncio.gather(
                store.settle(request.pending_id, REJECTED, reason="blocked"),
                store.insert(make_request()),
                return_exceptions=True,
            )
            assert all(isinstance(outcome, StoreUnavailableError) for outcome in outcomes)
            # Readers are not blocked by a writer.
            record = await store.fetch(request.pending_id)
            assert record is not None
            assert record.status is PENDING
            other.execute("COMMIT")

        assert await store.settle(request.pending_id, RESOLVED, result="through") is not None


async def test_the_feed_resyncs_after_the_store_comes_back(tmp_path: Path) -> None:
    missing = tmp_path / "later"
    failed = asyncio.Event()

    class Sentinel(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "failing" in record.getMessage():
                failed.set()

    sentinel = Sentinel(logging.WARNING)
    logging.getLogger(LOGGER).addHandler(sentinel)
    store = SQLiteStore(missing / "pending.db")
    try:
        changes = Changes()
        store.subscribe(changes)
        async with asyncio.timeout(PATIENCE):
            await failed.wait()
        missing.mkdir()
        await changes.arrival(PendingChange(RESYNC))
    finally:
        logging.getLogger(LOGGER).removeHandler(sentinel)
        await store.close()


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"format": "someone.else.v3"}, "not a roomkit.pending.v1 record"),
        ({"arguments": "[1, 2"}, "'arguments'"),
        ({"channel_type": "pigeon"}, "'channel_type'"),
    ],
)
async def test_a_foreign_row_is_corrupt_by_id_and_skipped_in_listings(
    store: SQLiteStore,
    db_path: Path,
    caplog: pytest.LogCaptureFixture,
    overrides: dict[str, object],
    complaint: str,
) -> None:
    good, _ = await store.insert(make_request())
    insert_raw(db_path, **overrides)

    with pytest.raises(CorruptRecordError, match=complaint):
        await store.fetch("alien")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        listed = await store.list_pending()
        many = await store.fetch_many(["alien", good.pending_id])

    assert [record.pending_id for record in listed] == [good.pending_id]
    assert [record.pending_id for record in many] == [good.pending_id]
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all("alien" in r.getMessage() for r in warnings)


@pytest.mark.parametrize(
    ("make", "error", "name"),
    [
        (lambda p: SQLiteStore(b"pending.db"), TypeError, "path"),  # type: ignore[arg-type]
        (lambda p: SQLiteStore(42), TypeError, "path"),  # type: ignore[arg-type]
        (lambda p: SQLiteStore(p, retention_seconds=-1), ValueError, "retention_seconds"),
        (lambda p: SQLiteStore(p, retention_seconds="1"), TypeError, "retention_seconds"),  # type: ignore[arg-type]
        (lambda p: SQLiteStore(p, backstop_interval=0), ValueError, "backstop_interval"),
        (lambda p: SQLiteStore(p, backstop_interval=-0.5), ValueError, "backstop_interval"),
        (lambda p: SQLiteStore(p, busy_timeout=-1), ValueError, "busy_timeout"),
        (lambda p: SQLiteStore(p, clock=5), TypeError, "clock"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_argument_is_refused_by_name(
    db_path: Path,
    make: Callable[[Path], SQLiteStore],
    error: type[Exception],
    name: str,
) -> None:
    with pytest.raises(error, match=name):
        make(db_path)
