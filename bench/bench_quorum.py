"""Benchmark of quorum votes on every store: what a vote costs beside a single decision.

Cases (no targets; the figures go in the README):
    * a single decision: ``aresolve(id, approve(), by=...)`` on an approval any one approver
      decides (its settle), one at a time;
    * a vote that leaves a two-of-two quorum open, one at a time;
    * the vote that reaches the quorum and settles it, one at a time.

Each is the median over the samples, on the memory store, SQLite (a file in a temporary
folder, ``synchronous=FULL``), Redis (a redis-server of its own with ``appendfsync always``)
and PostgreSQL (a cluster of its own); a store whose server is missing is skipped with a
note. Run ``python bench/bench_quorum.py``; ``--quick`` takes fewer samples.
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
from bench_stores import RedisServer, open_store

from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

SAMPLES = 500
QUICK_SAMPLES = 100


async def timed(handler: HumanInputHandler, samples: int) -> tuple[float, float, float]:
    """Median milliseconds of a single decision, an open-leaving vote and a settling vote."""
    single, first, last = [], [], []
    for n in range(samples):
        held = await handler.create_approval("pay", {"n": n}, approvers=["ann"])
        start = time.perf_counter()
        assert await handler.aresolve(held.pending_id, approve(), by="ann")
        single.append(time.perf_counter() - start)
        voted = await handler.create_approval("pay", {"n": n}, approvers=["ann", "bob"], quorum=2)
        start = time.perf_counter()
        assert await handler.aresolve(voted.pending_id, approve(), by="ann")
        middle = time.perf_counter()
        assert await handler.aresolve(voted.pending_id, approve(), by="bob")
        end = time.perf_counter()
        first.append(middle - start)
        last.append(end - middle)
        for pending_id in (held.pending_id, voted.pending_id):
            await handler.wait(pending_id, timeout=5)
    return tuple(statistics.median(values) * 1e3 for values in (single, first, last))  # type: ignore[return-value]


def rows_of(name: str, figures: tuple[float, float, float]) -> list[Row]:
    single, first, last = figures
    return [
        Row(f"{name}: a single decision", f"{single:.3f} ms"),
        Row(f"{name}: a vote, the quorum still open", f"{first:.3f} ms ({first / single:.2f}x)"),
        Row(f"{name}: the vote that settles it", f"{last:.3f} ms ({last / single:.2f}x)"),
    ]


async def on_store(kind: str, location: str, prefix: str, samples: int) -> list[Row]:
    store: Any = open_store(kind, location, prefix)
    try:
        return rows_of(kind, await timed(HumanInputHandler(store=store), samples))
    finally:
        await store.close()


async def main(samples: int) -> list[Row]:
    progress("memory")
    rows = rows_of("memory", await timed(HumanInputHandler(), samples))
    with tempfile.TemporaryDirectory(prefix="roomkit-quorum-") as folder:
        workdir = Path(folder)
        progress("sqlite")
        rows += await on_store("sqlite", str(workdir / "pending.db"), "", samples)
        try:
            with RedisServer(workdir / "redis") as url:
                progress("redis")
                rows += await on_store("redis", url, f"q{os.urandom(4).hex()}", samples)
        except (OSError, RuntimeError) as error:
            print(f"Redis skipped: {error}")
        cluster = Cluster()
        if cluster.available:
            with cluster as dsn:
                progress("postgres")
                rows += await on_store("postgres", dsn, f"q{os.urandom(4).hex()}", samples)
        else:
            print("PostgreSQL skipped: no server binaries")
    return rows


if __name__ == "__main__":
    run = start("quorum", __doc__)
    samples = run.rounds_or(SAMPLES, QUICK_SAMPLES)
    run.table("Quorum votes", asyncio.run(main(samples)), note=f"medians of {samples} samples")
    sys.exit(run.finish())
