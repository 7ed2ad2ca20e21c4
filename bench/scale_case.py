"""The scale case of the store benchmarks, on Redis or Postgres: requests wait in 2
processes and 4 others answer them, one in ten by two at once.

The benchmark script that calls :func:`answered_from_processes` runs the processes itself,
in its roles ``--scale-waiter`` and ``--answerer``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from _harness import Row, progress

__all__ = ["Row", "answered_from_processes", "progress", "spawn", "tell"]

ROOMS = 1_000
ANSWERERS = 4
WAITERS = 2
RACING = 0.1
"""The share of the 4-process case's requests that two processes answer."""


async def spawn(*arguments: str, script: str) -> asyncio.subprocess.Process:
    """``script`` in another process, in one of its roles, talking over pipes."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        script,
        *arguments,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=2**26,
    )


async def line(process: asyncio.subprocess.Process) -> Any:
    assert process.stdout is not None
    return json.loads(await process.stdout.readline())


async def tell(process: asyncio.subprocess.Process, message: bytes) -> None:
    assert process.stdin is not None
    process.stdin.write(message + b"\n")
    await process.stdin.drain()


async def answered_from_processes(
    url: str,
    size: int,
    *,
    store: str,
    script: str,
    prefix: str = "",
    waiter_arguments: Sequence[str] = (),
    before_answers: Callable[[], Awaitable[None]] | None = None,
    measured: dict[str, float] | None = None,
) -> list[Row]:
    """``size`` requests wait in 2 processes; 4 others answer them, some twice over.

    The processes run ``script`` with ``--scale-waiter`` (and ``waiter_arguments`` after
    its own) and ``--answerer``, on ``store`` at ``url`` (with ``prefix``, a new one by
    default); ``store`` names it in the rows. ``before_answers`` is awaited once every wait
    is parked, before the answers start; ``measured``, when given, receives the figures as
    numbers (``created_per_s``, ``parked_s``, ``answered_per_s``, ``delivered``, ``lost``,
    ``twice``).
    """
    prefix = prefix or f"scale{os.urandom(4).hex()}"
    counts = [size // WAITERS] * WAITERS
    counts[0] += size % WAITERS
    waiters = [
        await spawn(
            "--scale-waiter",
            url,
            prefix,
            str(count),
            str(n * ROOMS // WAITERS),
            *waiter_arguments,
            script=script,
        )
        for n, count in enumerate(counts)
    ]
    parked_waits = [await line(waiter) for waiter in waiters]
    ids = [pending_id for report in parked_waits for pending_id in report["ids"]]
    created = max(report["created"] for report in parked_waits)
    parking = max(report["parked"] for report in parked_waits)
    progress(f"{len(ids):,} requests created in {created:.1f} s, waits parked in {parking:.1f} s")

    # Each request goes to one process at random, and one in ten to a second one as well:
    # those two race, and the store's check-and-set must let exactly one of them win.
    shares: list[list[str]] = [[] for _ in range(ANSWERERS)]
    chance = random.Random(7)
    for pending_id in ids:
        for which in chance.sample(range(ANSWERERS), 2 if chance.random() < RACING else 1):
            shares[which].append(pending_id)
    answerers = []
    for which, share in enumerate(shares):
        chance.shuffle(share)
        answerers.append(await spawn("--answerer", url, prefix, f"p{which}", script=script))
        await tell(answerers[-1], json.dumps(share).encode())
    for process in answerers:
        assert process.stdout is not None
        assert (await process.stdout.readline()).strip() == b"ready"
    if before_answers is not None:
        await before_answers()
    start = time.perf_counter()
    for process in answerers:
        await tell(process, b"go")
    ended = [await line(waiter) for waiter in waiters]
    elapsed = time.perf_counter() - start
    progress(f"{len(ids):,} waits ended in {elapsed:.1f} s")

    delivered = [answer for report in ended for answer in report["answers"]]
    winners: dict[str, list[str]] = {pending_id: [] for pending_id in ids}
    for which, process in enumerate(answerers):
        for pending_id in await line(process):
            winners[pending_id].append(f"p{which}")
    for process in [*waiters, *answerers]:
        await process.wait()
    twice = sum(len(names) > 1 for names in winners.values())
    # Lost: a wait that failed, or that returned anything but its one winner's answer.
    lost = sum(
        len(names) != 1 or answer != f"{names[0]}:{pending_id}"
        for (pending_id, names), answer in zip(winners.items(), delivered, strict=True)
    )
    for report in ended:
        if report["failed"]:
            print(f"note: a wait failed with {report['failed'][0]}")
    ok = len(delivered) == size and lost == 0 and twice == 0
    if measured is not None:
        measured.update(
            created_per_s=size / created,
            parked_s=parking,
            answered_per_s=size / elapsed,
            delivered=len(delivered) - lost,
            lost=lost,
            twice=twice,
        )
    return [
        Row(
            f"{store}: {size:,} pending in {ROOMS:,} rooms, {WAITERS} processes",
            f"created at {size / created:,.0f}/s, waited on in {parking:.1f} s",
        ),
        Row(
            f"{store}: {size:,} answered from {ANSWERERS} processes",
            f"{len(delivered) - lost:,} delivered, {lost} lost, {twice} twice, "
            f"{size / elapsed:,.0f}/s",
            "all once",
            ok,
        ),
    ]
