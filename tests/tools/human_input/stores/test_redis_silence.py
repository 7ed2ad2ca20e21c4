"""A Redis server that stops answering, or dies and comes back, under a handler.

A frozen server (SIGSTOP) keeps its connections open and answers nothing: every call of the
store fails as unavailable once the store's ``timeout`` has passed, saying so and what to
check, instead of waiting out the client's socket timeouts and retries. A settle cut by the
timeout may still run when the server wakes: sent again with its token, it is recorded once.
Waits parked on the store outlive a freeze and a restart (SIGKILL, then the same port and
append-only file), and wake when their requests are answered after it.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from tests.tools.human_input.durable.cross_process_peer import parked
from tests.tools.human_input.stores.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import PATIENCE, logged

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.models.room import Room, RoomEvent, TextContent
from roomkit.stores import close_stores, open_url
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler

STORE_LOGGER = "roomkit.tools.human_input.stores.redis"
HANDLER_LOGGER = "roomkit.tools.human_input"
RETRYING = "may or may not have landed"
"""What the store logs when it runs a settle again to learn its outcome."""
UNREACHABLE = "Store unreachable while waiting on answers"
"""What the handler logs when its waits cannot read the store."""
SHORT = 0.5
"""The stores' timeout in the tests that go through many calls."""
WAITS = 48


@contextmanager
def loop_errors() -> Iterator[list[dict[str, Any]]]:
    """What the event loop reports meanwhile: a background task that died of an error."""
    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: reported.append(context))
    try:
        yield reported
    finally:
        loop.set_exception_handler(before)


@asynccontextmanager
async def handler_on(store: RedisStore) -> AsyncIterator[HumanInputHandler]:
    handler = HumanInputHandler(store=store)
    try:
        yield handler
    finally:
        await handler.close()


async def ask(handler: HumanInputHandler, question: str = "Which hotel?") -> str:
    request = await handler.create("ask", {"question": question}, room_id="r")
    return request.pending_id


async def settled_entries(store: RedisStore, pending_id: str) -> list[str | None]:
    """Who each ``settled`` entry of the request's history names."""
    history = await store.read_history(pending_id)
    return [entry.get("actor") for entry in history if entry["type"] == "settled"]


async def test_a_settle_on_a_frozen_server_fails_within_the_timeout_and_counts_once_after(
    server: RedisServer, prefix: str
) -> None:
    """The default bound: the settle fails saying the server did not answer within 5 s and
    what to check; sent again once the server runs, it learns that it won, recorded once."""
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(server.url, prefix=prefix) as store,
        handler_on(store) as handler,
    ):
        pending_id = await ask(handler)
        with server.frozen(), pytest.raises(StoreUnavailableError) as caught:
            await handler.aresolve(pending_id, "Lisboa", by="alice")

        assert await handler.aresolve(pending_id, "Lisboa", by="alice")
        assert not await handler.aresolve(pending_id, "Porto", by="bob")
        assert await handler.wait(pending_id) == "Lisboa"
        assert await settled_entries(store, pending_id) == ["alice"]

    message = str(caught.value)
    assert f"127.0.0.1:{server.port}/0 did not answer within 5 s" in message
    assert "check that redis-server is running" in message
    assert "is unknown" in message


async def test_every_call_on_a_frozen_server_fails_as_unavailable_then_works_again(
    server: RedisServer, prefix: str
) -> None:
    """A create, a read, the waits' look and their read, a listing and a spend: each fails
    after the store's timeout, and each works again once the server runs."""
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(server.url, prefix=prefix, timeout=SHORT, settle_retry=0) as store,
        handler_on(store) as handler,
    ):
        pending_id = await ask(handler)
        calls = {
            "create": lambda: ask(handler, "Which room?"),
            "get_request": lambda: handler.get_request(pending_id),
            "changes_since": lambda: store.changes_since(None),
            "fetch_many": lambda: store.fetch_many([pending_id]),
            "list_pending": lambda: store.list_pending(),
            "spend_once": lambda: store.spend_once("link-1", until=None),
        }
        with server.frozen():
            # All at once: each waits out its own timeout, not the sum of the others'.
            refused = await asyncio.gather(
                *(call() for call in calls.values()), return_exceptions=True
            )
        for name, error in zip(calls, refused, strict=True):
            assert isinstance(error, StoreUnavailableError), (name, error)
            assert re.search(r"did not answer within 0\.5 s", str(error)), (name, error)

        for call in calls.values():
            await call()
        assert await handler.aresolve(pending_id, "Lisboa", by="alice")


async def test_a_settle_running_again_lands_once_the_server_is_back(
    server: RedisServer, prefix: str
) -> None:
    """With time to run it again, a settle cut by the timeout is retried with its token
    until the server runs: it reports its win, and the outcome is recorded once."""
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(server.url, prefix=prefix, timeout=SHORT, settle_retry=PATIENCE) as store,
        handler_on(store) as handler,
    ):
        pending_id = await ask(handler)
        with logged(STORE_LOGGER, RETRYING, level=logging.INFO) as retrying:
            with server.frozen():
                settling = asyncio.create_task(handler.aresolve(pending_id, "Lisboa", by="alice"))
                await retrying.wait()
            assert await settling

        assert await handler.wait(pending_id) == "Lisboa"
        assert await settled_entries(store, pending_id) == ["alice"]


async def test_waits_outlive_a_frozen_server_and_wake_on_answers_after_it(
    server: RedisServer, prefix: str
) -> None:
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(server.url, prefix=prefix, timeout=SHORT) as store,
        RedisStore(server.url, prefix=prefix) as elsewhere,
        handler_on(store) as handler,
        handler_on(elsewhere) as answering,
    ):
        ids = [await ask(handler, f"Question {n}?") for n in range(WAITS)]
        with loop_errors() as errors, logged(HANDLER_LOGGER, UNREACHABLE) as unreachable:
            waits = [asyncio.create_task(handler.wait(pending_id)) for pending_id in ids]
            await parked(handler, WAITS, waits)
            with server.frozen():
                await unreachable.wait()
            for pending_id in ids:
                assert await answering.aresolve(pending_id, f"answer {pending_id}", by="bob")
            answers = await asyncio.gather(*waits)

    assert answers == [f"answer {pending_id}" for pending_id in ids]
    assert errors == []


async def test_waits_and_answers_in_flight_outlive_a_restart(
    server: RedisServer, prefix: str
) -> None:
    """SIGKILL while answers are on their way, then the server again on its port and its
    append-only file: every wait wakes with its request's one recorded answer, an answer
    that failed is recorded once when sent again, and no background task died."""
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(server.url, prefix=prefix) as store,
        RedisStore(server.url, prefix=prefix, settle_retry=0) as elsewhere,
        handler_on(store) as handler,
        handler_on(elsewhere) as answering,
    ):
        ids = [await ask(handler, f"Question {n}?") for n in range(WAITS)]
        with loop_errors() as errors, logged(HANDLER_LOGGER, UNREACHABLE) as unreachable:
            waits = [asyncio.create_task(handler.wait(pending_id)) for pending_id in ids]
            await parked(handler, WAITS, waits)
            answers = [
                asyncio.ensure_future(answering.aresolve(p, f"answer {p}", by="bob")) for p in ids
            ]
            await asyncio.sleep(0)  # the answers are on their way
            await asyncio.to_thread(server.stop, kill=True)
            await unreachable.wait()
            await asyncio.to_thread(server.start)
            outcomes = await asyncio.gather(*answers, return_exceptions=True)
            for pending_id, outcome in zip(ids, outcomes, strict=True):
                if outcome is not True:
                    assert isinstance(outcome, StoreUnavailableError), outcome
                    assert await answering.aresolve(pending_id, f"answer {pending_id}", by="bob")
            woken = await asyncio.gather(*waits)

        assert woken == [f"answer {pending_id}" for pending_id in ids]
        for pending_id in ids:
            assert await settled_entries(store, pending_id) == ["bob"], pending_id
    assert errors == []


async def test_a_timeout_in_the_url_bounds_every_call(server: RedisServer) -> None:
    """``?timeout=`` in the URL ``open_url`` opens is the stores' bound, as ``timeout=`` is."""
    requests, rooms = open_url(f"{server.url}?timeout={SHORT}")
    try:
        async with asyncio.timeout(PATIENCE):
            await requests.open()
            with server.frozen():
                with pytest.raises(StoreUnavailableError, match=r"did not answer within 0\.5 s"):
                    await requests.list_pending()
                with pytest.raises(StoreUnavailableError, match=r"did not answer within 0\.5 s"):
                    await rooms.get_room("room-1")
    finally:
        await close_stores(requests, rooms)


async def test_a_room_write_cut_by_the_timeout_says_it_may_have_landed(
    server: RedisServer,
) -> None:
    """A room store's write the frozen server did not answer says whether it was written is
    unknown (it may run when the server wakes), and what to do; a read says nothing of it."""
    requests, rooms = open_url(f"{server.url}?timeout={SHORT}")
    try:
        async with asyncio.timeout(PATIENCE):
            await rooms.open()
            await rooms.create_room(Room("room-1"))
            with server.frozen():
                with pytest.raises(StoreUnavailableError) as written:
                    await rooms.add_event(RoomEvent("room-1", "ws", "alice", TextContent("Hello")))
                with pytest.raises(StoreUnavailableError) as read:
                    await rooms.get_room("room-1")
    finally:
        await close_stores(requests, rooms)
    assert "did not answer within 0.5 s" in str(written.value)
    assert "whether this write was applied is unknown" in str(written.value)
    assert "read the room before writing it again" in str(written.value)
    assert "unknown" not in str(read.value)


def test_the_timeout_must_be_a_positive_number_of_seconds() -> None:
    for wrong in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="timeout"):
            RedisStore("redis://127.0.0.1:1/0", timeout=wrong)
    with pytest.raises(TypeError, match="timeout"):
        RedisStore("redis://127.0.0.1:1/0", timeout="5")  # type: ignore[arg-type]
