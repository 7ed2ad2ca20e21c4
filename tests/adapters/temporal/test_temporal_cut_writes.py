"""The expire activity's ``defaulted`` entry and the update surface's ``delivered`` entry,
when a Redis store cuts their append on the store's ``timeout=``, or loses the server under
it.

Each expire attempt runs in Temporal's own ``ActivityEnvironment``; the next attempt gets
what the one before heartbeat, as the server hands it on. The relay freezes the server
(SIGSTOP) or stops it just before the append reaches it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest
from temporalio import worker
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.temporal_server import TemporalServer
from tests.adapters.temporal.test_temporal_delivery import delivered
from tests.adapters.temporal.workflows import Ask
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.store_kit import FakeClock

from roomkit.adapters.temporal import TemporalUpdates, activities, update_id_of
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.notify import Notice
from roomkit.stores import new_entry
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler

pytestmark = pytest.mark.timeout(60)

SHORT = 0.5
"""The store's timeout: a call to the frozen server fails after it."""
T = TypeVar("T")
APPEND = b'"defaulted"'
"""What the append of a ``defaulted`` entry, and nothing else the expire activity sends,
holds."""
LADDER = {"steps": [], "default": "Hotel B"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def handler(relay: Relay, clock: FakeClock) -> AsyncIterator[HumanInputHandler]:
    store = RedisStore(relay.url, prefix=fresh_prefix(), timeout=SHORT, clock=clock)
    handler = HumanInputHandler(store=store)
    yield handler
    await handler.close()
    await store.close()


class Attempts:
    """The attempts of one expire activity, each numbered after the one before."""

    def __init__(self, handler: HumanInputHandler, clock: FakeClock) -> None:
        self.handler = handler
        self.clock = clock
        self.create, self.expire, _ = activities(handler)
        self.environment = ActivityEnvironment()

    async def overdue(self, key: str) -> dict[str, Any]:
        """The expire activity's input for a request of a ladder with a default, overdue."""
        created = await self.environment.run(
            self.create,
            {
                "kind": "question",
                "tool_name": "choose",
                "arguments": {"question": "Which hotel?"},
                "key": key,
                "seq": 1,
                "timeout": 60.0,
                "actor": "alice",
                "room_id": "room",
                "ladder": LADDER,
            },
        )
        self.clock.advance(120)  # the workflow's timer fired
        return {"pending_id": created["pending_id"], "digest": created["digest"], "ladder": LADDER}

    async def next(self, ask: dict[str, Any]) -> dict[str, Any]:
        """Run the next attempt."""
        info = self.environment.info
        self.environment.info = dataclasses.replace(info, attempt=info.attempt + 1)
        result: dict[str, Any] = await self.environment.run(self.expire, ask)
        return result


async def defaults(handler: HumanInputHandler, pending_id: str) -> list[str]:
    return [e["answer"] for e in await handler.history(pending_id) if e["type"] == "defaulted"]


async def warmed(attempts: Attempts) -> None:
    """Have the server hold every script the activity runs, and the pool a few connections:
    what the frozen server runs late is the write itself, not a NOSCRIPT refusal."""
    ask = await attempts.overdue("wf/warm-up//1")
    assert (await attempts.environment.run(attempts.expire, ask))["default"] == "Hotel B"
    await asyncio.gather(*(attempts.handler.get_request(ask["pending_id"]) for _ in range(4)))


async def test_a_default_cut_by_the_timeout_is_recorded_once(
    redis_restartable: RedisServer, relay: Relay, handler: HumanInputHandler, clock: FakeClock
) -> None:
    """The append is cut, and runs when the server does: the next attempt finds it and
    records nothing more."""
    attempts = Attempts(handler, clock)
    await warmed(attempts)
    ask = await attempts.overdue("wf/cut//1")
    relay.call_before(APPEND, redis_restartable.pause)
    try:
        with pytest.raises(StoreUnavailableError):
            await attempts.environment.run(attempts.expire, ask)
    finally:
        redis_restartable.resume()
    while not await defaults(handler, ask["pending_id"]):
        await asyncio.to_thread(lambda: None)  # the server runs what it held first

    assert (await attempts.next(ask))["default"] == "Hotel B"
    assert (await attempts.next(ask))["default"] == "Hotel B"
    assert await defaults(handler, ask["pending_id"]) == ["Hotel B"]


async def test_a_default_that_did_not_land_is_recorded_by_the_next_attempt(
    redis_restartable: RedisServer, relay: Relay, handler: HumanInputHandler, clock: FakeClock
) -> None:
    """The server stopped before the append reached it: the next attempt records it."""
    attempts = Attempts(handler, clock)
    await warmed(attempts)
    ask = await attempts.overdue("wf/lost//1")
    relay.call_before(APPEND, redis_restartable.stop)
    with pytest.raises(StoreUnavailableError):
        await attempts.environment.run(attempts.expire, ask)
    await asyncio.to_thread(redis_restartable.start)

    assert (await attempts.next(ask))["default"] == "Hotel B"
    assert (await attempts.next(ask))["default"] == "Hotel B"
    assert await defaults(handler, ask["pending_id"]) == ["Hotel B"]


@pytest.fixture
async def world(temporal_server: TemporalServer, relay: Relay) -> AsyncIterator[World]:
    """A world whose stores reach Redis through the relay, giving up on a call after
    :data:`SHORT`."""
    client = await Client.connect(temporal_server.address)
    world = World(temporal_server, relay.url, client, timeout=SHORT)
    await world.setup()
    try:
        yield world
    finally:
        await world.close()


async def warmed_records(handler: HumanInputHandler) -> str:
    """Have the server hold the scripts of a record and a claim, and the pool a few
    connections: what the frozen server runs late is the append itself, not a NOSCRIPT
    refusal."""
    warm = await handler.create("AskUserQuestion", {"question": "Warm?"}, room_id="room")
    await handler.record(warm.pending_id, new_entry("shown", actor="warm-up", surface="desk"))
    assert await handler.ledger.spend_once("warm-up", until=None)
    await handler.ledger.refund_spent("warm-up")
    await asyncio.gather(*(_again(lambda: handler.get_request(warm.pending_id)) for _ in range(4)))
    return warm.pending_id


async def _again(read: Callable[[], Awaitable[T]]) -> T:
    """What ``read`` reads, tried again when it outlasts :data:`SHORT`: a loaded machine may
    take longer than that to open a connection of the pool's own through the relay (what
    the tests bound is the cut write, not this)."""
    for _ in range(9):
        try:
            return await read()
        except StoreUnavailableError:
            continue
    return await read()


async def test_a_delivered_entry_cut_by_the_timeout_is_recorded_once(
    redis_restartable: RedisServer, relay: Relay, world: World
) -> None:
    """The append of the ``delivered`` entry is cut, and runs when the server does: a
    delivery of the same settle from another process records nothing more."""
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await world.answer(pending_id, "alice", {"answer": "Hotel A"})
        request = await world.desk_handler.get_request(pending_id)
        assert request is not None
        notice = Notice("question_settled", f"{pending_id}.settle.temporal.-", request)
        first, second = TemporalUpdates(world.client), TemporalUpdates(world.client)
        # The desk's handler wrote the settle: its first append is linked to the chain's
        # head as it stands, so the one the frozen server holds is the one that lands.
        first.bind_handler(world.desk_handler)
        second.bind_handler(world.handler())
        await warmed_records(world.desk_handler)
        claim = f"temporal-delivered:{pending_id}".encode()

        def freeze() -> None:
            redis_restartable.pause()
            # Whatever the delivery sends next about its claim finds the server running.
            relay.call_before(claim, redis_restartable.resume)

        relay.call_before(b'"delivered"', freeze)
        try:
            await first.send(notice)
        finally:
            redis_restartable.resume()
        while not delivered(await _again(lambda: world.desk_handler.history(pending_id))):
            await asyncio.to_thread(lambda: None)  # the server runs what it held first
        await second.send(notice)
        assert await handle.result() == {"answer": "Hotel A"}
        await first.aclose()
        await second.aclose()
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e["update_id"]) for e in entries] == [(True, update_id_of(pending_id))]


class ResumedWhenAnAttemptFails(worker.Interceptor):
    """Lets the frozen server run again once an activity's attempt failed, before Temporal
    retries it (the retry's connections find the server running)."""

    def __init__(self, server: RedisServer) -> None:
        self.server = server

    def intercept_activity(
        self, next: worker.ActivityInboundInterceptor
    ) -> worker.ActivityInboundInterceptor:
        return _Resuming(next, self.server)


class _Resuming(worker.ActivityInboundInterceptor):
    def __init__(self, next: worker.ActivityInboundInterceptor, server: RedisServer) -> None:
        super().__init__(next)
        self.server = server

    async def execute_activity(self, input: worker.ExecuteActivityInput) -> Any:
        try:
            return await super().execute_activity(input)
        except Exception:
            self.server.resume()
            raise


async def test_a_default_cut_by_the_timeout_is_recorded_once_by_a_workflow(
    redis_restartable: RedisServer, relay: Relay, world: World
) -> None:
    """On the dev server: the expire activity's append is cut and lands late, and Temporal's
    retry of the activity finds it in the history, or its own append refused after it, and
    records nothing more."""
    warm = await warmed_records(world.worker_handler)
    assert await world.created.next() == warm
    resuming = ResumedWhenAnAttemptFails(redis_restartable)
    async with running(world.worker(Ask, interceptors=[resuming])):
        handle = await world.start(Ask, {"default": "Hotel B", "timeout": 1, "grace": 0.1})
        pending_id = await world.created.next()
        relay.call_before(b'"defaulted"', redis_restartable.pause)
        try:
            result = await handle.result()
        finally:
            redis_restartable.resume()
    assert result == {"answer": "Hotel B"}
    assert await defaults(world.desk_handler, pending_id) == ["Hotel B"]
