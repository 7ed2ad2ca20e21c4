"""Benchmark of the signed trail's cost on a settle, on every durable store.

Cases (no targets; the figures go in the README):
    * settles per second, ``IN_FLIGHT`` at once, each request inserted with its ``created``
      entry and each settle appending its ``settled`` entry, with the chains' heads
      unsigned and signed (the store's trail given the audit key), in adjacent pairs of
      rounds on one store, which of the two goes first alternating from pair to pair; the
      medians of each side and the median of the pairs' costs (a pair's cost is its
      unsigned round over its signed one, less one), with the pairs' range beside;
    * one settle at a time, the same way: the medians of each side's median latency, and
      the median of the pairs' costs;
    * the CPU this process spends per settle in flight (its threads included, so SQLite's
      writer too; a server's own is not), each side's median and the median of the pairs'
      differences: steadier than the rates on a machine shared with other work;
    * a checkpoint of every head the rounds left (one per request), and a verify of the
      whole trail (read and checked), each timed once;
    * the CPU a signed head costs an append, timed alone (its HMAC and its text).

On SQLite (a file in a temporary folder, ``synchronous=FULL``), Redis (a redis-server of its
own with ``appendfsync always``) and PostgreSQL (a cluster of its own); a store whose server
is missing is skipped with a note. Run by a roomkit without the signed trail, it measures
the unsigned side alone: the figure of the code before, to set beside. The memory store
signs a chain when it is read, never as a settle runs. Run ``python bench/bench_trail.py``;
``--quick`` runs fewer, smaller rounds.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import Row, progress, start
from bench_postgres import Cluster
from bench_stores import RedisServer, in_flight, open_store

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import new_entry, settled_entry

IN_FLIGHT = 256
ROUNDS, QUICK_ROUNDS = 8, 4
SETTLES, QUICK_SETTLES = 2000, 500
ONE_AT_A_TIME = 200
KEY = "bench-audit-key-0123456789abcdef"


def keys() -> Any:
    try:
        from roomkit.stores import AuditKeys
    except ImportError:
        return None
    return AuditKeys([KEY])


async def settle_round(store: Any, name: str, count: int, limit: int) -> list[float]:
    """Insert ``count`` requests with their ``created`` entries, then settle them ``limit``
    at a time; the seconds the settles took, the CPU seconds this process spent on them
    (its threads included: SQLite's writer), and each settle's own seconds."""
    ids = [f"{name}-{n}" for n in range(count)]

    async def ask(pending_id: str) -> bool:
        request = PendingInput(pending_id, "AskUserQuestion", {"question": "?"}, "r", "c", "ai")
        created = [new_entry("created", tool="AskUserQuestion")]
        return (await store.insert(request, history=created))[1]

    assert all(await in_flight(IN_FLIGHT, ids, ask))
    took: list[float] = []

    async def answer(pending_id: str) -> bool:
        start = time.perf_counter()
        won = await store.settle(
            pending_id,
            PendingInputStatus.RESOLVED,
            result="yes",
            settled_by="bench",
            history=[settled_entry("resolved", actor="bench", surface="desk")],
        )
        took.append(time.perf_counter() - start)
        return won is not None

    start, cpu = time.perf_counter(), time.process_time()
    assert all(await in_flight(limit, ids, answer))
    return [time.perf_counter() - start, time.process_time() - cpu, *took]


async def on_store(kind: str, location: str, prefix: str, rounds: int, count: int) -> list[Row]:
    store: Any = open_store(kind, location, prefix)
    trail = getattr(store, "trail", None)
    sides = (False, True) if trail is not None else (False,)
    rates: dict[bool, list[float]] = {side: [] for side in sides}
    latencies: dict[bool, list[float]] = {side: [] for side in sides}
    cpus: dict[bool, list[float]] = {side: [] for side in sides}
    costs: list[float] = []
    latency_costs: list[float] = []
    cpu_costs: list[float] = []
    try:
        for pair in range(rounds):
            progress(f"{kind}: pair {pair + 1} of {rounds}")
            rate, latency, cpu = {}, {}, {}
            for signed in sides if pair % 2 == 0 else sides[::-1]:
                if trail is not None:
                    trail.use_keys(keys() if signed else None)
                name = f"p{pair}-{signed:d}"
                many = await settle_round(store, name, count, IN_FLIGHT)
                rate[signed] = count / many[0]
                cpu[signed] = many[1] / count * 1e6
                one = await settle_round(store, f"{name}-one", ONE_AT_A_TIME, 1)
                latency[signed] = statistics.median(one[2:]) * 1e3
                rates[signed].append(rate[signed])
                latencies[signed].append(latency[signed])
                cpus[signed].append(cpu[signed])
            if trail is not None:
                costs.append(rate[False] / rate[True] - 1)
                latency_costs.append(latency[True] / latency[False] - 1)
                cpu_costs.append(cpu[True] - cpu[False])
        rows = [
            Row(
                f"{kind}: settles, {IN_FLIGHT} in flight, unsigned"
                + (" / signed" if trail is not None else " (the code before)"),
                " / ".join(f"{statistics.median(rates[side]):,.0f}/s" for side in sides),
            ),
            Row(
                f"{kind}: one settle at a time, unsigned"
                + (" / signed" if trail is not None else " (the code before)"),
                " / ".join(f"{statistics.median(latencies[side]):.3f} ms" for side in sides),
            ),
            Row(
                f"{kind}: this process's CPU per settle in flight, unsigned"
                + (" / signed" if trail is not None else " (the code before)"),
                " / ".join(f"{statistics.median(cpus[side]):.1f} µs" for side in sides),
            ),
        ]
        if trail is None:
            return rows
        rows += [
            Row(
                f"{kind}: signing's cost on settles in flight (median of paired rounds)",
                f"{statistics.median(costs):+.1%} (pairs {min(costs):+.0%} to {max(costs):+.0%})",
            ),
            Row(
                f"{kind}: signing's cost on a settle's latency (median of paired rounds)",
                f"{statistics.median(latency_costs):+.1%} "
                f"(pairs {min(latency_costs):+.0%} to {max(latency_costs):+.0%})",
            ),
            Row(
                f"{kind}: signing's CPU per settle in this process (median of paired rounds)",
                f"{statistics.median(cpu_costs):+.1f} µs "
                f"(pairs {min(cpu_costs):+.1f} to {max(cpu_costs):+.1f} µs)",
            ),
        ]
        trail.use_keys(keys())
        heads = rounds * len(sides) * (count + ONE_AT_A_TIME)
        start = time.perf_counter()
        await trail.checkpoint()
        checkpoint = time.perf_counter() - start
        start = time.perf_counter()
        from roomkit.stores import check_trail

        report = check_trail(await trail.read(), keys(), now=time.time())
        verify = time.perf_counter() - start
        unsigned = len([p for p in report.problems if "no signed head" in p])
        rows += [
            Row(f"{kind}: a checkpoint of {heads:,} changed heads", f"{checkpoint * 1e3:,.0f} ms"),
            Row(
                f"{kind}: verify of {report.chains:,} chains, {report.entries:,} entries",
                f"{verify * 1e3:,.0f} ms ({unsigned:,} unsigned, as written)",
            ),
        ]
        return rows
    finally:
        await store.close()


def signing_cost() -> list[Row]:
    """The CPU a signed head costs an append: its HMAC and its text, timed alone."""
    try:
        from roomkit.stores._trail import Anchoring, head_value
    except ImportError:
        return []
    anchoring = Anchoring(keys())
    digest = "0" * 64
    count = 100_000
    start = time.perf_counter()
    for n in range(count):
        head_value(anchoring.head("0123456789abcdef0123456789abcdef", n, digest))
    each = (time.perf_counter() - start) / count * 1e6
    return [
        Row("a signed head, as an append makes it (HMAC-SHA256 and its text)", f"{each:.1f} µs")
    ]


async def main(rounds: int, count: int) -> list[Row]:
    rows: list[Row] = signing_cost()
    with tempfile.TemporaryDirectory(prefix="roomkit-trail-") as folder:
        workdir = Path(folder)
        rows += await on_store("sqlite", str(workdir / "pending.db"), "", rounds, count)
        try:
            with RedisServer(workdir / "redis") as url:
                rows += await on_store("redis", url, f"t{os.urandom(4).hex()}", rounds, count)
        except (OSError, RuntimeError) as error:
            print(f"Redis skipped: {error}")
        cluster = Cluster()
        if cluster.available:
            with cluster as dsn:
                rows += await on_store("postgres", dsn, f"t{os.urandom(4).hex()}", rounds, count)
        else:
            print("PostgreSQL skipped: no server binaries")
    return rows


if __name__ == "__main__":
    run = start("trail", __doc__)
    rounds = run.rounds_or(ROUNDS, QUICK_ROUNDS)
    settles = QUICK_SETTLES if run.quick else SETTLES
    run.table("The audit trail", asyncio.run(main(rounds, settles)))
    sys.exit(run.finish())
