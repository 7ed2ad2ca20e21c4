"""The server crashed and started again while a desk answers 200 waiting requests.

One handler waits on every request; a second, on a store of its own (as another process
would hold), answers them steadily; a third runs the notifier, delivering to a webhook
receiver. Mid-way the server is crashed (PostgreSQL ``pg_ctl stop -m immediate``, Redis
``SIGKILL`` with ``appendfsync always``) and started again on the same port and data. A desk
REST call made while it is away gets 503. Afterwards every acknowledged answer is what its
waiter got, every waiter woke, the change feed and the deadlines still work, the audit
chains verify, no history holds an entry twice, and the notifier told every outcome, each
notice once.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.notify.receiver import Receiver
from tests.servers.postgres_server import PostgresServer
from tests.servers.redis_server import RedisServer, running_redis
from tests.tools.human_input.durable.cross_process_peer import parked
from tests.tools.human_input.durable.restart_kit import FeedWatch

from roomkit import RoomKit
from roomkit.core.exceptions import HumanInputTimeoutError, StoreUnavailableError
from roomkit.desk import create_desk_app, issue_token
from roomkit.notify import Notifier, Retry, Webhook
from roomkit.stores import AuditKeys, check_trail
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler

REQUESTS = 200
WORKERS = 8
"""How many answers the desk has in flight at once."""
AUDIT_KEY = "restart-under-load-audit-key-0123456789"
SECRET = "restart-under-load-desk-secret-0123456789"
BOUND = 60.0
"""Seconds the whole scenario may take before the test says it hung."""


@dataclass
class Site:
    """A server of one kind, and the stores the test opens on it (each its own pool)."""

    server: PostgresServer | RedisServer
    prefix: str = field(default_factory=lambda: f"load{os.urandom(4).hex()}")
    opened: list[Any] = field(default_factory=list)

    def store(self, **options: Any) -> PostgresStore | RedisStore:
        """A store of its own, on the stores' default bounds unless ``options`` say: a call
        waits for a busy server (a disk slow to sync under ``appendfsync always``) as long
        as it would in use."""
        store: PostgresStore | RedisStore
        if isinstance(self.server, PostgresServer):
            store = PostgresStore(self.server.dsn, schema=self.prefix, **options)
        else:
            store = RedisStore(self.server.url, prefix=self.prefix, **options)
        self.opened.append(store)
        return store

    def desk_store(self) -> PostgresStore | RedisStore:
        """The desk's store. While PostgreSQL is away a call waits ``connect_timeout`` for
        a connection the pool cannot make: a short one has the desk's 503 and its retries
        come soon. A Redis call finds the port closed at once, whatever its bounds."""
        if isinstance(self.server, PostgresServer):
            return self.store(settle_retry=2, connect_timeout=1)
        return self.store(settle_retry=2)

    def crash(self) -> None:
        if isinstance(self.server, PostgresServer):
            self.server.stop(mode="immediate")
        else:
            self.server.stop(kill=True)


@pytest.fixture(params=["postgres", "redis"])
def site(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Site]:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", AUDIT_KEY)
    if request.param == "postgres":
        server = request.getfixturevalue("postgres_restartable")
        yield Site(server, request.getfixturevalue("postgres_schema"))
    else:
        with running_redis(tmp_path) as redis:
            yield Site(redis)


class Desk:
    """Answers requests from a queue, a few at a time, trying again while the store is
    away; keeps what each answer was told."""

    def __init__(self, handler: HumanInputHandler, ids: list[str]) -> None:
        self.handler = handler
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        for pending_id in ids:
            self.queue.put_nowait(pending_id)
        self.told: dict[str, bool] = {}
        self.in_doubt: set[str] = set()
        self.halfway = asyncio.Event()

    async def run(self) -> None:
        await asyncio.gather(*(self._worker() for _ in range(WORKERS)))

    async def _worker(self) -> None:
        while not self.queue.empty():
            pending_id = self.queue.get_nowait()
            while True:
                try:
                    won = await self.handler.aresolve(
                        pending_id, answer_for(pending_id), by="alice"
                    )
                except StoreUnavailableError:
                    self.in_doubt.add(pending_id)
                    continue
                break
            self.told[pending_id] = won
            if len(self.told) >= REQUESTS // 2:
                self.halfway.set()


def answer_for(pending_id: str) -> str:
    return f"answer to {pending_id}"


@pytest.mark.timeout(120)
async def test_a_crash_under_load_loses_no_answer_and_stops_no_task(site: Site) -> None:
    asker = HumanInputHandler(store=site.store())
    answering = HumanInputHandler(store=site.desk_store())
    notifying = HumanInputHandler(store=site.store())
    feed = FeedWatch(asker)
    app = create_desk_app(RoomKit(), handler=answering, secret=SECRET)
    bearer = {"Authorization": f"Bearer {issue_token(SECRET, 'alice')}"}
    retry = Retry(first=0.01, cap=0.1)
    async with (
        Receiver() as receiver,
        Notifier(
            notifying, [Webhook(receiver.url, receiver.secret, retry=retry)], poll=0.05
        ) as notifier,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://d") as client,
    ):
        try:
            async with asyncio.timeout(BOUND):
                await feed.live_after(0)
                requests = await asyncio.gather(
                    *(
                        asker.create(
                            "AskUserQuestion",
                            {"question": f"q{n}"},
                            room_id=f"room-{n % 10}",
                            actor_id="alice",
                        )
                        for n in range(REQUESTS)
                    )
                )
                ids = [request.pending_id for request in requests]
                waits = {
                    pending_id: asyncio.create_task(asker.wait(pending_id, timeout=None))
                    for pending_id in ids
                }
                await parked(asker, REQUESTS)

                desk = Desk(answering, ids)
                desk_run = asyncio.create_task(desk.run())
                await desk.halfway.wait()
                await asyncio.to_thread(site.crash)
                try:
                    listed = await client.get("/api/requests", headers=bearer)
                finally:
                    await asyncio.to_thread(site.server.start)
                assert listed.status_code == 503, listed.text
                assert "unavailable" in listed.json()["detail"]
                await desk_run

                results = await asyncio.gather(*waits.values(), return_exceptions=True)
                got = dict(zip(waits, results, strict=True))
                assert got == {pending_id: answer_for(pending_id) for pending_id in ids}
                for pending_id, won in desk.told.items():
                    if not won:
                        assert pending_id in desk.in_doubt, pending_id

                # The feed went live again, and a request asked now is announced, answered
                # and heard.
                await feed.live_after(1)
                late = await asker.create(
                    "AskUserQuestion", {"question": "after"}, room_id="room-0", actor_id="alice"
                )
                late_wait = asyncio.create_task(asker.wait(late.pending_id, timeout=None))
                while (late.pending_id, "question_pending") not in _delivered(receiver):
                    await receiver.wait_for(len(receiver.deliveries) + 1)
                await parked(asker, 1)
                assert await answering.aresolve(late.pending_id, "late", by="alice") is True
                async with asyncio.timeout(5):
                    assert await late_wait == "late"
                while (late.pending_id, "question_settled") not in _delivered(receiver):
                    await receiver.wait_for(len(receiver.deliveries) + 1)
                # Deadlines still fire.
                short = await asker.create(
                    "AskUserQuestion", {"question": "never"}, room_id="room-0", actor_id="alice"
                )
                with pytest.raises(HumanInputTimeoutError):
                    await asker.wait(short.pending_id, timeout=0.3)

                # No history holds an entry twice.
                for pending_id in [*ids, late.pending_id]:
                    kinds = Counter(entry["type"] for entry in await asker.history(pending_id))
                    assert kinds["created"] == 1, (pending_id, kinds)
                    assert kinds["settled"] == 1, (pending_id, kinds)
                    assert max(kinds.values()) == 1, (pending_id, kinds)

                # The audit chains verify, as `roomkit audit verify` checks them.
                trail = asker.audit_trail
                assert trail is not None
                report = check_trail(
                    await trail.read(), AuditKeys.from_text(AUDIT_KEY), now=time.time()
                )
                assert report.problems == []
                assert report.chains >= REQUESTS + 1

                # Every outcome is told, the outbox's record of it done, and no notice twice
                # (a question answered before its announcement went out is not announced).
                await notifier.wait_idle()
                for pending_id in ids:
                    items = {
                        item.item_id: item for item in await notifying.outbox.items_for(pending_id)
                    }
                    assert items[f"{pending_id}.settle"].done, items
                told = {p for p, kind in _delivered(receiver) if kind == "question_settled"}
                assert set(ids) <= told
                delivered = Counter(
                    (body["pending_id"], body["type"]) for _, body in receiver.deliveries
                )
                assert {notice: n for notice, n in delivered.items() if n > 1} == {}
        finally:
            await asker.close()
            await answering.close()
            await notifying.close()
            for store in site.opened:
                await store.close()


def _delivered(receiver: Receiver) -> set[tuple[str, str]]:
    return {(body["pending_id"], body["type"]) for _, body in receiver.deliveries}
