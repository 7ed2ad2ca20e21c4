"""A trail read a page of chains at a time: every store's stream gives what its whole read
gives, and the check fed page by page names what the whole check names
(``test_audit_memory`` measures what ``roomkit audit`` holds).

The stores are filled as ``test_trail_tampering`` fills them
(:func:`~tests.tools.human_input.stores.trail_places.fill`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.test_trail_tampering import place
from tests.tools.human_input.stores.trail_places import (
    KEY,
    KEYS,
    MemoryPlace,
    Place,
    PostgresPlace,
    fill,
    postgres_database,
    read_trail,
)

from roomkit import HumanInputHandler
from roomkit.stores import (
    ChainRead,
    StoreTrail,
    TrailChecker,
    TrailReport,
    check_trail,
)
from roomkit.stores._trail import Checkpoint
from roomkit.stores.postgres import _link as postgres_link

__all__ = ["place"]


@asynccontextmanager
async def opened(place: Place) -> AsyncIterator[tuple[StoreTrail, HumanInputHandler]]:
    """The trail of ``place``, signing with the test key, and a handler on its store."""
    if isinstance(place, MemoryPlace):
        yield place.trail, place.handler
        return
    async with place.open() as store:
        store.trail.use_keys(KEYS)
        yield store.trail, HumanInputHandler(store=store)


async def streamed(
    trail: StoreTrail, page: int
) -> tuple[list[list[ChainRead]], list[Checkpoint], set[str]]:
    """The pages ``trail`` streams, its checkpoints and its forgotten chains."""
    async with trail.stream(page=page) as read:
        pages = [chains async for chains in read.pages]
        return pages, read.checkpoints, read.forgotten


def checked(pages: list[list[ChainRead]], checkpoints: list[Checkpoint]) -> TrailReport:
    checker = TrailChecker(KEYS, checkpoints, now=time.time())
    for chains in pages:
        for chain in chains:
            checker.chain(*chain)
    return checker.finish()


def test_the_stream_gives_what_the_read_gives_in_pages(place: Place) -> None:
    """Each chain whole, in the order of the ids, a head without its chain included, and
    the check fed page by page names what the whole check names, in the same order."""
    filled = fill(place)
    rows = place.rows(filled.approval)
    place.set_rows(filled.approval, [rows[0], (rows[1][0], rows[1][1] + " "), *rows[2:]])
    place.set_rows(filled.question, [])  # its signed head remains

    async def work() -> tuple[list[list[ChainRead]], list[Checkpoint], set[str]]:
        async with opened(place) as (trail, handler):
            for _ in range(3):
                asked = await handler.create("Ask", {"question": "?"}, room_id="r3")
                assert await handler.aresolve(asked.pending_id, "yes", by="bob")
            return await streamed(trail, page=2)

    pages, checkpoints, forgotten = asyncio.run(work())
    whole = read_trail(place)
    assert [len(chains) for chains in pages] == [2, 2, 1]
    assert [chain for chains in pages for chain in chains] == list(whole.chain_reads())
    assert (checkpoints, forgotten) == (whole.checkpoints, whole.forgotten)
    report = checked(pages, checkpoints)
    assert report == check_trail(whole, KEYS, now=time.time())
    assert f"the history of {filled.approval!r} breaks at entry 1" in report.problems[0]
    assert any(f"history of {filled.question!r} was deleted" in p for p in report.problems)


def test_a_checkpoint_written_while_the_chains_are_read_is_not_taken_for_a_deleted_one(
    place: Place,
) -> None:
    """A checkpoint written after the stream read the checkpoints signs a head again with
    its number: the pages give the head as it was (one snapshot), or the stream names the
    checkpoint once its last page is read (Redis)."""
    fill(place)

    async def work() -> TrailReport:
        # The checkpoint is another process's: a SQLite store's stream holds its connection.
        async with opened(place) as (trail, handler), opened(place) as (other, _):
            asked = await handler.create("Ask", {"question": "?"}, room_id="r3")
            assert await handler.aresolve(asked.pending_id, "yes", by="bob")
            async with trail.stream(page=1) as read:
                checker = TrailChecker(KEYS, read.checkpoints, now=time.time())
                assert (await other.checkpoint()).checkpoint is not None
                async for chains in read.pages:
                    checker.chain(*chains[0])
            return checker.finish(read.later)

    report = asyncio.run(work())
    assert report.problems == []
    assert report.chains == 3


class SkippingLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock a test moves on: the timers due meanwhile run at its next
    turn, as if that long had passed."""

    skipped = 0.0

    def time(self) -> float:
        return super().time() + self.skipped


def test_a_postgres_stream_read_slowly_is_bounded_per_page_not_over_the_whole(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export written to a slow pipe holds the stream's connection longer than a call of
    the store may take: the server's silence is bounded per page read, so the pages after a
    slow reader's pause still come (the connection was hung up once its first block's bound
    was up)."""
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    place = PostgresPlace(postgres_database(postgres_server.dsn))
    fill(place)

    async def work() -> int:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, SkippingLoop)
        async with opened(place) as (trail, _):
            read_pages = 0
            async with trail.stream(page=1) as read:
                async for _chains in read.pages:
                    read_pages += 1
                    loop.skipped += postgres_link.SILENCE + 1  # slower than a call's bound
            return read_pages

    with asyncio.Runner(loop_factory=SkippingLoop) as runner:
        assert runner.run(work()) == 2
