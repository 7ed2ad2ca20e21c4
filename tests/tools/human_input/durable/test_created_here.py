"""A wait on a request this process created reads nothing before it parks.

The record the insert returned is the stored one; a settle made here hands its record to the
wait (on SQLite the settle's change carries it, so the sweeper reads nothing either); and a
change made elsewhere in between is named by the sweeper's next look at the change counter,
even when no hint of it arrives. A look that began between the insert and the wait may have
passed the change by: the wait then reads the request, as a wait on any other request does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.tools.human_input.durable.cross_process_peer import feed_live, parked
from tests.tools.human_input.durable.store_fixtures import Opener
from tests.tools.human_input.durable.test_backstop import deafen, looked
from tests.tools.human_input.stores.store_kit import PATIENCE

from roomkit.core.exceptions import RequestWithdrawnError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

durable = pytest.mark.parametrize("store_kind", ["sqlite", "redis", "postgres"])

QUESTION = {"question": "Ship it?"}
LONG = 3600.0
"""A backstop interval no test reaches: the only look is the one a first wait takes."""


async def one_wait_answered(handler: HumanInputHandler) -> None:
    """A wait parked and answered, so that the handler's backstop has looked once."""
    request = await handler.create("AskUserQuestion", QUESTION)
    wait = asyncio.create_task(handler.wait(request.pending_id, timeout=None))
    async with asyncio.timeout(PATIENCE):
        await parked(handler, 1, [wait])
        await looked(handler, 1)
    assert await handler.aresolve(request.pending_id, "first")
    assert await wait == "first"


async def test_an_answer_given_here_reaches_a_wait_created_here_with_no_read(
    tmp_path: Path,
) -> None:
    async with SQLiteStore(tmp_path / "pending.db", backstop_interval=LONG) as store:
        handler = HumanInputHandler(store=store)
        await one_wait_answered(handler)
        request = await handler.create("AskUserQuestion", QUESTION)
        before = handler.statistics()

        wait = asyncio.create_task(handler.wait(request.pending_id, timeout=None))
        await asyncio.sleep(0)  # one loop turn: the wait runs until it first suspends
        # Parked at once: it read nothing first.
        assert handler.statistics().parked_waits == 1

        assert await handler.aresolve(request.pending_id, "yes")
        assert await wait == "yes"
        assert handler.statistics().records_read == before.records_read
        await handler.close()


async def test_an_answer_given_here_before_the_wait_is_handed_to_it(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "pending.db", backstop_interval=LONG) as store:
        handler = HumanInputHandler(store=store)
        await one_wait_answered(handler)
        request = await handler.create("AskUserQuestion", QUESTION)
        assert await handler.aresolve(request.pending_id, "early")

        assert await handler.wait(request.pending_id, timeout=None) == "early"
        settled = await handler.get_request(request.pending_id)
        assert settled is not None
        assert settled.status is PendingInputStatus.RESOLVED
        await handler.close()


@durable
async def test_an_answer_given_elsewhere_before_the_wait_is_found_without_a_hint(
    open_another: Opener,
) -> None:
    """The answer comes from another process between the create and the wait, and no hint
    of it reaches this one: the next look names it."""
    waiting_store = open_another()
    handler = HumanInputHandler(store=waiting_store)
    await one_wait_answered(handler)
    await deafen(waiting_store)
    request = await handler.create("AskUserQuestion", QUESTION)

    assert await HumanInputHandler(store=open_another()).aresolve(request.pending_id, "there")

    async with asyncio.timeout(PATIENCE):
        assert await handler.wait(request.pending_id, timeout=None) == "there"
    await handler.close()


@durable
async def test_a_request_created_here_and_withdrawn_elsewhere_ends_its_wait(
    open_another: Opener,
) -> None:
    handler = HumanInputHandler(store=open_another())
    await one_wait_answered(handler)
    request = await handler.create("AskUserQuestion", QUESTION)

    assert await HumanInputHandler(store=open_another()).arelease(request.pending_id)

    async with asyncio.timeout(PATIENCE):
        with pytest.raises(RequestWithdrawnError):
            await handler.wait(request.pending_id, timeout=None)
    await handler.close()


@durable
async def test_a_wait_that_leaves_the_deadline_as_it_is_parks_with_no_trip(
    open_another: Opener, store_kind: str
) -> None:
    """The request's deadline comes before the wait's: the deadline in force stays, and the
    wait parks without asking the store to keep it."""
    # Nothing may make the wait read the request first, as a look begun between the create
    # and the wait does (the short backstops of ``open_another`` take one whenever the
    # sweeper still runs an interval on), and so does the feed's RESYNC as it goes live.
    handler = HumanInputHandler(store=open_another(backstop_interval=LONG))
    await feed_live(handler, store_kind)
    await one_wait_answered(handler)
    request = await handler.create("AskUserQuestion", QUESTION, timeout=LONG)

    wait = asyncio.create_task(handler.wait(request.pending_id, timeout=2 * LONG))
    await asyncio.sleep(0)  # one loop turn: the wait runs until it first suspends
    assert handler.statistics().parked_waits == 1

    stored = await handler.get_request(request.pending_id)
    assert stored is not None
    assert stored.deadline == request.deadline
    assert await handler.aresolve(request.pending_id, "yes")
    async with asyncio.timeout(PATIENCE):
        assert await wait == "yes"
    await handler.close()
