"""Benchmark: the Redis scale case of ``bench/bench_stores.py`` with a notifier attached.

The case of ``bench/bench_stores.py`` (requests pending across 1,000 rooms, waited on in 2
processes, answered from 4 others, one in ten by two at once) runs twice on one
redis-server in one run:

1. alone, as ``bench/bench_stores.py`` runs it;
2. with a notifier in a process of its own on the same store, posting signed webhooks to a
   receiver in this process that verifies each one (``standardwebhooks``) and counts
   deliveries by ``webhook-id``; each request also carries a ladder of one reminder, due a
   second after its creation (recorded by the waiting process, as a tool handler records
   it). The answers start once every request's announcement and reminder arrived, so each
   request is owed exactly three webhooks: ``question_pending``, ``question_reminder`` and
   ``question_settled``.

Reported: creates/s and answers/s of both runs (the ratio is what the notifier costs the
answers' path on a shared machine), the answers delivered / lost / twice of both, and the
notifier's webhooks: delivered once, lost (a step some request never got), duplicate steps
(a request told the same step twice, under any ``webhook-id``) and re-sent ``webhook-id``s.

Run ``python bench/bench_notify_scale.py [--size N]`` (default 100,000, or
``ROOMKIT_BENCH_NOTIFY_REQUESTS``; 2,000 with ``--quick``); it prints the table and exits 0
(``--check`` makes a lost or duplicate step exit 1). Progress goes to stderr. A run stops
by itself: the wait for the notifier gives up after ``--size``/20 seconds plus 10 minutes.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import bench_stores
from _harness import Row, progress, start
from bench_stores import RedisServer
from scale_case import answered_from_processes, spawn, tell
from standardwebhooks import Webhook as Verifier

SIZE_VARIABLE = "ROOMKIT_BENCH_NOTIFY_REQUESTS"
FULL_SIZE = 100_000
QUICK_SIZE = 2_000
REMIND_AFTER = 1.0
"""Seconds from a request's creation to its reminder."""
SECRET = "whsec_" + base64.b64encode(b"bench-notify-scale-secret").decode()
STEPS = ("question_pending", "question_reminder", "question_settled")


class Receiver:
    """An HTTP/1.1 receiver on loopback that verifies and counts webhooks."""

    def __init__(self) -> None:
        self.verify = Verifier(SECRET).verify
        self.ids: collections.Counter[str] = collections.Counter()
        self.steps: collections.Counter[tuple[str, str]] = collections.Counter()
        self.forged = 0
        self.url = ""
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=512)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/hooks"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    def told(self, step: str) -> int:
        """Requests told ``step`` at least once."""
        return sum(1 for (kind, _) in self.steps if kind == step)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                headers = {}
                for line in head.decode("latin-1").split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                try:
                    event = self.verify(body, headers)
                except Exception:
                    self.forged += 1
                else:
                    self.ids[headers["webhook-id"]] += 1
                    self.steps[(event["type"], event["pending_id"])] += 1
                writer.write(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


async def notifier_process(location: str, prefix: str, hook_url: str) -> None:
    """The notifier's role: deliver until told to drain, then report its statistics."""
    from roomkit.notify import Notifier, Webhook
    from roomkit.stores.redis import RedisStore
    from roomkit.tools.human_input import HumanInputHandler

    store = RedisStore(location, prefix=prefix)
    handler = HumanInputHandler(store=store)
    async with Notifier(handler, [Webhook(hook_url, secret=SECRET)]) as notifier:
        await notifier.wait_idle()  # following the feed from here on
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        start = time.perf_counter()
        await notifier.wait_idle()
        drained = time.perf_counter() - start
        stats = notifier.statistics()
    report = {
        "delivered": stats.delivered["webhook"],
        "failed": stats.failed["webhook"],
        "dropped": stats.dropped["webhook"],
        "drained_s": drained,
    }
    print(json.dumps(report), flush=True)
    await store.close()


async def until(check: Callable[[], bool], what: Callable[[], str], limit: float) -> bool:
    """Poll ``check`` every half second (a benchmark, not a test) for up to ``limit`` s,
    saying ``what()`` has come every 15 s."""
    deadline = time.monotonic() + limit
    last = time.monotonic()
    while not check():
        if time.monotonic() > deadline:
            progress(f"gave up waiting: {what()}")
            return False
        if time.monotonic() - last > 15:
            progress(what())
            last = time.monotonic()
        await asyncio.sleep(0.5)
    return True


async def with_notifier(url: str, size: int, measured: dict[str, float]) -> dict[str, float]:
    """The scale case with a notifier attached; the notifier's figures."""
    receiver = Receiver()
    await receiver.start()
    prefix = f"notify{os.urandom(4).hex()}"
    notifier = await spawn("--notifier", url, prefix, receiver.url, script=__file__)
    assert notifier.stdout is not None
    assert (await notifier.stdout.readline()).strip() == b"ready"
    limit = size / 20 + 600
    started = time.perf_counter()

    async def announced_and_reminded() -> None:
        await until(
            lambda: min(receiver.told(STEPS[0]), receiver.told(STEPS[1])) >= size,
            lambda: (
                f"announcements {receiver.told(STEPS[0]):,}, reminders "
                f"{receiver.told(STEPS[1]):,} of {size:,}"
            ),
            limit,
        )
        measured["told_s"] = time.perf_counter() - started

    await answered_from_processes(
        url,
        size,
        store="Redis",
        script=bench_stores.__file__,
        prefix=prefix,
        waiter_arguments=(str(REMIND_AFTER),),
        before_answers=announced_and_reminded,
        measured=measured,
    )
    await until(
        lambda: receiver.told(STEPS[2]) >= size,
        lambda: f"endings {receiver.told(STEPS[2]):,} of {size:,}",
        limit,
    )
    await tell(notifier, b"drain")
    report = json.loads(await notifier.stdout.readline())
    await notifier.wait()
    await receiver.close()
    lost = sum(size - receiver.told(step) for step in STEPS)
    return {
        **report,
        "lost": lost,
        "duplicate_steps": sum(count - 1 for count in receiver.steps.values()),
        "resent_ids": sum(count - 1 for count in receiver.ids.values()),
        "received": sum(receiver.ids.values()),
        "forged": receiver.forged,
    }


async def main(size: int) -> list[Row]:
    """The table's rows: what a notifier costs, and whether it told everyone once."""
    if shutil.which("redis-server") is None:
        print("note: redis-server is not installed; nothing to measure")
        return []
    alone: dict[str, float] = {}
    attached: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="roomkit-bench-") as directory,
        RedisServer(Path(directory) / "redis") as url,
    ):
        progress(f"{size:,} requests, no notifier")
        await answered_from_processes(
            url, size, store="Redis", script=bench_stores.__file__, measured=alone
        )
        progress(f"{size:,} requests, a notifier attached")
        told = await with_notifier(url, size, attached)
    ratio = attached["answered_per_s"] / alone["answered_per_s"]
    answers = "{delivered:,.0f} delivered, {lost:.0f} lost, {twice:.0f} twice"
    rows = [
        Row(
            f"Redis: {size:,} pending, no notifier",
            f"created {alone['created_per_s']:,.0f}/s, answered {alone['answered_per_s']:,.0f}/s;"
            f" {answers.format(**alone)}",
        ),
        Row(
            f"Redis: {size:,} pending, a notifier attached",
            f"created {attached['created_per_s']:,.0f}/s, answered "
            f"{attached['answered_per_s']:,.0f}/s ({ratio:.2f}x); {answers.format(**attached)}",
            "all once",
            attached["lost"] == 0 and attached["twice"] == 0,
        ),
        Row(
            f"the notifier: {3 * size:,} webhooks owed (pending, reminder, settled)",
            f"{told['delivered']:,.0f} delivered, {told['lost']:.0f} lost, "
            f"{told['duplicate_steps']:.0f} duplicate steps, {told['resent_ids']:.0f} re-sent ids, "
            f"{told['failed']:.0f} failed attempts",
            "0 lost, 0 duplicate",
            told["lost"] == 0 and told["duplicate_steps"] == 0,
        ),
        Row(
            "the notifier: announced and reminded every request",
            f"in {attached['told_s']:.0f} s from the notifier's start "
            f"({2 * size / attached['told_s']:,.0f} webhooks/s)",
        ),
    ]
    return rows


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--notifier"]:
        asyncio.run(notifier_process(*arguments[1:4]))
        sys.exit(0)
    run = start(
        "notify_scale",
        __doc__,
        arguments,
        numbers={"--size": int(os.environ.get(SIZE_VARIABLE, FULL_SIZE))},
    )
    size = QUICK_SIZE if run.quick and "--size" not in arguments else run.numbers["size"]
    run.table("The notifier at scale", asyncio.run(main(size)), note=f"{size:,} requests")
    sys.exit(run.finish())
