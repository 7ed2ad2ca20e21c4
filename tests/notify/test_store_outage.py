"""The notifier outlives an outage of its store's server: it says so, keeps trying, and
carries on once the server is back (it used to end at the first read that failed)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from tests.notify.receiver import Receiver
from tests.notify.recorder import Recorder
from tests.servers.postgres_server import PostgresServer
from tests.tools.human_input.stores.redis_server import RedisServer, running_redis
from tests.tools.human_input.stores.store_kit import PATIENCE

from roomkit.notify import Notifier, Webhook
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler


class Said(logging.Handler):
    """Sets an event once the notifier has found the store unreachable on two turns (it
    warns on the first, and says the rest at debug level)."""

    def __init__(self, turns: int = 2) -> None:
        super().__init__(logging.DEBUG)
        self.turns = 0
        self.needed = turns
        self.unreachable = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "the store is unreachable" in record.getMessage():
            self.turns += 1
            if self.turns == self.needed:
                self.unreachable.set()


@contextmanager
def notifier_log(*handlers: logging.Handler) -> Iterator[logging.Logger]:
    """The notifier's logger at DEBUG with ``handlers`` listening, as it was afterwards."""
    logger = logging.getLogger("roomkit.notify")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    for handler in handlers:
        logger.addHandler(handler)
    try:
        yield logger
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture(params=["postgres", "redis"])
def server(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[PostgresServer | RedisServer]:
    if request.param == "postgres":
        yield request.getfixturevalue("postgres_restartable")
    else:
        with running_redis(tmp_path) as redis:
            yield redis


@pytest.mark.timeout(120)
async def test_the_notifier_carries_on_once_its_store_is_back(
    server: PostgresServer | RedisServer,
) -> None:
    name = f"outage{os.urandom(4).hex()}"
    store: PostgresStore | RedisStore
    if isinstance(server, PostgresServer):
        store = PostgresStore(server.dsn, schema=name, connect_timeout=1)
    else:
        store = RedisStore(server.url, prefix=name)
    said = Said()
    recorder = Recorder()
    with notifier_log(said):
        async with store:
            handler = HumanInputHandler(store=store)
            async with Notifier(handler, [recorder], poll=0.05):
                await handler.create("ask", {"question": "Before?"}, actor_id="alice")
                async with asyncio.timeout(PATIENCE):
                    await recorder.wait_until(lambda seen: len(seen) == 1)

                await asyncio.to_thread(server.stop)
                try:
                    async with asyncio.timeout(PATIENCE):
                        await said.unreachable.wait()
                finally:
                    await asyncio.to_thread(server.start)

                await handler.create("ask", {"question": "After?"}, actor_id="bob")
                async with asyncio.timeout(PATIENCE):
                    await recorder.wait_until(lambda seen: len(seen) == 2)
            assert [recipient for _, recipient in recorder.seen()] == ["alice", "bob"]
            await handler.close()


@pytest.mark.timeout(120)
async def test_a_request_made_as_its_turn_fails_is_still_announced(tmp_path: Path) -> None:
    """Another connection holds the file's write lock (a backup, a long transaction) just as
    a request is created: the turn that would put its announcement in the outbox fails, and
    a later turn, once the lock is let go, announces it all the same."""
    import sqlite3

    from roomkit.stores.sqlite import SQLiteStore

    path = tmp_path / "locked.db"
    said = Said(turns=1)
    recorder = Recorder()
    with (
        notifier_log(said),
        closing(sqlite3.connect(path, isolation_level=None, check_same_thread=False)) as other,
    ):
        async with SQLiteStore(path, busy_timeout=0.2) as store:
            handler = HumanInputHandler(store=store)
            async with Notifier(handler, [recorder], poll=0.05):
                await handler.create("ask", {"question": "Before?"}, actor_id="alice")
                async with asyncio.timeout(PATIENCE):
                    await recorder.wait_until(lambda seen: len(seen) == 1)
                await handler.create("ask", {"question": "During?"}, actor_id="bob")
                # Before the notifier's turn on it: nothing awaited since the create.
                other.execute("BEGIN IMMEDIATE")
                try:
                    async with asyncio.timeout(PATIENCE):
                        await said.unreachable.wait()
                finally:
                    other.execute("ROLLBACK")
                async with asyncio.timeout(PATIENCE):
                    await recorder.wait_until(lambda seen: ("question_pending", "bob") in seen)
            # Alice's delivery, whose record the lock held up too, may come twice.
            assert {recipient for _, recipient in recorder.seen()} == {"alice", "bob"}
            await handler.close()


@pytest.mark.timeout(120)
async def test_a_request_settled_before_its_steps_are_recorded_is_told_how_it_ended(
    tmp_path: Path,
) -> None:
    """The notifier hears a request made, but the file is locked as it records the
    announcement; the request is answered once the lock is let go, before the notifier's next
    turn: the ending is still told, once (the notifier used to keep only a catch-up, which
    finds neither a request no longer open nor one the outbox never held)."""
    import sqlite3

    from roomkit.stores.sqlite import SQLiteStore

    path = tmp_path / "locked.db"
    said = Said(turns=1)
    with (
        notifier_log(said),
        closing(sqlite3.connect(path, isolation_level=None, check_same_thread=False)) as other,
    ):
        async with SQLiteStore(path, busy_timeout=0) as store, Receiver() as receiver:
            handler = HumanInputHandler(store=store)
            webhook = Webhook(receiver.url, receiver.secret)
            # Polling once a minute: only a change starts the notifier's next turn.
            async with Notifier(handler, [webhook], poll=60) as notifier:
                async with asyncio.timeout(PATIENCE):
                    await notifier.wait_idle()
                request = await handler.create("ask", {"question": "Now?"}, actor_id="alice")
                # Before the notifier's turn on it: nothing awaited since the create.
                other.execute("BEGIN IMMEDIATE")
                try:
                    async with asyncio.timeout(PATIENCE):
                        await said.unreachable.wait()
                finally:
                    other.execute("ROLLBACK")
                assert await handler.outbox.items_for(request.pending_id) == []
                assert await handler.aresolve(request.pending_id, "yes", by="alice") is True
                async with asyncio.timeout(PATIENCE):
                    await notifier.wait_idle()
            told = [(body["pending_id"], body["type"]) for _, body in receiver.deliveries]
            assert told == [(request.pending_id, "question_settled")]
            await handler.close()


class Named(logging.Handler):
    """Sets an event once a line of the notifier's log names ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


def crash(server: PostgresServer | RedisServer) -> None:
    if isinstance(server, PostgresServer):
        server.stop(mode="immediate")
    else:
        server.stop(kill=True)


@pytest.mark.timeout(120)
async def test_a_notice_sent_as_the_server_crashed_is_recorded_once_it_is_back(
    server: PostgresServer | RedisServer,
) -> None:
    """The receiver takes a notice just as the server crashes: once the server is back the
    delivery is marked done, neither sent again nor left held for its lease (30 s)."""
    name = f"sent{os.urandom(4).hex()}"
    store: PostgresStore | RedisStore
    if isinstance(server, PostgresServer):
        store = PostgresStore(server.dsn, schema=name, connect_timeout=1)
    else:
        store = RedisStore(server.url, prefix=name, timeout=1)
    arrived, release = asyncio.Event(), asyncio.Event()

    async def hold(attempt: int) -> None:
        arrived.set()
        await release.wait()

    with notifier_log() as logger:
        async with store, Receiver(before_reply=hold) as receiver:
            handler = HumanInputHandler(store=store)
            notifier = Notifier(handler, [Webhook(receiver.url, receiver.secret)], poll=0.05)
            async with notifier:
                request = await handler.create("ask", {"question": "Now?"}, actor_id="alice")
                delivery = f"{request.pending_id}.announce.webhook"
                said = Named(delivery)
                logger.addHandler(said)
                try:
                    async with asyncio.timeout(PATIENCE):
                        await arrived.wait()
                    await asyncio.to_thread(crash, server)
                    try:
                        release.set()
                        # The notifier met the outage as it recorded the delivery.
                        async with asyncio.timeout(PATIENCE):
                            await said.seen.wait()
                    finally:
                        await asyncio.to_thread(server.start)
                finally:
                    logger.removeHandler(said)
                async with asyncio.timeout(PATIENCE):
                    await notifier.wait_idle()
                items = await handler.outbox.items_for(request.pending_id)
            sent = [item for item in items if item.item_id.startswith(delivery)]
            assert [(item.done, item.receipt) for item in sent] == [(True, {"status": 200})]
            assert receiver.attempts == 1
            await handler.close()
