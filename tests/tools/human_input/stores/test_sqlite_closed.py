"""A closed SQLite store stays closed until it is opened again.

Before, any call after ``close()`` opened the file anew: a handler still waiting on the
store brought back its connection's thread and its change feed, which nothing would close
again, and a process holding such a store never exited (the thread is not a daemon).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.tools.human_input.durable.cross_process_peer import parked
from tests.tools.human_input.stores.store_kit import (
    PATIENCE,
    connection_threads,
    make_request,
    still_running,
)
from tests.tools.human_input.stores.test_sqlite_wake import needs_proc, open_sockets

from roomkit.core.exceptions import StoreClosedError
from roomkit.stores.base import DurableStore
from roomkit.stores.outbox import outbox_for
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

QUESTION = {"question": "Ship it?"}


async def test_every_call_after_close_is_refused_until_open(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kit.db")
    await store.open()
    request = make_request()
    await store.insert(request)
    await store.close()
    threads = connection_threads()

    with pytest.raises(StoreClosedError, match=r"is closed: call its open\(\)"):
        await store.fetch(request.pending_id)
    with pytest.raises(StoreClosedError):
        await store.insert(make_request())
    with pytest.raises(StoreClosedError):
        await store.list_pending()
    with pytest.raises(StoreClosedError):  # the notifier's outbox, in the same file
        await outbox_for(HumanInputHandler(store=store)).next_due()
    assert not still_running(threads)

    await store.open()
    fetched = await store.fetch(request.pending_id)
    assert fetched is not None
    assert fetched.pending_id == request.pending_id
    await store.close()
    assert not still_running(threads)


async def closed_under_a_wait(store: DurableStore) -> None:
    """Open ``store``, wait on a request of it, close it: the wait ends with
    StoreClosedError, and so does an answer given afterwards."""
    await store.open()
    handler = HumanInputHandler(store=store)
    request = await handler.create("AskUserQuestion", QUESTION)
    wait = asyncio.create_task(handler.wait(request.pending_id, timeout=None))
    await parked(handler, 1)

    # The store goes first, the handler still waiting on it.
    await store.close()
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(StoreClosedError):
            await wait
    with pytest.raises(StoreClosedError):
        await handler.aresolve(request.pending_id, "yes")
    await handler.close()


@needs_proc
async def test_a_wait_on_a_store_closed_under_it_ends_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    threads, sockets = connection_threads(), open_sockets()
    await closed_under_a_wait(SQLiteStore(tmp_path / "kit.db", backstop_interval=0.02))
    assert not still_running(threads)
    assert open_sockets() <= sockets


async def test_a_listener_added_after_close_starts_no_feed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kit.db", backstop_interval=0.02)
    await store.open()
    await store.close()
    threads = connection_threads()

    store.subscribe(lambda change: None)
    (feed,) = [task for task in asyncio.all_tasks() if "sqlite feed" in task.get_name()]
    async with asyncio.timeout(PATIENCE):
        await feed  # it ends at its first poll, having opened nothing
    assert not still_running(threads)

    # Opened again, the store feeds its listeners again.
    await store.open()
    assert [task for task in asyncio.all_tasks() if "sqlite feed" in task.get_name()]
    await store.close()
