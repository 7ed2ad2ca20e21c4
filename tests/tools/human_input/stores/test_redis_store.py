"""The Redis store against a real redis-server: records, the check-and-set, deadlines,
retention, the change feed across stores and processes, restarts, and its faults."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from redis.asyncio import Redis
from redis_server import RedisServer, running_redis

from roomkit.core.exceptions import CorruptRecordError, StoreError, StoreUnavailableError
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input.stores import DurableStore, PendingChange, PendingChangeKind
from roomkit.tools.human_input.stores._records import FORMAT, NONE
from roomkit.tools.human_input.stores.redis import RedisStore

RESOLVED = PendingInputStatus.RESOLVED
REJECTED = PendingInputStatus.REJECTED
TIMED_OUT = PendingInputStatus.TIMED_OUT
PENDING = PendingInputStatus.PENDING
CREATED = PendingChangeKind.CREATED
SETTLED = PendingChangeKind.SETTLED
RESYNC = PendingChange(PendingChangeKind.RESYNC)

LOGGER = "roomkit.tools.human_input.stores.redis"
PATIENCE = 30.0
"""Seconds a test waits for something the server or the feed should deliver."""


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Changes:
    """A listener that records changes and lets a test await the next one it names."""

    def __init__(self) -> None:
        self.seen: list[PendingChange] = []
        self._waits: list[tuple[PendingChange, asyncio.Event]] = []

    def __call__(self, change: PendingChange) -> None:
        self.seen.append(change)
        for expected, event in self._waits:
            if change == expected:
                event.set()

    async def arrival(self, expected: PendingChange, *, after: int = 0) -> None:
        """Wait until ``expected`` is seen at or after position ``after``."""
        if expected in self.seen[after:]:
            return
        event = asyncio.Event()
        self._waits.append((expected, event))
        async with asyncio.timeout(PATIENCE):
            await event.wait()


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


def ids(records: list[PendingInput]) -> list[str]:
    return [record.pending_id for record in records]


@contextmanager
def silent_port() -> Iterator[int]:
    """A port bound but not listening: a connection to it is refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port: int = bound.getsockname()[1]
        yield port


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def server(redis_server: RedisServer) -> Iterator[RedisServer]:
    """The session's server, for a test that stops or restarts it; running again after."""
    yield redis_server
    redis_server.start()


@pytest.fixture
def prefix() -> str:
    """Keys and channel of this test alone, on the shared server."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(
    redis_server: RedisServer, prefix: str, clock: FakeClock
) -> AsyncIterator[RedisStore]:
    async with RedisStore(
        redis_server.url, prefix=prefix, clock=clock, retention_seconds=3600
    ) as store:
        yield store


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """A plain client, to look at and tamper with what the store wrote."""
    client = Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()


async def write_foreign(raw: Redis, prefix: str, **overrides: str) -> None:
    """A hash at a record's key, listed as pending, that the store did not write."""
    fields = {
        "format": FORMAT,
        "pending_id": "alien",
        "tool_name": "t",
        "arguments": "{}",
        "room_id": "room-1",
        "tool_call_id": "",
        "channel_id": "",
        "status": "pending",
        "detached": "0",
        "created_at": "2024-01-01T00:00:00+00:00",
        "channel_type": "ai",
        "withdrawn": "0",
        "deadline": NONE,
    }
    fields.update(overrides)
    await raw.hset(f"{prefix}:p:alien", mapping=fields)  # type: ignore[misc]
    await raw.zadd(f"{prefix}:pending", {"alien": 0})
    await raw.zadd(f"{prefix}:r:room-1", {"alien": 0})


# -- records ---------------------------------------------------------------------------------


async def test_every_field_survives_the_round_trip(store: RedisStore) -> None:
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


async def test_none_fields_survive_the_round_trip(store: RedisStore) -> None:
    request = make_request(actor_id=None, deadline=None, key=None, answer_schema=None)
    await store.insert(request)

    fetched = await store.fetch(request.pending_id)

    assert fetched is not None
    assert public_fields(fetched) == public_fields(request)


async def test_the_outcome_fields_survive_the_round_trip(store: RedisStore) -> None:
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


async def test_an_unknown_id_reads_as_none(store: RedisStore) -> None:
    assert await store.fetch("never-created") is None
    assert await store.fetch_many(["never-created"]) == []
    assert await store.settle("never-created", RESOLVED, result="x") is None
    assert await store.set_deadline("never-created", 1.0) is None


async def test_a_key_reattaches_to_the_open_request(store: RedisStore) -> None:
    first, created_first = await store.insert(make_request(key="job-7"))
    second, created_second = await store.insert(make_request(key="job-7"))

    assert created_first
    assert not created_second
    assert second.pending_id == first.pending_id
    assert ids(await store.list_pending()) == [first.pending_id]


async def test_a_key_reattaches_to_a_settled_outcome(store: RedisStore) -> None:
    first, _ = await store.insert(make_request(key="job-8"))
    await store.settle(first.pending_id, RESOLVED, result="done")

    again, created = await store.insert(make_request(key="job-8"))

    assert not created
    assert (again.pending_id, again.status, again.result) == (first.pending_id, RESOLVED, "done")


async def test_a_key_past_its_retention_opens_a_new_request(
    store: RedisStore, clock: FakeClock
) -> None:
    first, _ = await store.insert(make_request(key="job-9"))
    await store.settle(first.pending_id, RESOLVED, result="done")
    clock.advance(3601)

    again, created = await store.insert(make_request(key="job-9"))

    assert created
    assert again.pending_id != first.pending_id
    assert again.status is PENDING
    assert await store.fetch(first.pending_id) is None


async def test_concurrent_inserts_of_one_key_open_one_request(store: RedisStore) -> None:
    outcomes = await asyncio.gather(*(store.insert(make_request(key="once")) for _ in range(20)))

    assert [created for _, created in outcomes].count(True) == 1
    assert len({record.pending_id for record, _ in outcomes}) == 1


async def test_an_insert_sent_twice_is_created_once(store: RedisStore) -> None:
    """A retry after a lost reply finds its own request and still reports it created."""
    request = make_request(key="retried")

    first = await store.insert(request)
    second = await store.insert(request)

    assert first[1]
    assert second[1]
    assert ids(await store.list_pending()) == [request.pending_id]


async def test_an_id_is_stored_once(store: RedisStore) -> None:
    request = make_request()
    await store.insert(request)

    with pytest.raises(StoreError, match="already stored"):
        await store.insert(make_request(pending_id=request.pending_id, arguments={"other": 1}))


async def test_only_pending_requests_go_in_and_only_outcomes_settle(store: RedisStore) -> None:
    with pytest.raises(ValueError, match="pending"):
        await store.insert(make_request(status=RESOLVED))
    with pytest.raises(ValueError, match="outcome"):
        await store.settle("p", PENDING)


async def test_a_deadline_must_be_a_finite_time(store: RedisStore) -> None:
    request, _ = await store.insert(make_request())

    with pytest.raises(ValueError, match="deadline"):
        await store.set_deadline(request.pending_id, float("inf"))


async def test_list_pending_filters_and_lists_oldest_first(store: RedisStore) -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC).timestamp()

    def at(seconds: int) -> datetime:
        return datetime.fromtimestamp(start + seconds, UTC)

    # Inserted out of order: the listing follows creation time, not insertion.
    c, _ = await store.insert(
        make_request(room_id="r1", actor_id="bob", channel_id="c2", created_at=at(3))
    )
    a, _ = await store.insert(
        make_request(room_id="r1", actor_id="alice", channel_id="c1", created_at=at(1))
    )
    b, _ = await store.insert(
        make_request(room_id="r2", actor_id="bob", channel_id="c1", created_at=at(2))
    )
    settled, _ = await store.insert(make_request(room_id="r1", created_at=at(0)))
    await store.settle(settled.pending_id, RESOLVED, result="x")

    assert ids(await store.list_pending()) == [a.pending_id, b.pending_id, c.pending_id]
    assert ids(await store.list_pending(room_id="r1")) == [a.pending_id, c.pending_id]
    assert ids(await store.list_pending(room_id="nowhere")) == []
    assert ids(await store.list_pending(actor_id="bob")) == [b.pending_id, c.pending_id]
    assert ids(await store.list_pending(channel_id="c1", actor_id="bob")) == [b.pending_id]


async def test_fetch_many_returns_the_records_that_exist(store: RedisStore) -> None:
    open_one, _ = await store.insert(make_request())
    done, _ = await store.insert(make_request())
    await store.settle(done.pending_id, REJECTED, reason="no")

    records = await store.fetch_many([open_one.pending_id, done.pending_id, "missing"])

    assert {(r.pending_id, r.status) for r in records} == {
        (open_one.pending_id, PENDING),
        (done.pending_id, REJECTED),
    }
    assert await store.fetch_many([]) == []


async def test_stores_with_other_prefixes_do_not_see_each_other(
    redis_server: RedisServer, store: RedisStore
) -> None:
    request, _ = await store.insert(make_request())
    async with RedisStore(redis_server.url, prefix=f"{store.prefix}-other") as other:
        assert await other.fetch(request.pending_id) is None
        assert await other.list_pending() == []


async def test_the_store_is_a_durable_store(redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url)
    try:
        assert isinstance(store, DurableStore)
    finally:
        await store.close()


async def test_a_given_client_is_used_and_left_open(
    redis_server: RedisServer, raw: Redis, prefix: str
) -> None:
    async with RedisStore(client=raw, prefix=prefix) as store:
        request, _ = await store.insert(make_request())
        assert store.where == f"{redis_server.url}"

    assert await raw.exists(f"{prefix}:p:{request.pending_id}") == 1


# -- the check-and-set -----------------------------------------------------------------------


async def test_the_first_settle_wins_and_the_outcome_stays(store: RedisStore) -> None:
    request, _ = await store.insert(make_request())

    first = await store.settle(request.pending_id, RESOLVED, result="first")
    second = await store.settle(request.pending_id, REJECTED, reason="second")

    assert first is not None
    assert second is None
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.result, record.reject_reason) == (RESOLVED, "first", None)


async def test_two_clients_racing_settle_each_request_once(
    redis_server: RedisServer, prefix: str
) -> None:
    async with (
        RedisStore(redis_server.url, prefix=prefix) as a,
        RedisStore(redis_server.url, prefix=prefix) as b,
    ):
        created = await asyncio.gather(*(a.insert(make_request()) for _ in range(200)))
        pending_ids = [record.pending_id for record, _ in created]

        # The clients walk the ids from opposite ends, so both win some and meet mid-way.
        by_a = [a.settle(i, RESOLVED, result="a", settled_by="alice") for i in pending_ids]
        by_b = [b.settle(i, REJECTED, reason="b", settled_by="bob") for i in reversed(pending_ids)]
        outcomes = await asyncio.gather(*by_a, *by_b)
        wins_a = dict(zip(pending_ids, outcomes[:200], strict=True))
        wins_b = dict(zip(reversed(pending_ids), outcomes[200:], strict=True))

        records = {r.pending_id: r for r in await b.fetch_many(pending_ids)}
        for pending_id in pending_ids:
            won_a, won_b = wins_a[pending_id], wins_b[pending_id]
            assert (won_a is None) != (won_b is None), pending_id
            winner = won_a or won_b
            assert winner is not None
            record = records[pending_id]
            assert (record.status, record.result, record.reject_reason) == (
                winner.status,
                winner.result,
                winner.reject_reason,
            )
            assert record.settled_by == ("alice" if winner.status is RESOLVED else "bob")
        assert await a.list_pending() == []


async def test_concurrent_settles_on_one_store_have_one_winner(store: RedisStore) -> None:
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
    store: RedisStore, raw: Redis
) -> None:
    await write_foreign(raw, store.prefix, format="someone.else.v3")
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
    assert await raw.hget(f"{store.prefix}:p:alien", "status") == "pending"  # type: ignore[misc]


async def test_settles_go_on_after_the_server_forgets_its_scripts(
    store: RedisStore, raw: Redis
) -> None:
    requests = [(await store.insert(make_request()))[0] for _ in range(5)]
    await raw.script_flush()

    alone = await store.settle(requests[0].pending_id, RESOLVED, result="alone")
    await raw.script_flush()
    together = await asyncio.gather(
        *(store.settle(r.pending_id, RESOLVED, result="together") for r in requests[1:])
    )

    assert alone is not None
    assert all(outcome is not None for outcome in together)


@pytest.mark.parametrize("warm", [False, True], ids=["connecting", "connected"])
async def test_a_cancelled_call_is_cancelled_whenever_it_is_cut(
    redis_server: RedisServer, prefix: str, warm: bool
) -> None:
    """However far a read or write got, cutting it raises CancelledError in the caller."""
    for ticks in range(32):
        async with RedisStore(redis_server.url, prefix=prefix) as store:
            request, _ = await store.insert(make_request())
            if not warm:
                await store.close()
            for call in (
                store.fetch(request.pending_id),
                store.set_deadline(request.pending_id, 2e9),
                store.list_pending(),
            ):
                task = asyncio.create_task(call)
                for _ in range(ticks):
                    await asyncio.sleep(0)
                if task.cancel():
                    with pytest.raises(asyncio.CancelledError):
                        await task
                else:
                    assert task.exception() is None, ticks


# -- deadlines -------------------------------------------------------------------------------


async def test_set_deadline_only_moves_a_deadline_earlier(
    store: RedisStore, clock: FakeClock
) -> None:
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


async def test_a_timeout_loses_before_the_deadline(store: RedisStore, clock: FakeClock) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(9.5)

    assert await store.settle(request.pending_id, TIMED_OUT) is None
    record = await store.fetch(request.pending_id)
    assert record is not None
    assert record.status is PENDING


async def test_a_timeout_loses_without_a_deadline(store: RedisStore) -> None:
    request, _ = await store.insert(make_request())

    assert await store.settle(request.pending_id, TIMED_OUT) is None


async def test_a_timeout_wins_once_the_deadline_is_reached(
    store: RedisStore, clock: FakeClock
) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(10)

    won = await store.settle(request.pending_id, TIMED_OUT)

    assert won is not None
    assert won.status is TIMED_OUT
    assert await store.settle(request.pending_id, RESOLVED, result="late") is None


async def test_an_answer_before_the_deadline_wins(store: RedisStore, clock: FakeClock) -> None:
    request, _ = await store.insert(make_request())
    await store.set_deadline(request.pending_id, clock.now + 10)
    clock.advance(9.999)

    won = await store.settle(request.pending_id, RESOLVED, result="just in time")

    assert won is not None
    assert won.result == "just in time"


async def test_an_answer_after_the_deadline_records_the_timeout_and_loses(
    store: RedisStore, clock: FakeClock
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


async def test_a_settled_record_and_its_key_expire_on_the_server(
    store: RedisStore, raw: Redis
) -> None:
    request, _ = await store.insert(make_request(key="expiring"))
    record_key = f"{store.prefix}:p:{request.pending_id}"
    index_key = f"{store.prefix}:k:expiring"
    assert await raw.pttl(record_key) == -1
    assert await raw.pttl(index_key) == -1

    await store.settle(request.pending_id, RESOLVED, result="x")

    for key in (record_key, index_key):
        assert 0 < await raw.pttl(key) <= 3600 * 1000


async def test_purge_drops_outcomes_past_the_retention(
    store: RedisStore, clock: FakeClock, raw: Redis
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
    assert sorted(await raw.keys(f"{store.prefix}:*")) == sorted(
        [
            f"{store.prefix}:p:{still_open.pending_id}",
            f"{store.prefix}:pending",
            f"{store.prefix}:r:room-1",
        ]
    )


async def test_reads_hide_an_expired_outcome_before_it_is_purged(
    store: RedisStore, clock: FakeClock, raw: Redis
) -> None:
    done, _ = await store.insert(make_request())
    await store.settle(done.pending_id, RESOLVED, result="x")
    clock.advance(3601)

    assert await store.fetch(done.pending_id) is None
    assert await store.fetch_many([done.pending_id]) == []
    assert await raw.exists(f"{store.prefix}:p:{done.pending_id}") == 1


# -- the change feed -------------------------------------------------------------------------


async def test_own_writes_reach_listeners_before_the_call_returns(store: RedisStore) -> None:
    changes = Changes()
    unsubscribe = store.subscribe(changes)

    request, _ = await store.insert(make_request())
    assert PendingChange(CREATED, request.pending_id) in changes.seen
    await store.settle(request.pending_id, RESOLVED, result="x")
    assert changes.seen[-1] == PendingChange(SETTLED, request.pending_id)

    unsubscribe()
    seen = len(changes.seen)
    await store.insert(make_request())
    assert len(changes.seen) == seen


async def test_a_settle_on_one_store_reaches_a_listener_on_another(
    redis_server: RedisServer, prefix: str
) -> None:
    async with (
        RedisStore(redis_server.url, prefix=prefix) as a,
        RedisStore(redis_server.url, prefix=prefix) as b,
    ):
        changes = Changes()
        unsubscribe = b.subscribe(changes)
        await changes.arrival(RESYNC)
        request, _ = await a.insert(make_request())
        await a.settle(request.pending_id, RESOLVED, result="x")

        await changes.arrival(PendingChange(CREATED, request.pending_id))
        await changes.arrival(PendingChange(SETTLED, request.pending_id))
        unsubscribe()

        record = await b.fetch(request.pending_id)
        assert record is not None
        assert record.result == "x"


async def test_a_failing_listener_is_logged_and_the_feed_goes_on(
    redis_server: RedisServer, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(change: PendingChange) -> None:
        raise RuntimeError("listener bug")

    async with (
        RedisStore(redis_server.url, prefix=prefix) as a,
        RedisStore(redis_server.url, prefix=prefix) as b,
    ):
        changes = Changes()
        b.subscribe(broken)
        b.subscribe(changes)
        await changes.arrival(RESYNC)
        first, _ = await a.insert(make_request())
        await a.settle(first.pending_id, RESOLVED, result="1")
        await changes.arrival(PendingChange(SETTLED, first.pending_id))
        second, _ = await a.insert(make_request())
        await a.settle(second.pending_id, RESOLVED, result="2")
        await changes.arrival(PendingChange(SETTLED, second.pending_id))

    failures = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.ERROR]
    assert failures
    assert all("listener" in r.getMessage() for r in failures)


async def test_closing_ends_the_feed_at_any_point_of_its_connection(
    redis_server: RedisServer, prefix: str
) -> None:
    """However far the feed got in connecting, closing (or leaving) the store ends it."""
    for ticks in range(16):
        store = RedisStore(redis_server.url, prefix=prefix)
        await store.open()
        unsubscribe = store.subscribe(Changes())
        for _ in range(ticks):
            await asyncio.sleep(0)
        if ticks % 2:
            unsubscribe()
        async with asyncio.timeout(PATIENCE):
            await store.close()

        feeds = [t for t in asyncio.all_tasks() if "redis feed" in t.get_name()]
        assert feeds == [], ticks


SETTLE_ELSEWHERE = """
import asyncio, sys
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input.stores.redis import RedisStore

async def main(url, prefix, pending_id):
    async with RedisStore(url, prefix=prefix) as store:
        won = await store.settle(
            pending_id, PendingInputStatus.RESOLVED, result="from afar", settled_by="carol"
        )
    sys.exit(0 if won is not None else 3)

asyncio.run(main(*sys.argv[1:]))
"""


async def test_a_settle_in_another_process_reaches_the_listener(
    redis_server: RedisServer, store: RedisStore
) -> None:
    request, _ = await store.insert(make_request())
    changes = Changes()
    unsubscribe = store.subscribe(changes)
    await changes.arrival(RESYNC)

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SETTLE_ELSEWHERE,
        redis_server.url,
        store.prefix,
        request.pending_id,
    )
    async with asyncio.timeout(PATIENCE):
        assert await process.wait() == 0
    await changes.arrival(PendingChange(SETTLED, request.pending_id))
    unsubscribe()

    record = await store.fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.result, record.settled_by) == (RESOLVED, "from afar", "carol")


async def test_the_feed_resyncs_after_a_restart_and_delivers_what_follows(
    server: RedisServer, prefix: str
) -> None:
    async with (
        RedisStore(server.url, prefix=prefix) as a,
        RedisStore(server.url, prefix=prefix) as b,
    ):
        before, _ = await a.insert(make_request())
        answered, _ = await a.insert(make_request())
        await a.settle(answered.pending_id, RESOLVED, result="kept")
        changes = Changes()
        b.subscribe(changes)
        await changes.arrival(RESYNC)
        mark = len(changes.seen)

        server.restart()

        await changes.arrival(RESYNC, after=mark)
        # What the server acknowledged before it went down is still there.
        kept = await b.fetch(answered.pending_id)
        assert kept is not None
        assert (kept.status, kept.result) == (RESOLVED, "kept")
        assert ids(await b.list_pending()) == [before.pending_id]
        # And the feed carries what happens next.
        await a.settle(before.pending_id, REJECTED, reason="after the restart")
        await changes.arrival(PendingChange(SETTLED, before.pending_id))


async def test_an_acknowledged_outcome_survives_a_crash(server: RedisServer, prefix: str) -> None:
    async with RedisStore(server.url, prefix=prefix) as store:
        request, _ = await store.insert(make_request())
        await store.settle(request.pending_id, RESOLVED, result="durable")

        server.restart(kill=True)

        record = await store.fetch(request.pending_id)
        assert record is not None
        assert (record.status, record.result) == (RESOLVED, "durable")


async def test_the_feed_recovers_when_its_connection_is_killed(
    redis_server: RedisServer, store: RedisStore, raw: Redis
) -> None:
    changes = Changes()
    store.subscribe(changes)
    await changes.arrival(RESYNC)
    mark = len(changes.seen)

    assert await raw.client_kill_filter(_type="pubsub") >= 1

    await changes.arrival(RESYNC, after=mark)
    async with RedisStore(redis_server.url, prefix=store.prefix) as other:
        request, _ = await other.insert(make_request())
        await other.settle(request.pending_id, RESOLVED, result="x")
    await changes.arrival(PendingChange(SETTLED, request.pending_id))


async def test_the_feed_notices_a_server_that_stops_answering(
    server: RedisServer, store: RedisStore
) -> None:
    """A frozen server keeps the socket open: only the unanswered ping reveals it."""
    lost = asyncio.Event()

    class Sentinel(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "lost" in record.getMessage():
                lost.set()

    sentinel = Sentinel(logging.WARNING)
    logging.getLogger(LOGGER).addHandler(sentinel)
    store._feed._keepalive = 0.1  # a short watch, so that the test takes no time
    changes = Changes()
    store.subscribe(changes)
    try:
        await changes.arrival(RESYNC)
        mark = len(changes.seen)
        server.pause()
        try:
            async with asyncio.timeout(PATIENCE):
                await lost.wait()
        finally:
            server.resume()
        await changes.arrival(RESYNC, after=mark)
    finally:
        logging.getLogger(LOGGER).removeHandler(sentinel)

    request, _ = await store.insert(make_request())
    assert await store.fetch(request.pending_id) is not None


async def test_commands_recover_when_their_connections_are_killed(
    store: RedisStore, raw: Redis
) -> None:
    request, _ = await store.insert(make_request())

    assert await raw.client_kill_filter(_type="normal") >= 1

    record = await store.fetch(request.pending_id)
    assert record is not None
    assert await store.settle(request.pending_id, RESOLVED, result="x") is not None


# -- faults ----------------------------------------------------------------------------------


async def test_a_stopped_server_is_unavailable_until_it_is_back(
    server: RedisServer, store: RedisStore
) -> None:
    request, _ = await store.insert(make_request())

    server.stop()
    with pytest.raises(StoreUnavailableError, match=f"127.0.0.1:{server.port}"):
        await store.fetch(request.pending_id)
    with pytest.raises(StoreUnavailableError):
        await store.settle(request.pending_id, RESOLVED, result="x")
    with pytest.raises(StoreUnavailableError):
        await store.list_pending()
    server.start()

    assert await store.settle(request.pending_id, RESOLVED, result="x") is not None


async def test_an_unreachable_server_is_named_without_its_password() -> None:
    with silent_port() as port:
        store = RedisStore(f"redis://user:s3cret@127.0.0.1:{port}/3")
        try:
            with pytest.raises(StoreUnavailableError) as caught:
                await store.open()
        finally:
            await store.close()

    message = str(caught.value)
    assert f"redis://user@127.0.0.1:{port}/3" in message
    assert "s3cret" not in message


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"format": "someone.else.v3"}, "not a roomkit.pending.v1 record"),
        ({"arguments": "[1, 2"}, "'arguments'"),
        ({"channel_type": "pigeon"}, "'channel_type'"),
    ],
)
async def test_a_foreign_hash_is_corrupt_by_id_and_skipped_in_listings(
    store: RedisStore,
    raw: Redis,
    caplog: pytest.LogCaptureFixture,
    overrides: dict[str, str],
    complaint: str,
) -> None:
    good, _ = await store.insert(make_request(created_at=datetime(2030, 1, 1, tzinfo=UTC)))
    await write_foreign(raw, store.prefix, **overrides)

    with pytest.raises(CorruptRecordError, match=complaint):
        await store.fetch("alien")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        listed = await store.list_pending()
        in_room = await store.list_pending(room_id="room-1")
        many = await store.fetch_many(["alien", good.pending_id])

    assert ids(listed) == ids(in_room) == ids(many) == [good.pending_id]
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 3
    assert all("alien" in r.getMessage() for r in warnings)


async def test_a_key_of_another_type_is_corrupt(store: RedisStore, raw: Redis) -> None:
    await raw.set(f"{store.prefix}:p:alien", "just a string")

    with pytest.raises(CorruptRecordError, match="alien"):
        await store.fetch("alien")
    with pytest.raises(StoreError):
        await store.settle("alien", RESOLVED, result="x")
    assert await store.fetch_many(["alien"]) == []


async def test_a_corrupt_deadline_refuses_the_settle(store: RedisStore, raw: Redis) -> None:
    await write_foreign(raw, store.prefix, deadline="soon")

    with pytest.raises(CorruptRecordError, match="alien"):
        await store.settle("alien", RESOLVED, result="x")
    with pytest.raises(CorruptRecordError, match="alien"):
        await store.set_deadline("alien", 1.0)


@pytest.mark.parametrize(
    ("make", "error", "name"),
    [
        (lambda url: RedisStore(42), TypeError, "url"),  # type: ignore[arg-type]
        (lambda url: RedisStore("http://example.com"), ValueError, "url"),
        (lambda url: RedisStore(url, client=Redis()), TypeError, "url or client"),
        (lambda url: RedisStore(client="redis://x"), TypeError, "client"),  # type: ignore[arg-type]
        (lambda url: RedisStore(url, prefix=""), ValueError, "prefix"),
        (lambda url: RedisStore(url, prefix=7), ValueError, "prefix"),  # type: ignore[arg-type]
        (lambda url: RedisStore(url, retention_seconds=0), ValueError, "retention_seconds"),
        (lambda url: RedisStore(url, retention_seconds="1"), TypeError, "retention_seconds"),  # type: ignore[arg-type]
        (lambda url: RedisStore(url, backstop_interval=-0.5), ValueError, "backstop_interval"),
        (lambda url: RedisStore(url, backstop_interval=True), TypeError, "backstop_interval"),
        (lambda url: RedisStore(url, clock=5), TypeError, "clock"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_argument_is_refused_by_name(
    make: Callable[[str], RedisStore], error: type[Exception], name: str
) -> None:
    with pytest.raises(error, match=name):
        make("redis://127.0.0.1:1/0")


def test_a_listener_must_be_callable() -> None:
    store = RedisStore("redis://127.0.0.1:1/0")
    with pytest.raises(TypeError, match="listener"):
        store.subscribe("not a function")  # type: ignore[arg-type]
