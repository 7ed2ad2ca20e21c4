"""Benchmark of the notifier: what fan-out costs create(), and webhooks per second.

Cases and targets:
    * fan-out: mean create() time on the memory store with a notifier following it and
      three surfaces, against no notifier; the delivery is off the answer's path, so the
      difference is what following the feed costs; target <= 1 ms added.
    * webhooks: one notifier on the memory store posting signed webhooks (Standard
      Webhooks) to a loopback receiver in a child process that checks every signature;
      deliveries per second from the notifier's start until all are marked done; target
      >= 1,000/s.
    * bad receivers (``--bad-receivers``, this case alone): 200 requests
      (``BENCH_BAD_REQUESTS``) a round, created one every ``BENCH_BAD_GAP`` seconds (10 ms),
      each announced through five webhooks to receivers in child processes
      (``bench/bad_receivers.py``): one healthy (in a process of its own), one that never
      answers, one that answers 500, one that resets the connection, one that answers
      garbage. The healthy receiver's latency (create() to its arrival, p50 and p95) with
      the broken ones beside it, against the same run through the healthy one alone, in
      alternating rounds (``BENCH_BAD_ROUNDS``, 4); target: p95 beside them (all rounds)
      <= 2x p95 alone. Also reported: the notifier's log lines (warnings, tracebacks) and
      how long leaving the notifier's block took with deliveries hanging. ``--sqlite`` runs
      it on a SQLite file instead of the memory store.

Run ``python bench/bench_notify.py [--bad-receivers [--sqlite]]`` (``--quick``: a fifth of
the fan-out and webhooks); it prints figures and exits 0 (no assertions).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _harness import RESULTS, Row, percentile, start

from roomkit.notify import Notice, Notifier, Person, Webhook
from roomkit.tools.human_input import HumanInputHandler

CREATES = 5_000
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "32"))
WEBHOOKS = int(os.environ.get("BENCH_WEBHOOKS", "5000"))
SECRET = "whsec_" + base64.b64encode(b"bench-notify-secret-0123").decode()
BAD_REQUESTS = int(os.environ.get("BENCH_BAD_REQUESTS", "200"))
BAD_GAP = float(os.environ.get("BENCH_BAD_GAP", "0.01"))
BAD_ROUNDS = int(os.environ.get("BENCH_BAD_ROUNDS", "4"))
BAD_KINDS = ("hang", "error", "reset", "garbage")


class Null:
    """A surface that reaches everyone and sends nowhere."""

    def __init__(self, name: str) -> None:
        self.name = name

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        return True

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        return None

    async def aclose(self) -> None:
        return None


async def mean_create(handler: HumanInputHandler) -> float:
    times = []
    for n in range(CREATES):
        start = time.perf_counter()
        await handler.create("ask", {"question": f"#{n}"}, actor_id="alice")
        times.append(time.perf_counter() - start)
        if n % 64 == 0:
            await asyncio.sleep(0)  # let the notifier run, as it would between turns
    return statistics.mean(times)


async def fan_out() -> Row:
    alone = await mean_create(HumanInputHandler(retention=0))
    handler = HumanInputHandler(retention=0)
    async with Notifier(handler, [Null("a"), Null("b"), Null("c")]) as notifier:
        followed = await mean_create(handler)
        await notifier.wait_idle()
    delivered = sum(notifier.statistics().delivered.values())
    added = (followed - alone) * 1e3
    return Row(
        "fan-out to 3 surfaces: create() with a notifier beside without",
        f"{followed * 1e6:.1f} us beside {alone * 1e6:.1f} us (+{added:.3f} ms); "
        f"{delivered:,} notices delivered",
        "<= 1 ms added",
        added <= 1,
        value=added,
        unit="ms",
        ratio=followed / alone,
    )


RECEIVER = """
import asyncio, sys
from standardwebhooks import Webhook
verify = Webhook(sys.argv[1]).verify
async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            headers = {}
            for line in head.decode("latin-1").split("\\r\\n")[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            verify(body, headers)
            writer.write(b"HTTP/1.1 204 No Content\\r\\ncontent-length: 0\\r\\n\\r\\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


async def webhooks() -> Row:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", RECEIVER, SECRET, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        port = int(await child.stdout.readline())
        handler = HumanInputHandler(retention=WEBHOOKS)
        for n in range(WEBHOOKS):
            await handler.create("ask", {"question": f"#{n}"}, actor_id="alice")
        webhook = Webhook(f"http://127.0.0.1:{port}/hooks", SECRET)
        cpu = os.times()
        start = time.perf_counter()
        async with Notifier(handler, [webhook], concurrency=CONCURRENCY) as notifier:
            await notifier.wait_idle()
        took = time.perf_counter() - start
        used = os.times()
        stats = notifier.statistics()
        rate = stats.delivered["webhook"] / took
        return Row(
            "signed webhooks to a loopback receiver",
            f"{rate:,.0f}/s ({stats.delivered['webhook']:,} in {took:.2f} s; "
            f"{stats.failed['webhook']} failed attempts; notifier CPU "
            f"{(used.user - cpu.user) + (used.system - cpu.system):.2f} s)",
            ">= 1,000/s",
            rate >= 1_000,
            value=rate,
            unit="/s",
        )
    finally:
        child.terminate()
        await child.wait()


class LogCount(logging.Handler):
    """Counts the notifier's log records: all of them, and those with a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines = 0
        self.tracebacks = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.lines += 1
        self.tracebacks += record.exc_info is not None


class Arrivals:
    """What the healthy receiver reports: when each request's announcement arrived."""

    def __init__(self, stdout: asyncio.StreamReader) -> None:
        self.at: dict[str, float] = {}
        self._stdout = stdout
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while line := await self._stdout.readline():
            at, pending_id, kind = line.decode().split()
            if kind == "question_pending":
                self.at.setdefault(pending_id, float(at))
                self._changed.set()

    async def wait_for(self, pending_ids: list[str], limit: float) -> None:
        async with asyncio.timeout(limit):
            while not all(p in self.at for p in pending_ids):
                self._changed.clear()
                await self._changed.wait()


async def bad_round(
    arrivals: Arrivals, ports: Mapping[str, int], kinds: tuple[str, ...], folder: Path | None
) -> dict[str, Any]:
    """One run: requests paced ``BAD_GAP`` apart through the healthy webhook and ``kinds``;
    the healthy receiver's latencies, the log counts and how long stopping took."""
    if folder is None:
        handler = HumanInputHandler(retention=BAD_REQUESTS)
    else:
        from roomkit.stores.sqlite import SQLiteStore

        handler = HumanInputHandler(store=SQLiteStore(folder / f"{len(kinds)}-{time.time()}.db"))
    names = ("healthy", *kinds)
    hooks = [Webhook(f"http://127.0.0.1:{ports[name]}/hooks", SECRET, name=name) for name in names]
    counted = LogCount()
    log = logging.getLogger("roomkit.notify")
    log.addHandler(counted)
    created: dict[str, float] = {}
    try:
        notifier = Notifier(handler, hooks)
        async with notifier:
            for n in range(BAD_REQUESTS):
                request = await handler.create("ask", {"question": f"#{n}"}, actor_id="alice")
                created[request.pending_id] = time.monotonic()
                await asyncio.sleep(BAD_GAP)
            await arrivals.wait_for(list(created), limit=120)
            leaving = time.monotonic()
        left = time.monotonic() - leaving
    finally:
        log.removeHandler(counted)
        if folder is not None:
            await handler.store.close()  # type: ignore[attr-defined]
    return {
        "latencies": [arrivals.at[p] - at for p, at in created.items()],
        "lines": counted.lines,
        "tracebacks": counted.tracebacks,
        "left": left,
        "delivered": notifier.statistics().delivered["healthy"],
    }


def milliseconds(latencies: list[float]) -> str:
    return (
        f"p50 {percentile(latencies, 0.5) * 1000:7.1f} ms  "
        f"p95 {percentile(latencies, 0.95) * 1000:7.1f} ms"
    )


async def receivers(*names: str) -> tuple[asyncio.subprocess.Process, dict[str, int]]:
    """A child process serving the receivers named, and their ports."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).with_name("bad_receivers.py")),
        SECRET,
        *names,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    return child, json.loads(await child.stdout.readline())


async def bad_receivers(*, sqlite: bool) -> list[Row]:
    log = logging.getLogger("roomkit.notify")
    log.propagate = False  # counted, not printed
    log.addHandler(logging.NullHandler())
    good, ports = await receivers("healthy")
    bad, bad_ports = await receivers(*BAD_KINDS)
    try:
        assert good.stdout is not None
        arrivals = Arrivals(good.stdout)
        ports.update(bad_ports)
        with tempfile.TemporaryDirectory() as folder:
            place = Path(folder) if sqlite else None
            print(
                f"bad receivers ({'SQLite' if sqlite else 'memory'} store): {BAD_REQUESTS} "
                f"requests a round, one every {BAD_GAP * 1000:.0f} ms; latency from create() "
                "to the healthy receiver"
            )
            pooled: dict[str, list[float]] = {"alone": [], "beside": []}
            for number in range(1, BAD_ROUNDS + 1):
                for kinds, label in (((), "alone"), (BAD_KINDS, "beside")):
                    result = await bad_round(arrivals, ports, kinds, place)
                    pooled[label] += result["latencies"]
                    others = f"+ {', '.join(kinds)}" if kinds else ""
                    print(
                        f"  round {number}, healthy {label:<6} {others:<29} "
                        f"{milliseconds(result['latencies'])}  ({result['delivered']} "
                        f"delivered; notifier log: {result['lines']} lines, "
                        f"{result['tracebacks']} tracebacks; leaving took {result['left']:.2f} s)"
                    )
        alone, beside = pooled["alone"], pooled["beside"]
        ratio = percentile(beside, 0.95) / percentile(alone, 0.95)
        return [
            Row("all rounds, the healthy receiver alone", milliseconds(alone)),
            Row("all rounds, the healthy receiver beside the broken", milliseconds(beside)),
            Row(
                "the healthy receiver's p95 beside the broken ones, over alone",
                f"{ratio:.2f}x",
                "<= 2x",
                ratio <= 2,
                ratio=ratio,
            ),
        ]
    finally:
        for child in (good, bad):
            child.terminate()
            await child.wait()


if __name__ == "__main__":
    run = start("notify", __doc__, flags=("--bad-receivers", "--sqlite"))
    if "--bad-receivers" in run.flags:
        sqlite = "--sqlite" in run.flags
        if "--out" not in sys.argv:
            run.out = RESULTS / f"notify_bad_receivers{'_sqlite' if sqlite else ''}.json"
        rows = asyncio.run(bad_receivers(sqlite=sqlite))
        run.table("Bad receivers", rows, note=f"{'SQLite' if sqlite else 'memory'} store")
    else:
        if run.quick:
            CREATES, WEBHOOKS = 1_000, 1_000
        run.table("The notifier", [asyncio.run(fan_out()), asyncio.run(webhooks())])
    sys.exit(run.finish())
