"""A process killed as it records a ladder's default on a timed-out request, on every
durable store: the ``defaulted`` entry is in the request's history after a restart, once.

A request times out. A process recording its default (the ``defaulted`` history entry the
model's answer stands on) is killed while that write is on its way (on Redis and
PostgreSQL a relay holds the entry's bytes until the kill; SQLite has no wire to hold them
on, so the file fails the entry's write as a failing disk would, and the process kills
itself then). The call re-driven after the restart records the default again: the history
holds it once.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest
from tests.tools.human_input.stores.store_kit import Backend, SQLiteBackend
from tests.tools.human_input.stores.test_process_races import kinds, let_go, outcome, ready
from tests.tools.human_input.stores.test_reassignment_kills import killed_while_writing

from roomkit import HumanInputHandler
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input.ladder import record_default

pytestmark = pytest.mark.timeout(120)

FAIL_DEFAULTS = (
    "CREATE TRIGGER fail BEFORE INSERT ON roomkit_history "
    """WHEN NEW.entry LIKE '%"defaulted"%' BEGIN SELECT no_such_function(); END"""
)
"""Fails the write of a ``defaulted`` entry as SQLite fails one it cannot carry out (an
error of the file, not a refusal of the entry): the function is looked up as the write is
prepared, and no connection has it."""


async def timed_out(backend: Backend) -> str:
    """A request that timed out, nobody answering it: its id."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("book", {"hotel": "any"}, timeout=0.05)
        settled = await handler.wait_settled(request.pending_id, timeout=5)
        assert settled.status is PendingInputStatus.TIMED_OUT
    return request.pending_id


async def killed_as_the_file_fails(backend: SQLiteBackend, plan: dict[str, object]) -> None:
    """Run ``plan`` in a process of its own while the file fails its ``defaulted`` entry;
    the process kills itself once that write failed."""
    with closing(sqlite3.connect(backend.path)) as db, db:
        db.execute(FAIL_DEFAULTS)
    [peer] = await ready(backend, {**plan, "then": "die"})
    await let_go([peer])
    failed = await outcome(peer, exit_code=-9)
    assert failed == {"refused": "StoreUnavailableError"}
    with closing(sqlite3.connect(backend.path)) as db, db:
        db.execute("DROP TRIGGER fail")


async def test_a_default_whose_process_is_killed_as_it_is_written_is_recorded_after_restart(
    backend: Backend,
) -> None:
    pending_id = await timed_out(backend)
    plan = {"op": "default", "id": pending_id, "answer": "Hotel B"}
    if isinstance(backend, SQLiteBackend):
        await killed_as_the_file_fails(backend, plan)
    else:
        await killed_while_writing(backend, plan, b'"defaulted"')
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        assert kinds(await handler.history(pending_id)) == ["created", "settled"]
        await record_default(handler, pending_id, "Hotel B")
        await record_default(handler, pending_id, "Hotel B")
        history = await handler.history(pending_id)
        assert kinds(history) == ["created", "settled", "defaulted"]
        assert history[-1]["answer"] == "Hotel B"
