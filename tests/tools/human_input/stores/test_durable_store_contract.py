"""One contract, every durable store: records, the check-and-set, deadlines, retention, the
change feed across stores and processes, corrupt records and bad arguments, on SQLite and on
a real redis-server alike. What only one store does is tested in its own module."""

from __future__ import annotations

import asyncio
import logging
import math
import sys
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import (
    CREATED,
    PATIENCE,
    PENDING,
    REJECTED,
    RESOLVED,
    SETTLE_ELSEWHERE,
    SETTLED,
    TIMED_OUT,
    Backend,
    Changes,
    FakeClock,
    Store,
    ids,
    make_request,
    public_fields,
)

from roomkit.core.exceptions import CorruptRecordError, StoreError
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput
from roomkit.stores import DurableStore, PendingChange
from roomkit.stores._durable_base import SETTLED_GRACE

# -- records ---------------------------------------------------------------------------------


async def test_every_field_survives_the_round_trip(store: Store) -> None:
    request = make_request(
        arguments={"question": "Ship it? ✓", "options": ["yes", "no"], "weight": 2.5},
        detached=True,
        created_at=datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
        actor_id="alice",
        channel_type=ChannelType.REALTIME_VOICE,
        deadline=1_700_000_300.123456,
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


async def test_none_fields_survive_the_round_trip(store: Store) -> None:
    request = make_request(actor_id=None, deadline=None, key=None, answer_schema=None)
    await store.insert(request)

    fetched = await store.fetch(request.pending_id)

    assert fetched is not None
    assert public_fields(fetched) == public_fields(request)


async def test_the_outcome_fields_survive_the_round_trip(store: Store) -> None:
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
    assert (refused_now.status, refused_now.reject_reason) == (REJECTED, "no budget")
    assert refused_now.withdrawn
    # A settle that does not say who settled keeps what the record said.
    assert refused_now.settled_by == "earlier"


async def test_an_unknown_id_reads_as_none(store: Store) -> None:
    assert await store.fetch("never-created") is None
    assert await store.fetch_many(["never-created"]) == []
    assert await store.settle("never-created", RESOLVED, result="x") is None
    assert await store.set_deadline("never-created", 1.0) is None


async def test_a_key_reattaches_to_the_open_request(store: Store) -> None:
    first, created_first = await store.insert(make_request(key="job-7"))
    second, created_second = await store.insert(make_request(key="job-7"))

    assert created_first
    assert not created_second
    assert second.pending_id == first.pending_id
    assert ids(await store.list_pending()) == [first.pending_id]


async def test_a_key_reattaches_to_a_settled_outcome(store: Store) -> None:
    first, _ = await store.insert(make_request(key="job-8"))
    await store.settle(first.pending_id, RESOLVED, result="done")

    again, created = await store.insert(make_request(key="job-8"))

    assert not created
    assert (again.pending_id, again.status, again.result) == (first.pending_id, RESOLVED, "done")


async def test_a_key_past_its_retention_opens_a_new_request(store: Store, clock: FakeClock) -> None:
    first, _ = await store.insert(make_request(key="job-9"))
    await store.settle(first.pending_id, RESOLVED, result="done")
    clock.advance(3601)

    again, created = await store.insert(make_request(key="job-9"))

    assert created
    assert again.pending_id != first.pending_id
    assert again.status is PENDING
    assert await store.fetch(first.pending_id) is None


async def test_concurrent_inserts_of_one_key_open_one_request(store: Store) -> None:
    outcomes = await asyncio.gather(*(store.insert(make_request(key="once")) for _ in range(20)))

    assert [created for _, created in outcomes].count(True) == 1
    assert len({record.pending_id for record, _ in outcomes}) == 1


async def test_an_id_is_stored_once(store: Store) -> None:
    request = make_request()
    await store.insert(request)

    with pytest.raises(StoreError, match="already stored"):
        await store.insert(make_request(pending_id=request.pending_id, arguments={"other": 1}))


async def test_only_pending_requests_go_in_and_only_outcomes_settle(store: Store) -> None:
    with pytest.raises(ValueError, match="pending"):
        await store.insert(make_request(status=RESOLVED))
    with pytest.raises(ValueError, match="outcome"):
        await store.settle("p", PENDING)


async def test_a_deadline_must_be_a_finite_time(store: Store) -> None:
    request, _ = await store.insert(make_request())

    for deadline in (math.inf, math.nan):
        with pytest.raises(ValueError, match="deadline"):
            await store.set_deadline(request.pending_id, deadline)
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.deadline is None


async def test_list_pending_filters_and_lists_oldest_first(store: Store) -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC).timestamp()

    def at(seconds: int) -> datetime:
        return datetime.fromtimestamp(start + seconds, UTC)

    a, _ = await store.insert(
        make_request(room_id="r1", actor_id="alice", channel_id="c1", created_at=at(1))
    )
    b, _ = await store.insert(
        make_request(room_id="r2", actor_id="bob", channel_id="c1", created_at=at(2))
    )
    c, _ = await store.insert(
        make_request(room_id="r1", actor_id="bob", channel_id="c2", created_at=at(3))
    )
    settled, _ = await store.insert(make_request(room_id="r1", created_at=at(4)))
    await store.settle(settled.pending_id, RESOLVED, result="x")

    assert ids(await store.list_pending()) == [a.pending_id, b.pending_id, c.pending_id]
    assert ids(await store.list_pending(room_id="r1")) == [a.pending_id, c.pending_id]
    assert ids(await store.list_pending(room_id="nowhere")) == []
    assert ids(await store.list_pending(actor_id="bob")) == [b.pending_id, c.pending_id]
    assert ids(await store.list_pending(channel_id="c1", actor_id="bob")) == [b.pending_id]


async def test_list_pending_follows_creation_time_not_insertion(store: Store) -> None:
    """Every store lists by ``created_at``, ties by id, whatever order the requests came in
    and whatever time zone their times were given in."""
    late, _ = await store.insert(
        make_request(room_id="r1", actor_id="bob", created_at=datetime(2024, 3, 1, tzinfo=UTC))
    )
    midnight, _ = await store.insert(
        make_request(room_id="r1", created_at=datetime(2024, 1, 1, tzinfo=UTC))
    )
    # 23:00 UTC the evening before, written in a zone two hours ahead.
    eve, _ = await store.insert(
        make_request(created_at=datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=2))))
    )
    tie_b, _ = await store.insert(
        make_request(pending_id="tie-b", created_at=datetime(2024, 2, 1, tzinfo=UTC))
    )
    tie_a, _ = await store.insert(
        make_request(pending_id="tie-a", room_id="r1", created_at=datetime(2024, 2, 1, tzinfo=UTC))
    )

    assert ids(await store.list_pending()) == ids([eve, midnight, tie_a, tie_b, late])
    assert ids(await store.list_pending(room_id="r1")) == ids([midnight, tie_a, late])
    assert ids(await store.list_pending(actor_id="bob")) == ids([late])


async def test_fetch_many_returns_the_records_that_exist(store: Store) -> None:
    open_one, _ = await store.insert(make_request())
    done, _ = await store.insert(make_request())
    await store.settle(done.pending_id, REJECTED, reason="no")

    records = await store.fetch_many([open_one.pending_id, done.pending_id, "missing"])

    assert {(r.pending_id, r.status) for r in records} == {
        (open_one.pending_id, PENDING),
        (done.pending_id, REJECTED),
    }
    assert await store.fetch_many([]) == []


async def test_an_outcome_outlives_the_store_object(backend: Backend) -> None:
    async with backend.make() as first:
        request, _ = await first.insert(make_request())
        await first.settle(request.pending_id, RESOLVED, result="kept")

    async with backend.make() as second:
        record = await second.fetch(request.pending_id)

    assert record is not None
    assert (record.status, record.result) == (RESOLVED, "kept")


async def test_the_store_is_a_durable_store(backend: Backend) -> None:
    assert isinstance(backend.make(), DurableStore)


# -- the check-and-set -----------------------------------------------------------------------


async def test_the_first_settle_wins_and_the_outcome_stays(store: Store) -> None:
    request, _ = await store.insert(make_request())

    first = await store.settle(request.pending_id, RESOLVED, result="first")
    second = await store.settle(request.pending_id, REJECTED, reason="second")

    assert first is not None
    assert second is None
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.result, record.reject_reason) == (RESOLVED, "first", None)


async def test_two_stores_racing_settle_each_request_once(backend: Backend) -> None:
    async with backend.make() as a, backend.make() as b:
        created = await asyncio.gather(*(a.insert(make_request()) for _ in range(200)))
        pending_ids = [record.pending_id for record, _ in created]

        # The stores walk the ids from opposite ends, so both win some and meet mid-way.
        by_a = [a.settle(i, RESOLVED, result="a", settled_by="alice") for i in pending_ids]
        by_b = [b.settle(i, REJECTED, reason="b", settled_by="bob") for i in reversed(pending_ids)]
        outcomes = await asyncio.gather(*by_a, *by_b)
        wins_a = dict(zip(pending_ids, outcomes[:200], strict=True))
        wins_b = dict(zip(reversed(pending_ids), outcomes[200:], strict=True))

        listed = {r.pending_id: r for r in await b.fetch_many(pending_ids)}
        for pending_id in pending_ids:
            won_a, won_b = wins_a[pending_id], wins_b[pending_id]
            assert (won_a is None) != (won_b is None), pending_id
            winner = won_a or won_b
            assert winner is not None
            for record in (listed[pending_id], await a.fetch(pending_id)):
                assert record is not None
                assert (record.status, record.result, record.reject_reason) == (
                    winner.status,
                    winner.result,
                    winner.reject_reason,
                )
                assert record.settled_by == ("alice" if winner.status is RESOLVED else "bob")
        assert await a.list_pending() == []


async def test_concurrent_settles_on_one_store_have_one_winner(store: Store) -> None:
    request, _ = await store.insert(make_request())

    outcomes = await asyncio.gather(
        *(store.settle(request.pending_id, RESOLVED, result=str(n)) for n in range(10))
    )

    winners = [outcome for outcome in outcomes if outcome is not None]
    assert len(winners) == 1
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.result == winners[0].result


async def test_a_refused_write_fails_alone_among_concurrent_writes(
    store: Store, backend: Backend
) -> None:
    await backend.write_foreign(format="someone.else.v3")
    first, _ = await store.insert(make_request())
    second, _ = await store.insert(make_request())

    outcomes = await asyncio.gather(
        store.settle("alien", RESOLVED, result="x"),
        store.insert(make_request(pending_id=first.pending_id, arguments={"other": 1})),
        store.settle(second.pending_id, RESOLVED, result="y"),
        return_exceptions=True,
    )

    assert isinstance(outcomes[0], CorruptRecordError)
    assert isinstance(outcomes[1], StoreError)
    assert isinstance(outcomes[2], PendingInput)
    assert outcomes[2].result == "y"
    assert await backend.stored_status("alien") == "pending"


# -- deadlines -------------------------------------------------------------------------------


async def test_set_deadline_only_moves_a_deadline_earlier(store: Store, clock: FakeClock) -> None:
    request, _ = await store.insert(make_request())
    now = clock.now

    assert await store.set_deadline(request.pending_id, now + 100.5) == now + 100.5
    assert await store.set_deadline(request.pending_id, now + 200) == now + 100.5
    assert await store.set_deadline(request.pending_id, now + 50.25) == now + 50.25
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.deadline == now + 50.25

    await store.settle(request.pending_id, RESOLVED, result="x")
    assert await store.set_deadline(request.pending_id, now + 10) is None


async def test_a_timeout_loses_before_the_deadline(store: Store, clock: FakeClock) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(9.5)

    assert await store.settle(request.pending_id, TIMED_OUT) is None
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.status is PENDING


async def test_a_timeout_loses_without_a_deadline(store: Store) -> None:
    request, _ = await store.insert(make_request())

    assert await store.settle(request.pending_id, TIMED_OUT) is None


async def test_a_timeout_wins_once_the_deadline_is_reached(store: Store, clock: FakeClock) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(10)

    won = await store.settle(request.pending_id, TIMED_OUT)

    assert won is not None
    assert won.status is TIMED_OUT
    assert await store.settle(request.pending_id, RESOLVED, result="late") is None


async def test_an_answer_before_the_deadline_wins(store: Store, clock: FakeClock) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(9.999)

    won = await store.settle(request.pending_id, RESOLVED, result="just in time")

    assert won is not None
    assert won.result == "just in time"


async def test_an_answer_after_the_deadline_records_the_timeout_and_loses(
    store: Store, clock: FakeClock
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
    assert await store.list_pending() == []


# -- retention -------------------------------------------------------------------------------


async def test_purge_drops_outcomes_past_the_retention(
    store: Store, clock: FakeClock, backend: Backend
) -> None:
    done, _ = await store.insert(make_request(key="purged"))
    still_open, _ = await store.insert(make_request())
    await store.settle(done.pending_id, RESOLVED, result="x")

    clock.advance(3599)
    assert await store.purge_expired() == 0
    assert await store.fetch(done.pending_id) is not None

    clock.advance(2)
    assert await store.purge_expired() == 1
    assert await store.fetch(done.pending_id) is None
    assert await store.fetch(still_open.pending_id) is not None
    assert await backend.stored_ids() == {still_open.pending_id}
    assert ids(await store.list_pending()) == [still_open.pending_id]
    assert ids(await store.list_pending(room_id="room-1")) == [still_open.pending_id]


async def test_reads_hide_an_expired_outcome_before_it_is_purged(
    store: Store, clock: FakeClock, backend: Backend
) -> None:
    done, _ = await store.insert(make_request())
    await store.settle(done.pending_id, RESOLVED, result="x")
    clock.advance(3601)

    assert await store.fetch(done.pending_id) is None
    assert await store.fetch_many([done.pending_id]) == []
    assert done.pending_id in await backend.stored_ids()


async def test_no_retention_keeps_an_outcome_only_while_waits_may_read_it(
    backend: Backend, clock: FakeClock
) -> None:
    """``retention_seconds=0`` is accepted by every store: a waiter elsewhere still reads the
    outcome, and nothing is replayable once the grace for waits has passed."""
    async with (
        backend.make(clock=clock, retention_seconds=0) as here,
        backend.make(clock=clock, retention_seconds=0) as elsewhere,
    ):
        assert here.retention_seconds == 0
        request, _ = await here.insert(make_request(key="brief"))
        await here.settle(request.pending_id, RESOLVED, result="seen")

        clock.advance(SETTLED_GRACE - 1)
        record = await elsewhere.fetch(request.pending_id)
        assert record is not None
        assert record.result == "seen"
        assert ids(await elsewhere.fetch_many([request.pending_id])) == [request.pending_id]

        clock.advance(1)
        assert await elsewhere.fetch(request.pending_id) is None
        assert await elsewhere.fetch_many([request.pending_id]) == []
        assert await here.purge_expired() == 1
        assert request.pending_id not in await backend.stored_ids()
        again, created = await elsewhere.insert(make_request(key="brief"))
        assert created
        assert again.pending_id != request.pending_id


# -- the change feed -------------------------------------------------------------------------


async def test_own_writes_reach_listeners_before_the_call_returns(
    store: Store, backend: Backend
) -> None:
    changes = Changes()
    unsubscribe = store.subscribe(changes)

    request, _ = await store.insert(make_request())
    created = PendingChange(CREATED, request.pending_id)
    if backend.repeats_own_writes:
        assert created in changes.seen
    else:
        assert changes.seen == [created]
    await store.settle(request.pending_id, RESOLVED, result="x")
    assert changes.seen[-1] == PendingChange(SETTLED, request.pending_id)

    unsubscribe()
    heard = len(changes.seen)
    await store.insert(make_request())
    assert len(changes.seen) == heard


async def test_a_create_and_a_settle_on_one_store_reach_a_listener_on_another(
    backend: Backend,
) -> None:
    async with backend.make() as a, backend.make() as b:
        changes = Changes()
        unsubscribe = b.subscribe(changes)
        await backend.live(changes)

        request, _ = await a.insert(make_request())
        await changes.arrival(PendingChange(CREATED, request.pending_id))
        await a.settle(request.pending_id, RESOLVED, result="x")
        await changes.arrival(PendingChange(SETTLED, request.pending_id))
        unsubscribe()

        record = await b.fetch(request.pending_id)
        assert record is not None
        assert record.result == "x"


async def test_a_failing_listener_is_logged_and_the_feed_goes_on(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(change: PendingChange) -> None:
        raise RuntimeError("listener bug")

    async with backend.make() as a, backend.make() as b:
        changes = Changes()
        b.subscribe(broken)
        b.subscribe(changes)
        await backend.live(changes)
        first, _ = await a.insert(make_request())
        await a.settle(first.pending_id, RESOLVED, result="1")
        await changes.arrival(PendingChange(SETTLED, first.pending_id))
        second, _ = await a.insert(make_request())
        await a.settle(second.pending_id, RESOLVED, result="2")
        await changes.arrival(PendingChange(SETTLED, second.pending_id))

    failures = [
        r for r in caplog.records if r.name == backend.logger and r.levelno == logging.ERROR
    ]
    assert failures
    assert all("listener" in r.getMessage() for r in failures)


async def test_a_settle_in_another_process_reaches_the_listener(
    store: Store, backend: Backend
) -> None:
    request, _ = await store.insert(make_request())
    changes = Changes()
    unsubscribe = store.subscribe(changes)
    await backend.live(changes)

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SETTLE_ELSEWHERE, *backend.elsewhere, request.pending_id
    )
    async with asyncio.timeout(PATIENCE):
        assert await process.wait() == 0
    await changes.arrival(PendingChange(SETTLED, request.pending_id))
    unsubscribe()

    record = await store.fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.result, record.settled_by) == (RESOLVED, "from afar", "carol")


# -- faults ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"format": "someone.else.v3"}, "not a roomkit.pending.v1 record"),
        ({"arguments": "[1, 2"}, "'arguments'"),
        ({"channel_type": "pigeon"}, "'channel_type'"),
    ],
)
async def test_a_foreign_record_is_corrupt_by_id_and_skipped_in_listings(
    store: Store,
    backend: Backend,
    caplog: pytest.LogCaptureFixture,
    overrides: dict[str, str],
    complaint: str,
) -> None:
    good, _ = await store.insert(make_request(created_at=datetime(2030, 1, 1, tzinfo=UTC)))
    await backend.write_foreign(**overrides)

    with pytest.raises(CorruptRecordError, match=complaint):
        await store.fetch("alien")
    with caplog.at_level(logging.WARNING, logger=backend.logger):
        listed = await store.list_pending()
        in_room = await store.list_pending(room_id="room-1")
        many = await store.fetch_many(["alien", good.pending_id])

    assert ids(listed) == ids(in_room) == ids(many) == [good.pending_id]
    warnings = [
        r for r in caplog.records if r.name == backend.logger and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 3
    assert all("alien" in r.getMessage() for r in warnings)


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"retention_seconds": -1}, ValueError, "retention_seconds"),
        ({"retention_seconds": "1"}, TypeError, "retention_seconds"),
        ({"backstop_interval": 0}, ValueError, "backstop_interval"),
        ({"backstop_interval": -0.5}, ValueError, "backstop_interval"),
        ({"backstop_interval": math.inf}, ValueError, "backstop_interval"),
        ({"backstop_interval": True}, TypeError, "backstop_interval"),
        ({"clock": 5}, TypeError, "clock"),
    ],
)
async def test_a_bad_argument_is_refused_by_name(
    backend: Backend, options: dict[str, Any], error: type[Exception], name: str
) -> None:
    with pytest.raises(error, match=name):
        backend.make(**options)


async def test_a_listener_must_be_callable(store: Store) -> None:
    with pytest.raises(TypeError, match="listener"):
        store.subscribe("not a function")  # type: ignore[arg-type]
