"""Requests made and settled while the notifier cannot record their steps are still told:
past the changes it holds for a store that is away (``HELD``), or after a fault that is no
outage, the notifier used to catch up from what was open and what its outbox held, and a
request made and settled meanwhile was in neither: how it ended went untold."""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.notify.receiver import Receiver
from tests.notify.test_store_outage import notifier_log
from tests.tools.human_input.stores.store_kit import PATIENCE

import roomkit.notify._changes as heard_changes
from roomkit.notify import Notifier, Webhook
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.tools.human_input import HumanInputHandler


@dataclass
class Site:
    """Where the requests are made (``writer``), the handler the notifier follows
    (``watched``; the same one, or another on the same store), and ``block``, which stops
    (``True``) or lets again (``False``) the watched handler's writes to the outbox."""

    writer: HumanInputHandler
    watched: HumanInputHandler
    block: Callable[[bool], Awaitable[None]]


@asynccontextmanager
async def sqlite_site(tmp_path: Path) -> AsyncIterator[Site]:
    """A trigger refuses every row added to the outbox: each turn meets a store fault, and
    the notifier holds the changes as for an outage."""
    import sqlite3

    from roomkit.stores.sqlite import SQLiteStore

    path = tmp_path / "gap.db"

    def block_now(on: bool) -> None:
        with sqlite3.connect(path, timeout=PATIENCE) as db:
            if on:
                db.execute(
                    "CREATE TRIGGER gap BEFORE INSERT ON roomkit_outbox "
                    "BEGIN SELECT RAISE(ABORT, 'the outbox is blocked'); END"
                )
            else:
                db.execute("DROP TRIGGER gap")

    async def block(on: bool) -> None:
        await asyncio.to_thread(block_now, on)

    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        yield Site(handler, handler, block)
        await handler.close()


@asynccontextmanager
async def postgres_site(dsn: str, schema: str) -> AsyncIterator[Site]:
    """A check no row passes refuses every row the outbox adds or changes."""
    import psycopg

    from roomkit.stores.postgres import PostgresStore

    async def block(on: bool) -> None:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
            if on:
                await db.execute(
                    f"ALTER TABLE {schema}.roomkit_outbox "
                    "ADD CONSTRAINT gap CHECK (false) NOT VALID"
                )
            else:
                await db.execute(f"ALTER TABLE {schema}.roomkit_outbox DROP CONSTRAINT gap")

    async with PostgresStore(dsn, schema=schema, connect_timeout=1) as store:
        handler = HumanInputHandler(store=store)
        yield Site(handler, handler, block)
        await handler.close()


@asynccontextmanager
async def redis_site(url: str) -> AsyncIterator[Site]:
    """The notifier's store signs in as a user that may only read while blocked: the server
    refuses its writes (a fault that is no outage), while another store makes the requests."""
    from redis.asyncio import Redis

    from roomkit.stores.redis import RedisStore

    prefix, user, secret = f"gap{os.urandom(4).hex()}", f"gap{os.urandom(4).hex()}", "s3cret"
    admin = Redis.from_url(url)
    await admin.execute_command("ACL", "SETUSER", user, "on", f">{secret}", "~*", "&*", "+@all")

    async def block(on: bool) -> None:
        keys = "%R~*" if on else "~*"
        await admin.execute_command("ACL", "SETUSER", user, "resetkeys", keys)

    as_user = url.replace("redis://", f"redis://{user}:{secret}@", 1)
    try:
        async with AsyncExitStack() as stack:
            writing = await stack.enter_async_context(RedisStore(url, prefix=prefix))
            watching = await stack.enter_async_context(RedisStore(as_user, prefix=prefix))
            writer = HumanInputHandler(store=writing)
            watched = HumanInputHandler(store=watching)
            yield Site(writer, watched, block)
            await watched.close()
            await writer.close()
    finally:
        await admin.execute_command("ACL", "DELUSER", user)
        await admin.aclose()


@pytest.fixture(params=["sqlite", "redis", "postgres"])
async def site(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Site]:
    if request.param == "sqlite":
        opened = sqlite_site(tmp_path)
    elif request.param == "redis":
        opened = redis_site(request.getfixturevalue("redis_server").url)
    else:
        opened = postgres_site(
            request.getfixturevalue("postgres_server").dsn,
            request.getfixturevalue("postgres_schema"),
        )
    async with opened as site:
        yield site


class TurnFailed(logging.Handler):
    """Sets an event at the first turn of the notifier's loop that fails."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "the store is unreachable" in text or "a turn failed" in text:
            self.seen.set()


@pytest.mark.timeout(120)
async def test_requests_made_and_settled_in_a_gap_are_told_how_they_ended(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outbox refuses the notifier's steps while three requests are made and settled,
    one announced before is settled and one more is made: once the outbox takes steps again,
    each is told once what is owed (an announcement to the one still open, an ending to
    each settled one), though far more changes came than the notifier holds."""
    monkeypatch.setattr(heard_changes, "HELD", 2)
    writer = site.writer
    with notifier_log() as logger:
        async with Receiver() as receiver:
            webhook = Webhook(receiver.url, receiver.secret)
            async with Notifier(site.watched, [webhook], poll=0.05) as notifier:
                before = await writer.create("ask", {"question": "Before?"}, actor_id="alice")
                async with asyncio.timeout(PATIENCE):
                    await notifier.wait_idle()
                last = PendingChange(PendingChangeKind.SETTLED, before.pending_id)
                heard_last = asyncio.Event()

                def on_change(change: PendingChange) -> None:
                    if change == last:
                        heard_last.set()

                unsubscribe = site.watched.subscribe(on_change)
                await site.block(True)
                try:
                    made = []
                    for n in range(3):
                        request = await writer.create(
                            "ask", {"question": f"In the gap {n}?"}, actor_id="alice"
                        )
                        assert await writer.aresolve(request.pending_id, "yes", by="alice")
                        made.append(request.pending_id)
                    still = await writer.create("ask", {"question": "Open?"}, actor_id="bob")
                    assert await writer.aresolve(before.pending_id, "yes", by="alice")
                    async with asyncio.timeout(PATIENCE):
                        await heard_last.wait()
                    # A turn that fails once every change is heard: none of them is recorded.
                    failed = TurnFailed()
                    logger.addHandler(failed)
                    try:
                        async with asyncio.timeout(PATIENCE):
                            await failed.seen.wait()
                    finally:
                        logger.removeHandler(failed)
                finally:
                    unsubscribe()
                    await site.block(False)
                async with asyncio.timeout(PATIENCE):
                    await notifier.wait_idle()
            told = Counter((body["pending_id"], body["type"]) for _, body in receiver.deliveries)
    expected = Counter(
        {
            (before.pending_id, "question_pending"): 1,
            (before.pending_id, "question_settled"): 1,
            (still.pending_id, "question_pending"): 1,
            **{(pending_id, "question_settled"): 1 for pending_id in made},
        }
    )
    assert told == expected
