"""Benchmark of the durable human-input stores: Redis on loopback, SQLite in a file.

Cases and targets:
    * Redis, wake-up across processes: process A answers (``aresolve``) a request that
      process B waits on; the answer carries A's CLOCK_MONOTONIC reading (system-wide on
      Linux), B reads the clock when its ``wait()`` returns. p50 <= 1 ms, p99 <= 5 ms.
    * Redis, settles per second from one process, 256 in flight: >= 5,000/s (one at a time
      is shown too).
    * Redis, the audit trail's cost on those settles: the store's settles, 256 in flight,
      with the trail (each request inserted with its ``created`` entry, each settle
      appending its ``settled`` entry in its script) and without, in adjacent pairs of
      rounds in the same run (which of the two goes first alternates from pair to pair, so
      a drift in the machine's load favours neither side); the medians of each side, and
      the trail's cost: the median of the pairs' costs (a pair's cost is its round without
      the trail over its round with it, less one), <= 10 %, with the pairs' range beside.
      Rounds swing by a factor of two or more on a shared machine, so the cost is taken
      pair by pair rather than from the two sides' medians; this changes how the figure
      is summarised, not what is measured.
    * Redis, 100,000 requests pending across 1,000 rooms, waited on in 2 processes and
      answered from 4 others at random: every answer delivered, none lost, none twice.
      One request in ten is answered by two processes at once, so that the store's
      check-and-set decides between them. The waiting processes give the store a client
      whose pool lets a burst of wake-ups queue for a connection (the store's default pool
      gives up after 10 s, and the wait then falls back to its backstop), and a backstop of
      300 s, so that the change feed alone wakes the waits (the backstop reads only what
      the store's change log names, but the case measures the feed).
    * SQLite, settles per second one at a time (no target) and 256 in flight: >= 2,000/s.
    * SQLite, wake-up across processes: the answering process sends a wake-up hint to the
      waiting one after its commit (the waiter's poll, every 50 ms, stays as a backstop):
      p50 and p99 <= 5 ms. The two parts of it are shown beside: the answer's own settle
      (its commit, with the fsync), and the rest, from the settle's return to the wake-up.
      So is the floor the disk sets, measured in the same run: a bare SQLite commit with
      its fsync (WAL, ``synchronous=FULL``), no store around it. A waiter cannot see an
      answer before the answer's fsync, so the wake-up's tail is at least the disk's.
    * SQLite with ``synchronous="normal"`` (both processes): the same wake-up and its
      parts, and a bare commit so (no fsync: a commit survives a killed process, not a
      power loss). No target of its own; the default stays ``"full"``.

The Postgres cases (the same three, on a cluster of their own) are in
``bench/bench_postgres.py``. The memory store is measured by ``bench/bench_human_input.py``.
The Redis cases start their own redis-server (``--save "" --appendonly yes
--appendfsync always``: an answer is on disk before anyone hears it was taken) on a free
loopback port in a temporary directory, and stop it at the end; without ``redis-server``
they are skipped with a note.

Run ``python bench/bench_stores.py``: it prints a table and writes
``bench/results/stores.json`` and exits 0 (``--check`` makes a missed target exit 1).
``--sqlite`` runs the SQLite cases alone, ``--redis`` the Redis ones. ``--quick`` (a smoke
run) runs the 4-process case with 2,000 requests; ``ROOMKIT_BENCH_STORES_REQUESTS`` sets its
default size (100,000). On two quiet CPUs the full run takes about two minutes; progress
goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from _harness import percentile, start
from scale_case import (
    ROOMS,
    WAITERS,
    Row,
    answered_from_processes,
)

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import PendingChange, PendingChangeKind, new_entry, settled_entry
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, record_ladder, remind

T = TypeVar("T")
X = TypeVar("X")

RESOLVED = PendingInputStatus.RESOLVED
SIZE_VARIABLE = "ROOMKIT_BENCH_STORES_REQUESTS"
FULL_SIZE = 100_000
QUICK_SIZE = 2_000
IN_FLIGHT = 256
REDIS_WAKE_SAMPLES = 1_000
REDIS_SETTLES = 10_000
SEQUENTIAL_SETTLES = 2_000
SQLITE_SETTLES = 5_000
SQLITE_WAKE_SAMPLES = 1_000
SQLITE_BACKSTOP = 0.05
SQLITE_NORMAL = "sqlite-normal"
"""The SQLite store with ``synchronous="normal"``, as the waiting process is told to open it."""
PARK_BATCH = 2_000
SCALE_BACKSTOP = 300.0
"""The scale case's backstop: its waits are woken by the change feed alone."""

WAKE_P50_MS = 1.0
WAKE_P99_MS = 5.0
SETTLES_TARGET = 5_000
TRAIL_ROUNDS = 6
TRAIL_SETTLES = 2_000
TRAIL_COST_TARGET = 0.10
SQLITE_SETTLES_TARGET = 2_000
SQLITE_WAKE_MS = 5.0


# -- the stores, as each process opens them --------------------------------------------------


def open_store(kind: str, location: str, prefix: str, **options: float) -> Any:
    if kind in ("sqlite", SQLITE_NORMAL):
        from roomkit.stores.sqlite import SQLiteStore

        synchronous = "normal" if kind == SQLITE_NORMAL else "full"
        return SQLiteStore(location, synchronous=synchronous, **options)
    if kind == "postgres":
        from roomkit.stores.postgres import PostgresStore

        return PostgresStore(location, schema=prefix, **options)
    from roomkit.stores.redis import RedisStore

    return RedisStore(location, prefix=prefix, **options)


async def feed_live(handler: HumanInputHandler, kind: str) -> None:
    """Start the handler's change feed; on Redis and Postgres, return once it listens."""
    live = asyncio.Event()

    def listen(change: PendingChange) -> None:
        if change.kind is PendingChangeKind.RESYNC:
            live.set()

    handler.subscribe(listen)
    if kind in ("redis", "postgres"):
        await live.wait()


async def parked(
    handler: HumanInputHandler,
    count: int,
    waits: Sequence[asyncio.Task[str]] = (),
    *,
    check: float = 0.0,
) -> None:
    """Return once ``count`` waits on ``handler`` wait for a wake-up (its statistics say).

    ``check`` is the seconds between two looks (0: every loop turn). Raises the error of
    any of ``waits`` that ended meanwhile: it will never park.
    """
    while handler.statistics().parked_waits < count:
        ended = next((wait for wait in waits if wait.done()), None)
        if ended is not None:
            ended.result()
            raise RuntimeError("a wait ended before it was answered")
        await asyncio.sleep(check)


async def in_flight(limit: int, items: Sequence[X], call: Callable[[X], Awaitable[T]]) -> list[T]:
    """``call`` each item, at most ``limit`` at a time; the results in the items' order."""
    results: list[Any] = [None] * len(items)
    queue = iter(enumerate(items))

    async def worker() -> None:
        for index, item in queue:
            results[index] = await call(item)

    await asyncio.gather(*(worker() for _ in range(min(limit, len(items)))))
    return results


async def create_many(handler: HumanInputHandler, count: int, rooms: int) -> list[str]:
    async def create(n: int) -> str:
        request = await handler.create("AskUserQuestion", {"n": n}, room_id=f"room-{n % rooms}")
        return request.pending_id

    return await in_flight(IN_FLIGHT, range(count), create)


# -- process B of the wake-up case, and the answering processes of the scale case ------------


async def wake_waiter(kind: str, location: str, prefix: str, samples: int) -> None:
    """Wait on one request at a time; print its id once parked, then the latencies seen."""
    options = {"backstop_interval": SQLITE_BACKSTOP} if kind in ("sqlite", SQLITE_NORMAL) else {}
    store = open_store(kind, location, prefix, **options)
    handler = HumanInputHandler(store=store)
    await feed_live(handler, kind)
    latencies = []
    for n in range(samples):
        request = await handler.create("AskUserQuestion", {"n": n}, room_id="wake")
        waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=60))
        await parked(handler, 1)
        print(request.pending_id, flush=True)
        sent = int(await waiting)
        latencies.append(time.monotonic_ns() - sent)
    print(json.dumps(latencies), flush=True)
    await handler.close()
    await store.close()


async def scale_waiter(
    location: str, prefix: str, count: int, first_room: int, remind_after: float | None = None
) -> None:
    """Create ``count`` requests in this process's rooms and wait on them all (on Redis);
    with ``remind_after``, each with a ladder of one reminder."""
    from redis.asyncio import BlockingConnectionPool, Redis

    from roomkit.stores.redis import RedisStore

    # The store's own pool gives a caller 10 s to get a connection; a burst of tens of
    # thousands of wake-ups queues longer than that, and each wait that times out falls
    # back to its backstop. This pool lets them queue.
    pool = BlockingConnectionPool.from_url(
        location, max_connections=64, timeout=None, socket_connect_timeout=5, socket_timeout=30
    )
    client = Redis(connection_pool=pool)
    store = RedisStore(client=client, prefix=prefix, backstop_interval=SCALE_BACKSTOP)
    await wait_on_all(store, "redis", count, first_room, remind_after=remind_after)
    await client.aclose(close_connection_pool=True)


async def wait_on_all(
    store: Any,
    kind: str,
    count: int,
    first_room: int,
    *,
    check: float = 0.0,
    remind_after: float | None = None,
) -> None:
    """Create ``count`` requests in this process's rooms on ``store``, wait on them all,
    and close the store.

    Prints one JSON line once every wait is parked (the ids, and the seconds it took to
    create them and to park the waits), and one when every wait has ended: each wait's
    answer, or ``null`` for a wait that failed, and the first failure. ``check`` is how
    often the parked waits are counted (:func:`parked`). With ``remind_after``, each
    request gets a ladder of one reminder that many seconds after its creation, recorded
    as a tool handler records it.
    """
    handler = HumanInputHandler(store=store)
    await feed_live(handler, kind)
    start = time.perf_counter()

    ladder = None if remind_after is None else Ladder(remind(after=remind_after))

    async def create(n: int) -> str:
        room = f"room-{first_room + n % (ROOMS // WAITERS)}"
        request = await handler.create("AskUserQuestion", {"n": n}, room_id=room)
        if ladder is not None:
            await record_ladder(handler, request, ladder)
        return request.pending_id

    ids = await in_flight(IN_FLIGHT, range(count), create)
    created = time.perf_counter() - start
    waits: list[asyncio.Task[str]] = []
    for first in range(0, count, PARK_BATCH):
        # A batch at a time: a wait's first reads queue for the store's connections, and a
        # queue too long for the pool's timeout is an outage to the wait.
        batch = ids[first : first + PARK_BATCH]
        waits += [
            asyncio.create_task(handler.wait(pending_id, timeout=None)) for pending_id in batch
        ]
        await parked(handler, len(waits), waits[first:], check=check)
    parking = time.perf_counter() - start - created
    print(json.dumps({"ids": ids, "created": created, "parked": parking}), flush=True)
    ended = await asyncio.gather(*waits, return_exceptions=True)
    failures = [repr(result) for result in ended if isinstance(result, BaseException)]
    answers = [None if isinstance(result, BaseException) else result for result in ended]
    print(json.dumps({"answers": answers, "failed": failures[:1]}), flush=True)
    await handler.close()
    await store.close()


async def answerer(
    location: str, prefix: str, name: str, *, kind: str = "redis", **options: float
) -> None:
    """Read the ids to answer, say ready, and on "go" answer them, 256 in flight.

    The ids come as one JSON line on stdin, "go" as the next; the ids this process won go
    back as one JSON line on stdout. ``kind`` and ``options`` open the store
    (:func:`open_store`).
    """
    ids: list[str] = json.loads(await asyncio.to_thread(sys.stdin.readline))
    store = open_store(kind, location, prefix, **options)
    await store.open()
    handler = HumanInputHandler(store=store)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)

    async def answer(pending_id: str) -> bool:
        return await handler.aresolve(pending_id, f"{name}:{pending_id}", by=name)

    won = await in_flight(IN_FLIGHT, ids, answer)
    print(json.dumps([pending_id for pending_id, this in zip(ids, won, strict=True) if this]))
    await store.close()


def play_role(
    arguments: Sequence[str],
    scale_waiter: Callable[..., Awaitable[None]],
    answerer: Callable[[str, str, str], Awaitable[None]],
) -> bool:
    """Run the process role that ``arguments`` name and return True; False for none.

    The roles: ``--wake-waiter KIND LOCATION PREFIX SAMPLES`` (:func:`wake_waiter`),
    ``--scale-waiter LOCATION PREFIX COUNT FIRST_ROOM [REMIND_AFTER]`` and ``--answerer
    LOCATION PREFIX NAME``, run by the calling script's own ``scale_waiter`` and
    ``answerer``.
    """
    role, rest = arguments[:1], arguments[1:]
    if role == ["--wake-waiter"]:
        kind, location, prefix, samples = rest[:4]
        asyncio.run(wake_waiter(kind, location, prefix, int(samples)))
    elif role == ["--scale-waiter"]:
        location, prefix, count, first_room = rest[:4]
        ladder = {"remind_after": float(rest[4])} if len(rest) > 4 else {}
        asyncio.run(scale_waiter(location, prefix, int(count), int(first_room), **ladder))
    elif role == ["--answerer"]:
        location, prefix, name = rest[:3]
        asyncio.run(answerer(location, prefix, name))
    else:
        return False
    return True


# -- process A -------------------------------------------------------------------------------


async def cross_process_wake(
    kind: str, location: str, prefix: str, samples: int, settles: list[float] | None = None
) -> list[float]:
    """Milliseconds from an answer given here to the wake-up of its waiter in process B.

    ``settles``, when given, receives the milliseconds each answer's settle took here.
    """
    store = open_store(kind, location, prefix)
    handler = HumanInputHandler(store=store)
    waiter = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--wake-waiter",
        kind,
        location,
        prefix,
        str(samples),
        stdout=asyncio.subprocess.PIPE,
    )
    assert waiter.stdout is not None
    took = []
    for _ in range(samples):
        pending_id = (await waiter.stdout.readline()).decode().strip()
        sent = time.monotonic_ns()
        await handler.aresolve(pending_id, str(sent))
        took.append((time.monotonic_ns() - sent) / 1e6)
    latencies: list[int] = json.loads(await waiter.stdout.readline())
    await waiter.wait()
    await store.close()
    # The first answers pay for connections and scripts being set up.
    if settles is not None:
        settles += took[samples // 10 :]
    return [ns / 1e6 for ns in latencies[samples // 10 :]]


async def settles_per_second(
    kind: str, location: str, prefix: str, count: int, limit: int
) -> float:
    """Answers per second given from one process, ``limit`` in flight."""
    store = open_store(kind, location, prefix)
    handler = HumanInputHandler(store=store)
    ids = await create_many(handler, count, rooms=10)

    async def answer(pending_id: str) -> bool:
        return await handler.aresolve(pending_id, "yes")

    start = time.perf_counter()
    won = await in_flight(limit, ids, answer)
    elapsed = time.perf_counter() - start
    assert all(won)
    await store.close()
    return count / elapsed


async def trail_rates(url: str, prefix: str) -> tuple[float, float, list[float]]:
    """Settles per second on one Redis store, ``IN_FLIGHT`` at once, without and with the
    audit trail, in ``TRAIL_ROUNDS`` adjacent pairs of rounds, the first of each pair
    alternating; the median of each side, and each pair's cost of the trail."""
    store = open_store("redis", url, prefix)
    rates: dict[bool, list[float]] = {False: [], True: []}
    costs = []
    for pair in range(TRAIL_ROUNDS):
        rate = {}
        for trail in (pair % 2 == 1, pair % 2 == 0):
            created = [new_entry("created", tool="AskUserQuestion")] if trail else []
            ids = [f"trail-{pair}-{trail:d}-{n}" for n in range(TRAIL_SETTLES)]

            async def ask(pending_id: str, created: list[Any] = created) -> bool:
                request = PendingInput(
                    pending_id, "AskUserQuestion", {"question": "?"}, "r", "c", "ai"
                )
                return (await store.insert(request, history=created))[1]

            assert all(await in_flight(IN_FLIGHT, ids, ask))

            async def answer(pending_id: str, trail: bool = trail) -> bool:
                entries = (
                    [settled_entry("resolved", actor="bench", surface="desk")] if trail else []
                )
                won = await store.settle(
                    pending_id, RESOLVED, result="yes", settled_by="bench", history=entries
                )
                return won is not None

            start = time.perf_counter()
            assert all(await in_flight(IN_FLIGHT, ids, answer))
            rate[trail] = TRAIL_SETTLES / (time.perf_counter() - start)
            rates[trail].append(rate[trail])
        costs.append(rate[False] / rate[True] - 1)
    await store.close()
    return statistics.median(rates[False]), statistics.median(rates[True]), costs


# -- the cases -------------------------------------------------------------------------------


async def redis_rows(size: int, workdir: Path) -> list[Row]:
    with RedisServer(workdir / "redis") as url:
        prefix = f"bench{os.urandom(4).hex()}"
        wake = await cross_process_wake("redis", url, prefix, REDIS_WAKE_SAMPLES)
        p50, p99 = statistics.median(wake), percentile(wake, 0.99)
        one = await settles_per_second("redis", url, prefix, SEQUENTIAL_SETTLES, limit=1)
        many = await settles_per_second("redis", url, prefix, REDIS_SETTLES, limit=IN_FLIGHT)
        bare, trailed, costs = await trail_rates(url, prefix)
        cost = statistics.median(costs)
        rows = [
            Row(
                "Redis: wake-up across processes, p50",
                f"{p50:.2f} ms",
                f"<= {WAKE_P50_MS:g} ms",
                p50 <= WAKE_P50_MS,
            ),
            Row(
                "Redis: wake-up across processes, p99",
                f"{p99:.2f} ms",
                f"<= {WAKE_P99_MS:g} ms",
                p99 <= WAKE_P99_MS,
            ),
            Row("Redis: settles, one at a time", f"{one:,.0f}/s"),
            Row(
                f"Redis: settles, {IN_FLIGHT} in flight",
                f"{many:,.0f}/s",
                f">= {SETTLES_TARGET:,}/s",
                many >= SETTLES_TARGET,
            ),
            Row(
                f"Redis: store settles, {IN_FLIGHT} in flight, without / with the trail",
                f"{bare:,.0f}/s / {trailed:,.0f}/s",
            ),
            Row(
                "Redis: the audit trail's cost on a settle (median of paired rounds)",
                f"{cost:+.1%} (pairs {min(costs):+.0%} to {max(costs):+.0%})",
                f"<= {TRAIL_COST_TARGET:.0%}",
                cost <= TRAIL_COST_TARGET,
            ),
        ]
        rows += await answered_from_processes(url, size, store="Redis", script=__file__)
        return rows


def bare_commits(path: Path, count: int, synchronous: str = "FULL") -> list[float]:
    """Milliseconds each of ``count`` bare SQLite commits took (with ``synchronous=FULL``,
    its fsync included)."""
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute(f"PRAGMA synchronous = {synchronous}")
    db.execute("CREATE TABLE t (n INTEGER, body TEXT)")
    took = []
    for n in range(count):
        start = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t VALUES (?, ?)", (n, "x" * 200))
        db.execute("COMMIT")
        took.append((time.perf_counter() - start) * 1e3)
    db.close()
    return took


async def sqlite_rows(workdir: Path) -> list[Row]:
    path = str(workdir / "pending.db")
    one = await settles_per_second("sqlite", path, "", SEQUENTIAL_SETTLES // 2, limit=1)
    many = await settles_per_second("sqlite", path, "", SQLITE_SETTLES, limit=IN_FLIGHT)
    return [
        Row("SQLite: settles, one at a time", f"{one:,.0f}/s"),
        Row(
            f"SQLite: settles, {IN_FLIGHT} in flight",
            f"{many:,.0f}/s",
            f">= {SQLITE_SETTLES_TARGET:,}/s",
            many >= SQLITE_SETTLES_TARGET,
        ),
        *await sqlite_wake_rows(workdir, "sqlite", "SQLite"),
        *await sqlite_wake_rows(workdir, SQLITE_NORMAL, 'SQLite, synchronous="normal"'),
    ]


async def sqlite_wake_rows(workdir: Path, kind: str, name: str) -> list[Row]:
    """The wake-up across processes on a file of its own, its parts and the disk's floor;
    a target only with the default ``synchronous="full"``."""
    path = str(workdir / f"{kind}-wake.db")
    settles: list[float] = []
    wake = await cross_process_wake(kind, path, "", SQLITE_WAKE_SAMPLES, settles)
    p50, p99 = statistics.median(wake), percentile(wake, 0.99)
    # The waiter may wake before the answering process hears that its settle won.
    after = [woke - settled for woke, settled in zip(wake, settles, strict=True)]
    commit = f"p50 {statistics.median(settles):.1f} ms, p99 {percentile(settles, 0.99):.1f} ms"
    hint = f"p50 {statistics.median(after):.1f} ms, p99 {percentile(after, 0.99):.1f} ms"
    full = kind == "sqlite"
    target = f"<= {SQLITE_WAKE_MS:g} ms" if full else ""
    level = "FULL" if full else "NORMAL"
    bare = bare_commits(workdir / f"{kind}-bare.db", SQLITE_WAKE_SAMPLES, level)
    disk = f"p50 {statistics.median(bare):.1f} ms, p99 {percentile(bare, 0.99):.1f} ms"
    return [
        Row(
            f"{name}: wake-up across processes, p50",
            f"{p50:.1f} ms",
            target,
            p50 <= SQLITE_WAKE_MS if full else None,
        ),
        Row(
            f"{name}: wake-up across processes, p99",
            f"{p99:.1f} ms",
            target,
            p99 <= SQLITE_WAKE_MS if full else None,
        ),
        Row(f"{name}: of which the answer's settle (its commit)", commit),
        Row(f"{name}: of which the wake-up after the settle returned", hint),
        Row(f"{name}: the floor, a bare commit" + (" with its fsync" if full else ""), disk),
    ]


class RedisServer:
    """A redis-server on a free loopback port, for the length of a ``with`` block."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> str:
        self.directory.mkdir()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return f"redis://127.0.0.1:{port}/0"
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.01)

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)


# -- the report ------------------------------------------------------------------------------


async def main(size: int, *, only_sqlite: bool = False, only_redis: bool = False) -> list[Row]:
    """The rows of every durable store's cases."""
    print("Memory store: the reference is bench/bench_human_input.py (a bare future and task")
    print("per request as the floor); the figures below are for the durable stores.\n")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="roomkit-bench-") as directory:
        workdir = Path(directory)
        if only_sqlite:
            pass
        elif shutil.which("redis-server") is None:
            print("note: redis-server is not installed; the Redis cases are skipped\n")
        else:
            rows += await redis_rows(size, workdir)
        if not only_redis:
            rows += await sqlite_rows(workdir)
        if not (only_sqlite or only_redis):
            from bench_postgres import postgres_rows

            rows += await postgres_rows(size)
    return rows


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if play_role(arguments, scale_waiter, answerer):
        sys.exit(0)
    run = start("stores", __doc__, arguments, flags=("--redis", "--sqlite"))
    size = QUICK_SIZE if run.quick else int(os.environ.get(SIZE_VARIABLE, FULL_SIZE))
    only_sqlite, only_redis = "--sqlite" in run.flags, "--redis" in run.flags
    rows = asyncio.run(main(size, only_sqlite=only_sqlite, only_redis=only_redis))
    run.table("Durable stores", rows, note=f"{size:,} requests in the scale case")
    sys.exit(run.finish())
