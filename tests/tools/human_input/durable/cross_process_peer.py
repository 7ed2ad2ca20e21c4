"""The other process of the cross-process tests: it waits on requests, or answers them.

Run with ARGS, as ``main(*ARGS)`` or as a script, it speaks JSON, one object per line on
stdout (the tests run ``main`` in a process forked from one that imported this module,
:mod:`tests.forked_processes`)::

    python cross_process_peer.py wait STORE LOCATION PREFIX TIMEOUT...
        creates one request per TIMEOUT and waits on it with that timeout ("none" for
        none), prints {"ready": [ids]} once every wait is parked, then one
        {"id": ..., "outcome": [kind, text]} per wait as it ends.
    python cross_process_peer.py answer STORE LOCATION PREFIX NAME ID...
        answers each ID with "NAME: ID", all at once, and prints {"id": ..., "won": bool}
        for each.

STORE is ``sqlite`` (LOCATION: the database file), ``redis`` (LOCATION: the server URL) or
``postgres`` (LOCATION: the DSN, PREFIX: the schema).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Sequence
from typing import Any

from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
)
from roomkit.stores import PendingChange, PendingChangeKind
from roomkit.tools.human_input import HumanInputHandler


def open_store(kind: str, location: str, prefix: str) -> Any:
    if kind == "sqlite":
        from roomkit.stores.sqlite import SQLiteStore

        return SQLiteStore(location, backstop_interval=0.05)
    if kind == "postgres":
        from roomkit.stores.postgres import PostgresStore

        return PostgresStore(location, schema=prefix, backstop_interval=0.25)
    from roomkit.stores.redis import RedisStore

    return RedisStore(location, prefix=prefix, backstop_interval=0.25)


def say(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


async def outcome(wait: Awaitable[str]) -> list[str]:
    try:
        return ["answer", await wait]
    except HumanInputRejectedError as error:
        return ["rejected", str(error)]
    except RequestWithdrawnError as error:
        return ["withdrawn", str(error)]
    except HumanInputTimeoutError:
        return ["timeout", ""]


async def feed_live(handler: HumanInputHandler, kind: str) -> None:
    """Start the change feed; on Redis, return once it is subscribed (it says RESYNC)."""
    live = asyncio.Event()

    def listen(change: PendingChange) -> None:
        if change.kind is PendingChangeKind.RESYNC:
            live.set()

    handler.subscribe(listen)
    if kind in ("redis", "postgres"):
        await live.wait()


async def parked(
    handler: HumanInputHandler, count: int, waits: Sequence[asyncio.Task[Any]] = ()
) -> None:
    """Return once ``count`` waits on ``handler`` are parked or, among ``waits``, ended.

    Parked means registered for wake-ups with the record re-read, so an answer given next
    wakes the wait rather than being found by its first read: the handler's statistics
    count those waits, read once per loop turn.
    """
    # The statistics have no event to wait on: each look comes after one trip to a worker
    # thread, not one loop turn, so that the loop waits in its selector meanwhile and the
    # store's own threads get the interpreter (a loop spinning on sleep(0) starves them).
    while handler.statistics().parked_waits + sum(wait.done() for wait in waits) < count:
        await asyncio.to_thread(_nothing)


def _nothing() -> None:
    """What :func:`parked` runs on a worker thread between two looks."""


async def wait_on_requests(handler: HumanInputHandler, timeouts: list[float | None]) -> None:
    requests = [
        await handler.create("AskUserQuestion", {"question": f"q{n}"}, room_id="elsewhere")
        for n in range(len(timeouts))
    ]
    ids = [request.pending_id for request in requests]

    waits = {
        asyncio.create_task(outcome(handler.wait(pending_id, timeout=timeout))): pending_id
        for pending_id, timeout in zip(ids, timeouts, strict=True)
    }
    await parked(handler, len(ids), list(waits))
    say({"ready": ids})
    running = set(waits)
    while running:
        ended, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for wait in ended:
            say({"id": waits[wait], "outcome": wait.result()})


async def answer_requests(handler: HumanInputHandler, name: str, ids: list[str]) -> None:
    won = await asyncio.gather(
        *(handler.aresolve(pending_id, f"{name}: {pending_id}", by=name) for pending_id in ids)
    )
    for pending_id, this_won in zip(ids, won, strict=True):
        say({"id": pending_id, "won": this_won})


async def main(*argv: str) -> None:
    mode, kind, location, prefix, *rest = argv
    store = open_store(kind, location, prefix)
    handler = HumanInputHandler(store=store)
    try:
        await feed_live(handler, kind)
        if mode == "wait":
            limits = [None if limit == "none" else float(limit) for limit in rest]
            await wait_on_requests(handler, limits)
        else:
            name, *ids = rest
            await answer_requests(handler, name, ids)
    finally:
        await handler.close()
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
