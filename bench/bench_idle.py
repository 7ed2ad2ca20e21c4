"""Benchmark of idle waits on the durable stores: what parked waits cost while nothing happens.

Cases, on SQLite (a file), PostgreSQL (a cluster of its own on loopback) and Redis (a
redis-server on loopback), each store with its default ``backstop_interval`` (50 ms on
SQLite, 250 ms on the others):
    * idle: 1 wait, then 1,000 waits (each with a timeout of an hour), parked in this process
      while nothing is answered for the window (10 s): the CPU time the process used over
      the window (every thread of it), as a share of one core. Target: <= 3 % with 1,000
      waits. The ratio of the two (1,000 waits over 1, measured in the same run) says what
      the waits add: near 1, nothing that grows with their number. Beside it, the handler's
      statistics over the window: the backstop's looks, and the request records read
      (target: 0, nothing changed).
    * wake-up: then 20 of the waits are answered one at a time from another store object on
      the same file or server (as another process would): the time from the answer's call to
      its wait's return, median and longest (no target here: the stores' wake-up figures
      across processes are bench/bench_stores.py's and bench/bench_postgres.py's).
    * lost hint: the waiting store's change feed is then stopped (as one whose connection went
      quiet without a word), and 10 more are answered: each wait is woken by the backstop
      alone. Target: the longest <= 2 x backstop_interval.

    * turn leases: 1 turn, then 1,000 turns journalled in a room store on the same file or
      server, held by a kit's leases as turns waiting for people are: the time of one
      renewal round (each round renews every turn held in one write, one commit on SQLite).
      The ratio of the two says what a waiting turn adds to a round; no target.

The PostgreSQL cluster and the redis-server start in temporary folders and are removed at the
end; a store whose server is not installed is skipped with a note. It prints a table, then
one line of JSON with every figure.

Run ``python bench/bench_idle.py`` (about 90 s) or ``--quick`` (3 s windows, about 40 s);
``--sqlite``, ``--postgres`` and ``--redis`` run one store alone. ``--check`` makes a missed
target exit 1.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import Row, progress, start
from bench_postgres import Cluster
from bench_stores import RedisServer, open_store, parked

from roomkit.core._leases import Leases
from roomkit.core.store import OpenTurn
from roomkit.models.room import Room, RoomEvent, TextContent
from roomkit.tools.human_input import HumanInputHandler

WAITS = 1_000
WINDOW = 10.0
QUICK_WINDOW = 3.0
IDLE_SHARE_TARGET = 0.03
HINTED = 20
LOST = 10
KINDS = ("sqlite", "postgres", "redis")
TIMEOUT = 3600.0
"""Each wait's timeout, as a tool call's wait has one: its deadline stays on the one timer."""


async def idle_window(handler: HumanInputHandler, window: float) -> dict[str, Any]:
    """What this process spends while nothing happens for ``window`` seconds."""
    before = handler.statistics()
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.sleep(window)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    after = handler.statistics()
    return {
        "cpu_s": cpu,
        "share": cpu / wall,
        "looks": _counted(after, before, "backstop_looks"),
        "records_read": _counted(after, before, "records_read"),
    }


def _counted(after: Any, before: Any, name: str) -> int | None:
    """How much a counter of the statistics grew (``None`` when the handler has none)."""
    if not hasattr(after, name):
        return None
    return int(getattr(after, name) - getattr(before, name))


async def park(handler: HumanInputHandler, count: int) -> list[tuple[str, asyncio.Task[str]]]:
    already = handler.statistics().parked_waits
    ids = [
        (await handler.create("AskUserQuestion", {"n": n}, room_id=f"room-{n % 10}")).pending_id
        for n in range(count)
    ]
    waits = [
        (pending_id, asyncio.create_task(handler.wait(pending_id, timeout=TIMEOUT)))
        for pending_id in ids
    ]
    await parked(handler, already + count, [wait for _, wait in waits], check=0.01)
    return waits


async def wake_ups(
    answerer: HumanInputHandler, waits: list[tuple[str, asyncio.Task[str]]]
) -> list[float]:
    """Answer each wait in turn; the milliseconds from the answer's call to the wait's end."""
    taken = []
    for pending_id, wait in waits:
        start = time.perf_counter()
        await answerer.aresolve(pending_id, "yes")
        await wait
        taken.append((time.perf_counter() - start) * 1000)
    return taken


async def deafen(store: Any) -> None:
    """Stop the store's change feed for good: no hint reaches this process, nor a resync."""
    feed = store._feed
    feed._listeners.clear()
    await feed.stop()


def open_rooms(kind: str, location: str, prefix: str) -> Any:
    """A room store on the bench's file or server (on Redis and PostgreSQL, ``prefix``'s)."""
    if kind == "sqlite":
        from roomkit.stores.sqlite import SQLiteRoomStore

        return SQLiteRoomStore(location)
    if kind == "postgres":
        from roomkit.stores.postgres import PostgresRoomStore

        return PostgresRoomStore(location, schema=prefix)
    from roomkit.stores.redis import RedisRoomStore

    return RedisRoomStore(location, prefix=prefix)


async def lease_round(rooms: Any, room_id: str, count: int) -> float:
    """The milliseconds of one renewal round of ``count`` held turns (the best of three)."""
    await rooms.create_room(Room(room_id))
    event = RoomEvent(room_id, "ws", "ann", TextContent("hi"))
    turns = [OpenTurn(f"{room_id}-{n}", room_id, "ai", "ann") for n in range(count)]
    await rooms.record_inbound(event, turns)
    leases = Leases(term=3600.0, clock=time.time)
    taken = []
    with leases.held(rooms, await leases.claim(rooms, turns)):
        for _ in range(3):
            start = time.perf_counter()
            await leases.renew(rooms)
            taken.append((time.perf_counter() - start) * 1000)
    return min(taken)


async def run_store(kind: str, location: str, prefix: str, window: float) -> dict[str, Any]:
    """Every case on one store."""
    store = open_store(kind, location, prefix)
    answering = open_store(kind, location, prefix)
    await store.open()
    await answering.open()
    handler, answerer = HumanInputHandler(store=store), HumanInputHandler(store=answering)
    backstop = store.backstop_interval
    # What the first looks read (the creates, the new requests' waits) is behind the window.
    one = await park(handler, 1)
    await asyncio.sleep(4 * backstop)
    figures: dict[str, Any] = {"backstop_ms": backstop * 1000}
    figures["idle_1"] = await idle_window(handler, window)
    progress(f"{kind}: 1 wait idle, {figures['idle_1']['share']:.2%} of a core")
    waits = one + await park(handler, WAITS - 1)
    await asyncio.sleep(4 * backstop)
    figures["idle_1000"] = await idle_window(handler, window)
    progress(f"{kind}: {WAITS:,} waits idle, {figures['idle_1000']['share']:.2%} of a core")
    figures["hinted_ms"] = await wake_ups(answerer, waits[:HINTED])
    await deafen(store)
    figures["lost_ms"] = await wake_ups(answerer, waits[HINTED : HINTED + LOST])
    for _, wait in waits[HINTED + LOST :]:
        wait.cancel()
    await asyncio.gather(*(wait for _, wait in waits), return_exceptions=True)
    await handler.close()
    await answerer.close()
    await store.close()
    await answering.close()
    rooms = open_rooms(kind, location, prefix)
    await rooms.open()
    figures["lease_round_1_ms"] = await lease_round(rooms, "leases-1", 1)
    figures["lease_round_1000_ms"] = await lease_round(rooms, "leases-1000", WAITS)
    progress(f"{kind}: a lease round of {WAITS:,} turns, {figures['lease_round_1000_ms']:.1f} ms")
    await rooms.close()
    return figures


def rows_of(kind: str, figures: dict[str, Any]) -> list[Row]:
    name = {"sqlite": "SQLite", "postgres": "Postgres", "redis": "Redis"}[kind]
    one, many = figures["idle_1"], figures["idle_1000"]
    ratio = many["cpu_s"] / one["cpu_s"] if one["cpu_s"] else float("inf")
    figures["idle_ratio"] = ratio
    read = many["records_read"]
    hinted, lost = figures["hinted_ms"], figures["lost_ms"]
    lost_bound = 2 * figures["backstop_ms"]
    return [
        Row(f"{name}: 1 wait idle, CPU", f"{one['share']:.2%} of a core"),
        Row(
            f"{name}: {WAITS:,} waits idle, CPU",
            f"{many['share']:.2%} of a core ({ratio:.2f}x one wait)",
            f"<= {IDLE_SHARE_TARGET:.0%}",
            many["share"] <= IDLE_SHARE_TARGET,
        ),
        Row(
            f"{name}: {WAITS:,} waits idle, records read",
            "n/a" if read is None else f"{read:,} ({many['looks']:,} looks)",
            "0",
            None if read is None else read == 0,
        ),
        Row(
            f"{name}: lease renewal round, {WAITS:,} turns held",
            f"{figures['lease_round_1000_ms']:.1f} ms "
            f"({figures['lease_round_1_ms']:.1f} ms with 1 turn)",
        ),
        Row(
            f"{name}: wake-up, hint heard",
            f"median {statistics.median(hinted):.2f} ms, longest {max(hinted):.2f} ms",
        ),
        Row(
            f"{name}: wake-up, hint lost",
            f"median {statistics.median(lost):.1f} ms, longest {max(lost):.1f} ms",
            f"<= {lost_bound:g} ms",
            max(lost) <= lost_bound,
        ),
    ]


async def main(kinds: tuple[str, ...], window: float) -> list[Row]:
    rows: list[Row] = []
    report: dict[str, Any] = {"window_s": window, "waits": WAITS}
    with tempfile.TemporaryDirectory(prefix="roomkit-bench-idle-") as directory:
        workdir = Path(directory)
        for kind in kinds:
            prefix = f"idle{os.urandom(4).hex()}"
            if kind == "sqlite":
                figures = await run_store(kind, str(workdir / "idle.db"), prefix, window)
            elif kind == "redis":
                if shutil.which("redis-server") is None:
                    print("note: redis-server is not installed; the Redis cases are skipped\n")
                    continue
                with RedisServer(workdir / "redis") as url:
                    figures = await run_store(kind, url, prefix, window)
            else:
                cluster = Cluster()
                if not cluster.available:
                    print("note: PostgreSQL is not installed; the Postgres cases are skipped\n")
                    continue
                with cluster as dsn:
                    figures = await run_store(kind, dsn, prefix, window)
            rows += rows_of(kind, figures)
            report[kind] = figures
    print(json.dumps(report))
    return rows


if __name__ == "__main__":
    run = start("idle", __doc__, flags=("--sqlite", "--postgres", "--redis"))
    chosen = tuple(kind for kind in KINDS if f"--{kind}" in run.flags) or KINDS
    window = QUICK_WINDOW if run.quick else WINDOW
    run.table("Idle waits", asyncio.run(main(chosen, window)), note=f"{window:g} s windows")
    sys.exit(run.finish())
