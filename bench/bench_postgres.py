"""Benchmark of the Postgres human-input store, on a cluster of its own on loopback.

Cases and targets (``synchronous_commit=on``: an answer is on disk before anyone hears it
was taken):
    * wake-up across processes: process A answers a request that process B waits on; the
      answer carries A's CLOCK_MONOTONIC reading, B reads the clock when its ``wait()``
      returns. B is woken by LISTEN/NOTIFY. p50 <= 2 ms, p99 <= 10 ms.
    * settles per second from one process, 256 in flight: >= 5,000/s (one at a time too).
    * 100,000 requests pending across 1,000 rooms, waited on in 2 processes and answered
      from 4 others at random, one in ten by two processes at once: every answer delivered,
      none lost, none twice.

The cluster is made with ``initdb`` in a temporary folder (as the ``postgres`` user when run
as root), listens on a free loopback port, and is removed at the end; without the server
binaries the cases are skipped with a note. ``bench/bench_stores.py`` runs these cases with
its own; run this file alone with ``python bench/bench_postgres.py [--quick]``.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _harness import Row, percentile, progress, start
from bench_stores import (
    IN_FLIGHT,
    QUICK_SIZE,
    SCALE_BACKSTOP,
    SEQUENTIAL_SETTLES,
    SIZE_VARIABLE,
    cross_process_wake,
    play_role,
    settles_per_second,
    wait_on_all,
)
from bench_stores import answerer as answer_ids
from scale_case import answered_from_processes as scale_case

from roomkit.stores.postgres import PostgresStore

WAKE_SAMPLES = 1_000
SETTLES = 10_000
WAKE_P50_MS = 2.0
WAKE_P99_MS = 10.0
SETTLES_TARGET = 5_000
POOL = 32
"""Connections of each process's pool in the 256-in-flight and scale cases."""


class Cluster:
    """A PostgreSQL cluster on a free loopback port, for the length of a ``with`` block."""

    def __init__(self) -> None:
        found = shutil.which("pg_config")
        bindir = (
            subprocess.run([found, "--bindir"], capture_output=True, text=True).stdout.strip()
            if found
            else ""
        )
        if not bindir or not Path(bindir, "initdb").exists():
            bindir = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)), "")
        self.bindir = Path(bindir)
        self.root = Path(tempfile.mkdtemp(prefix="roomkit-bench-pg-"))
        self.user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

    @property
    def available(self) -> bool:
        return (self.bindir / "initdb").exists()

    def _run(self, *command: str) -> None:
        subprocess.run([*self.user, *command], check=True, capture_output=True, cwd="/")

    def __enter__(self) -> str:
        if self.user:
            shutil.chown(self.root, "postgres", "postgres")
        data = str(self.root / "data")
        self._run(str(self.bindir / "initdb"), "-D", data, "-U", "postgres", "--auth=trust")
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.root}"
            " -c synchronous_commit=on -c max_connections=400 -c shared_buffers=256MB"
        )
        log = str(self.root / "log")
        self._run(str(self.bindir / "pg_ctl"), "start", "-w", "-D", data, "-l", log, "-o", options)
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def __exit__(self, *exc_info: object) -> None:
        data = str(self.root / "data")
        subprocess.run(
            [*self.user, str(self.bindir / "pg_ctl"), "stop", "-D", data, "-m", "immediate"],
            capture_output=True,
            cwd="/",
        )
        shutil.rmtree(self.root, ignore_errors=True)


# -- the processes of the scale case ---------------------------------------------------------

PARK_CHECK = 0.01
"""Seconds between two looks at how many waits are parked: a look counts every wait of the
process, so looking on every loop turn would leave 100,000 waits little time to park."""


async def scale_waiter(dsn: str, schema: str, count: int, first_room: int) -> None:
    """Create ``count`` requests in this process's rooms and wait on them all (as in
    ``bench_stores.scale_waiter``)."""
    store = PostgresStore(dsn, schema=schema, backstop_interval=SCALE_BACKSTOP, pool_size=POOL)
    await wait_on_all(store, "postgres", count, first_room, check=PARK_CHECK)


async def answerer(dsn: str, schema: str, name: str) -> None:
    """Answer the ids read from stdin (as in ``bench_stores.answerer``)."""
    await answer_ids(dsn, schema, name, kind="postgres", pool_size=POOL)


async def answered_from_processes(dsn: str, size: int) -> list[Row]:
    """``size`` requests wait in 2 processes; 4 others answer them, some twice over."""
    schema = f"scale{os.urandom(4).hex()}"
    async with PostgresStore(dsn, schema=schema):
        pass  # the tables, before the processes race to make them
    return await scale_case(dsn, size, store="Postgres", prefix=schema, script=__file__)


# -- the cases -------------------------------------------------------------------------------


async def postgres_rows(size: int) -> list[Row]:
    """The Postgres rows of the table (none, with a note, without the server binaries)."""
    cluster = Cluster()
    if not cluster.available:
        print("note: PostgreSQL is not installed; the Postgres cases are skipped\n")
        return []
    with cluster as dsn:
        schema = f"bench{os.urandom(4).hex()}"
        wake = await cross_process_wake("postgres", dsn, schema, WAKE_SAMPLES)
        p50, p99 = statistics.median(wake), percentile(wake, 0.99)
        progress(f"Postgres wake-up p50 {p50:.2f} ms, p99 {p99:.2f} ms")
        one = await settles_per_second("postgres", dsn, schema, SEQUENTIAL_SETTLES, limit=1)
        many = await settles_per_second("postgres", dsn, schema, SETTLES, limit=IN_FLIGHT)
        progress(f"Postgres settles {one:,.0f}/s one at a time, {many:,.0f}/s 256 in flight")
        rows = [
            Row(
                "Postgres: wake-up across processes, p50",
                f"{p50:.2f} ms",
                f"<= {WAKE_P50_MS:g} ms",
                p50 <= WAKE_P50_MS,
            ),
            Row(
                "Postgres: wake-up across processes, p99",
                f"{p99:.2f} ms",
                f"<= {WAKE_P99_MS:g} ms",
                p99 <= WAKE_P99_MS,
            ),
            Row("Postgres: settles, one at a time", f"{one:,.0f}/s"),
            Row(
                f"Postgres: settles, {IN_FLIGHT} in flight",
                f"{many:,.0f}/s",
                f">= {SETTLES_TARGET:,}/s",
                many >= SETTLES_TARGET,
            ),
        ]
        rows += await answered_from_processes(dsn, size)
        return rows


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if play_role(arguments, scale_waiter, answerer):
        sys.exit(0)
    run = start("postgres", __doc__, arguments)
    # A SIGTERM ends the run through the cluster's ``with`` block, which removes it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    size = QUICK_SIZE if run.quick else int(os.environ.get(SIZE_VARIABLE, 100_000))
    run.table("PostgreSQL", asyncio.run(postgres_rows(size)), note=f"{size:,} requests")
    sys.exit(run.finish())
