"""A wait that begins while Redis is away rides the outage out, as a parked wait does.

Its first reads (the request, its deadline) wait for the server to answer again, whether it
was stopped or frozen; its deadline still counts from the call; closing the handler, the
request's channel or the store ends it. The tests stop the session's server, which runs
again after each.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from tests.tools.human_input.durable.cross_process_peer import parked
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import FakeClock

from roomkit.core.exceptions import (
    HandlerClosedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
    StoreClosedError,
    StoreUnavailableError,
)
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler

pytestmark = pytest.mark.timeout(60)

SHORT = 0.5
"""The asking store's timeout: a call to a frozen server fails after it."""


class Side:
    """A handler on a store of its own, as another process would hold one."""

    def __init__(self, url: str, prefix: str, clock: FakeClock) -> None:
        self.store = RedisStore(url, prefix=prefix, clock=clock, settle_retry=0, timeout=SHORT)
        self.handler = HumanInputHandler(store=self.store)

    async def close(self) -> None:
        await self.handler.close()
        await self.store.close()


@pytest.fixture
async def sides(
    server: RedisServer, prefix: str, clock: FakeClock
) -> AsyncIterator[tuple[Side, Side]]:
    """The asking side, which waits, and the desk, which creates and answers."""
    asker, desk = Side(server.url, prefix, clock), Side(server.url, prefix, clock)
    await opened(asker.store)
    await opened(desk.store)
    yield asker, desk
    await asyncio.to_thread(server.start)
    await asker.close()
    await desk.close()


async def opened(store: RedisStore, attempts: int = 5) -> None:
    """Open ``store``, a running server's. Its timeout is the short one the outages need:
    on a loaded machine the open's first round trips may run past it, and an open that did
    is tried again (the next call starts a new attempt), so that the setup never fails for
    what the tests do not test."""
    for attempt in range(attempts):
        try:
            await store.open()
            return
        except StoreUnavailableError:
            if attempt == attempts - 1:
                raise


async def ask(desk: Side) -> str:
    request = await desk.handler.create("AskUserQuestion", {"question": "Where?"}, room_id="r")
    return request.pending_id


async def rides_out(handler: HumanInputHandler, wait: asyncio.Task[object]) -> None:
    """Return once ``wait`` is blocked on the outage; a wait that ended instead fails here."""
    await parked(handler, 1, [wait])
    assert not wait.done(), wait.exception()


async def test_a_wait_begun_in_an_outage_gets_the_answer_once_redis_is_back(
    server: RedisServer, sides: tuple[Side, Side]
) -> None:
    asker, desk = sides
    pending_id = await ask(desk)
    await asyncio.to_thread(server.stop)

    waiting = asyncio.create_task(asker.handler.wait(pending_id, timeout=300))
    await rides_out(asker.handler, waiting)
    await asyncio.to_thread(server.start)

    assert await desk.handler.aresolve(pending_id, "Lisbon", by="desk") is True
    assert await waiting == "Lisbon"
    assert asker.handler.statistics().parked_waits == 0


async def test_wait_settled_begun_in_an_outage_gets_the_settled_request(
    server: RedisServer, sides: tuple[Side, Side]
) -> None:
    asker, desk = sides
    pending_id = await ask(desk)
    await asyncio.to_thread(server.stop)

    waiting = asyncio.create_task(asker.handler.wait_settled(pending_id, timeout=None))
    await rides_out(asker.handler, waiting)
    await asyncio.to_thread(server.start)

    assert await desk.handler.areject(pending_id, "not now", by="desk") is True
    settled = await waiting
    assert (settled.status, settled.reject_reason, settled.settled_by) == (
        PendingInputStatus.REJECTED,
        "not now",
        "desk",
    )


async def test_the_deadline_of_a_wait_begun_in_an_outage_counts_from_the_call(
    server: RedisServer, sides: tuple[Side, Side], clock: FakeClock
) -> None:
    asker, desk = sides
    pending_id = await ask(desk)
    called = clock.now
    await asyncio.to_thread(server.stop)

    waiting = asyncio.create_task(asker.handler.wait(pending_id, timeout=10))
    await rides_out(asker.handler, waiting)
    # The outage outlasts the deadline: the timeout is recorded once the server is back.
    clock.advance(60)
    await asyncio.to_thread(server.start)

    with pytest.raises(HumanInputTimeoutError):
        await waiting
    record = await desk.store.fetch(pending_id)
    assert record is not None
    assert (record.status, record.deadline) == (PendingInputStatus.TIMED_OUT, called + 10)


async def test_a_wait_riding_out_an_outage_ends_when_its_handler_closes(
    server: RedisServer, sides: tuple[Side, Side]
) -> None:
    asker, desk = sides
    pending_id = await ask(desk)
    await asyncio.to_thread(server.stop)

    waiting = asyncio.create_task(asker.handler.wait(pending_id, timeout=300))
    await rides_out(asker.handler, waiting)
    await asker.handler.close()

    with pytest.raises(HandlerClosedError):
        await waiting
    assert asker.handler.statistics().parked_waits == 0


async def test_a_wait_riding_out_an_outage_ends_when_its_store_closes(
    server: RedisServer, sides: tuple[Side, Side]
) -> None:
    asker, desk = sides
    pending_id = await ask(desk)
    await asyncio.to_thread(server.stop)

    waiting = asyncio.create_task(asker.handler.wait(pending_id, timeout=300))
    await rides_out(asker.handler, waiting)
    await asker.store.close()

    with pytest.raises(StoreClosedError):
        await waiting


async def test_many_waits_begun_in_an_outage_all_get_their_answers(
    server: RedisServer, sides: tuple[Side, Side]
) -> None:
    asker, desk = sides
    pending_ids = [await ask(desk) for _ in range(50)]
    await asyncio.to_thread(server.stop)

    waits = [asyncio.create_task(asker.handler.wait(pid, timeout=300)) for pid in pending_ids]
    await parked(asker.handler, len(waits), waits)
    assert not any(wait.done() for wait in waits)
    await asyncio.to_thread(server.start)

    for pending_id in pending_ids:
        assert await desk.handler.aresolve(pending_id, f"to {pending_id}", by="desk") is True
    assert await asyncio.gather(*waits) == [f"to {pid}" for pid in pending_ids]


async def test_a_wait_begun_on_a_frozen_server_gets_the_answer_once_it_runs(
    server: RedisServer, sides: tuple[Side, Side]
) -> None:
    """A server that answers nothing (SIGSTOP) fails the wait's first read after the
    store's timeout; the wait rides it out and wakes on the answer given after it."""
    asker, desk = sides
    pending_id = await ask(desk)
    server.pause()
    try:
        waiting = asyncio.create_task(asker.handler.wait(pending_id, timeout=300))
        await rides_out(asker.handler, waiting)
    finally:
        server.resume()

    assert await desk.handler.aresolve(pending_id, "Lisbon", by="desk") is True
    assert await waiting == "Lisbon"


async def test_a_wait_cancelled_in_an_outage_ends_cancelled_and_its_request_stays_open(
    server: RedisServer, sides: tuple[Side, Side], caplog: pytest.LogCaptureFixture
) -> None:
    asker, desk = sides
    pending_id = await ask(desk)
    waiting = asyncio.create_task(asker.handler.wait(pending_id, timeout=300))
    await parked(asker.handler, 1, [waiting])
    await asyncio.to_thread(server.stop)

    # Its withdrawal cannot reach the store: the cut still reads as a cut.
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert "could not be withdrawn as its wait was cut" in caplog.text

    await asyncio.to_thread(server.start)
    request = await desk.handler.get_request(pending_id)
    assert request is not None
    assert request.status is PendingInputStatus.PENDING
    assert await desk.handler.aresolve(pending_id, "Here")


async def test_a_wait_riding_out_an_outage_ends_when_its_channel_closes(
    server: RedisServer, sides: tuple[Side, Side]
) -> None:
    """A close of the request's channel ends a wait still blocked on its first read, as a
    close of the handler does; a wait on another channel rides on to its answer."""
    asker, desk = sides
    closing = await asker.handler.create(
        "AskUserQuestion", {"question": "Where?"}, room_id="r", channel_id="c"
    )
    staying = await asker.handler.create(
        "AskUserQuestion", {"question": "When?"}, room_id="r", channel_id="d"
    )
    await asyncio.to_thread(server.stop)

    ended = asyncio.create_task(asker.handler.wait(closing.pending_id, timeout=300))
    riding = asyncio.create_task(asker.handler.wait(staying.pending_id, timeout=300))
    await parked(asker.handler, 2, [ended, riding])
    assert not ended.done()
    assert not riding.done()
    await asker.handler.close(channel_id="c")

    with pytest.raises(HandlerClosedError):
        await ended
    assert not riding.done()
    await asyncio.to_thread(server.start)
    assert await desk.handler.aresolve(staying.pending_id, "Tomorrow", by="desk") is True
    assert await riding == "Tomorrow"
    assert asker.handler.statistics().parked_waits == 0


async def test_a_wait_riding_out_an_outage_on_a_request_made_elsewhere_ends_once_read(
    server: RedisServer, sides: tuple[Side, Side]
) -> None:
    """The channel of a request made by another process is known once read: a close of it
    meanwhile ends the wait as the server answers, and the request stays open."""
    asker, desk = sides
    request = await desk.handler.create(
        "AskUserQuestion", {"question": "Where?"}, room_id="r", channel_id="c"
    )
    await asyncio.to_thread(server.stop)

    waiting = asyncio.create_task(asker.handler.wait(request.pending_id, timeout=300))
    await rides_out(asker.handler, waiting)
    await asker.handler.close(channel_id="c")
    assert not waiting.done()
    await asyncio.to_thread(server.start)

    with pytest.raises(HandlerClosedError):
        await waiting
    record = await desk.store.fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.deadline) == (PendingInputStatus.PENDING, None)


@pytest.mark.parametrize(
    ("key", "error"),
    [("k1", HandlerClosedError), (None, RequestWithdrawnError)],
    ids=["keyed", "unkeyed"],
)
@pytest.mark.parametrize("outage", [False, True], ids=["up", "stopped"])
async def test_a_wait_begun_after_its_channel_closed_ends_at_once(
    server: RedisServer,
    sides: tuple[Side, Side],
    key: str | None,
    error: type[Exception],
    outage: bool,
) -> None:
    """Whether Redis answers or not, with the same error: a keyed request stays open for
    whoever re-attaches to it, an unkeyed one was withdrawn as its channel closed."""
    asker, _ = sides
    request = await asker.handler.create(
        "AskUserQuestion", {"question": "Where?"}, room_id="r", channel_id="c", key=key
    )
    await asker.handler.close(channel_id="c")
    if outage:
        await asyncio.to_thread(server.stop)

    waiting = asyncio.create_task(asker.handler.wait(request.pending_id, timeout=300))
    await parked(asker.handler, 1, [waiting])
    assert waiting.done()
    with pytest.raises(error):
        await waiting
    assert asker.handler.statistics().parked_waits == 0
