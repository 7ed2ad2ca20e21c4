"""A process killed while it assigns a request to the person on call: the person is told of
it once, after a restart, on every durable store.

The request is made and announced while its schedule names nobody. Then Dan's shift starts,
and a process routing the request assigns it to him and records the notice he is owed;
it is killed while that write is on its way (on Redis and PostgreSQL a relay holds the
notice's bytes until the kill; SQLite has no wire to hold them on, so the file refuses the
notice and the process kills itself then). A process routing the request after the restart
must find him untold, and tell him, once.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from typing import Any
from urllib.parse import urlsplit

import pytest
from tests.notify.receiver import Receiver, body_types
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.store_kit import Backend, SQLiteBackend
from tests.tools.human_input.stores.test_process_races import (
    PATIENCE,
    let_go,
    outcome,
    ready,
)

from roomkit import HumanInputHandler
from roomkit.notify import Notifier, Webhook
from roomkit.people import Directory, Person, on_call

pytestmark = pytest.mark.timeout(120)

SCHEDULE = "payments"
GROUP = on_call(SCHEDULE)
PEOPLE = {"dan": Person(email="dan@example.com")}
ROUTE = {"op": "route", "on_call": SCHEDULE, "person": "dan"}
REFUSE_NOTICES = (
    "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_outbox "
    "WHEN NEW.body LIKE '%reassign%' BEGIN SELECT RAISE(ABORT, 'refused'); END"
)


class Shift:
    """An on-call schedule naming ``person`` at every hour (nobody, for ``None``)."""

    def __init__(self, person: str | None) -> None:
        self.person = person

    async def on_call_at(self, at: Any) -> str | None:
        return self.person


def handler_on(store: Any, person: str | None) -> HumanInputHandler:
    """A handler on ``store`` whose schedule names ``person``."""
    return HumanInputHandler(
        store=store, directory=Directory(PEOPLE, on_call={SCHEDULE: Shift(person)})
    )


async def notified(handler: HumanInputHandler, receiver: Receiver) -> list[str]:
    """What the webhook was told once a notifier on ``handler`` has nothing left to do."""
    async with Notifier(handler, [Webhook(receiver.url, receiver.secret)], poll=0.1) as notifier:
        await notifier.wait_idle()
    return body_types(receiver.deliveries)


async def announced_in_a_gap(backend: Backend, receiver: Receiver) -> str:
    """A request of the schedule made and announced while it names nobody: its id."""
    async with backend.make() as store:
        handler = handler_on(store, None)
        request = await handler.create_approval("pay", {"amount": 5}, approvers=[GROUP])
        assert await notified(handler, receiver) == ["question_pending"]
    return request.pending_id


async def told_after_restart(backend: Backend, pending_id: str, receiver: Receiver) -> None:
    """A restarted process routes the request with Dan on call: he is told of it once."""
    async with backend.make() as store:
        handler = handler_on(store, "dan")
        request = await handler.get_request(pending_id)
        assert request is not None
        assert handler.router is not None
        assert await handler.router.refresh(request) == {GROUP: "dan"}
        assert await notified(handler, receiver) == ["question_pending", "question_escalated"]
        reassignments = [
            item.body
            for item in await handler.outbox.items_for(pending_id)
            if item.body.get("job") == "reassign"
        ]
        assert reassignments == [{"job": "reassign", "to": "dan"}]


def through(location: str, port: int) -> str:
    """The server URL ``location``, on ``port`` instead (a relay's)."""
    parts = urlsplit(location)
    host = parts.netloc.rsplit(":", 1)[0]
    return parts._replace(netloc=f"{host}:{port}").geturl()


async def killed_while_writing(backend: Backend, plan: dict[str, Any], marker: bytes) -> None:
    """Run ``plan`` in a process of its own through a relay that holds the first write
    holding ``marker``, and kill the process while the relay holds it."""
    kind, location, prefix = backend.elsewhere
    upstream = urlsplit(location).port
    assert upstream is not None
    async with Relay(upstream) as relay:
        held = relay.hold(marker)
        [peer] = await ready(backend, plan, elsewhere=[kind, through(location, relay.port), prefix])
        await let_go([peer])
        async with asyncio.timeout(PATIENCE):
            await held.wait()
        peer.kill()
        assert await outcome(peer, exit_code=-9) is None


async def killed_once_refused(backend: SQLiteBackend, plan: dict[str, Any], trigger: str) -> None:
    """Run ``plan`` in a process of its own while the file refuses the writes the trigger
    ``refuse`` (made by the statement ``trigger``) refuses; the process kills itself once
    its write is refused."""
    with closing(sqlite3.connect(backend.path)) as db, db:
        db.execute(trigger)
    [peer] = await ready(backend, {**plan, "then": "die"})
    await let_go([peer])
    refused = await outcome(peer, exit_code=-9)
    assert isinstance(refused, dict)
    assert "refused" in refused
    with closing(sqlite3.connect(backend.path)) as db, db:
        db.execute("DROP TRIGGER refuse")


async def killed_as_it_writes(
    backend: Backend, plan: dict[str, Any], trigger: str, marker: bytes
) -> None:
    """Run ``plan`` in a process of its own, killed as the write holding ``marker`` is on
    its way (on SQLite, once the file refuses the write the statement ``trigger`` makes
    its trigger ``refuse`` refuse)."""
    if isinstance(backend, SQLiteBackend):
        async with backend.make() as store:
            await store.open()  # the file's tables, for the trigger
        await killed_once_refused(backend, plan, trigger)
    else:
        await killed_while_writing(backend, plan, marker)


async def test_a_process_killed_as_it_assigns_the_person_on_call_leaves_them_told_once(
    backend: Backend,
) -> None:
    async with Receiver() as receiver:
        pending_id = await announced_in_a_gap(backend, receiver)
        plan = {**ROUTE, "id": pending_id}
        if isinstance(backend, SQLiteBackend):
            await killed_once_refused(backend, plan, REFUSE_NOTICES)
        else:
            await killed_while_writing(backend, plan, b"reassign")
        await told_after_restart(backend, pending_id, receiver)


async def test_the_person_on_call_assigned_by_a_process_that_ends_is_told_once(
    backend: Backend,
) -> None:
    async with Receiver() as receiver:
        pending_id = await announced_in_a_gap(backend, receiver)
        [peer] = await ready(backend, {**ROUTE, "id": pending_id})
        await let_go([peer])
        assert await outcome(peer) == {GROUP: "dan"}
        await told_after_restart(backend, pending_id, receiver)
