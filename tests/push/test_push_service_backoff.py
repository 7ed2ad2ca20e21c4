"""Web Push through the notifier when one person's push service hangs or keeps failing: it
holds back only the pushes to it. Other people's questions, and the same person's other
devices, are pushed to at once; the failing push service is sent nothing new while it backs
off, then its pushes are retried on their own schedule (on the store's clock, moved by the
test)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from email.utils import formatdate
from pathlib import Path

import pytest
from tests.push.push_service import PushService
from tests.servers.loopback import read_request

from roomkit.models.pending_input import PendingInput
from roomkit.notify import Notifier, Retry
from roomkit.notify._push_services import retry_after
from roomkit.notify.push_subscriptions import PushSubscriptions, subscription_of
from roomkit.notify.webpush import WebPush
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
DESK = "https://desk.example.com"
SUBJECT = "mailto:ops@example.com"
START = 1_900_000_000.0
BACK_OFF = 600.0
"""Seconds of every retry delay: on the store's clock, which stands still until moved."""
GUARD = 30.0
"""Seconds a test waits for what must come before it fails instead of hanging."""


class Clock:
    """The store's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Hanging(PushService):
    """A push service that, while :attr:`hang` is set, holds each push it is sent until
    released, then answers 504; otherwise it takes pushes as :class:`PushService` does."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = False
        self.held = 0
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        if not self.hang:
            return await super().answer(method, path, headers, body)
        self.held += 1
        self.holding.set()
        await self.release.wait()
        return 504, b""


@pytest.fixture
async def clocked(tmp_path: Path) -> AsyncIterator[tuple[HumanInputHandler, Clock]]:
    """A handler on a SQLite store whose clock the test moves."""
    clock = Clock()
    store = SQLiteStore(tmp_path / "pending.db", clock=clock)
    yield HumanInputHandler(store=store), clock
    await store.close()


def subscribe(data_dir: Path, actor: str, subscription: dict[str, object]) -> None:
    PushSubscriptions(data_dir).add(actor, subscription_of(subscription))


async def ask(handler: HumanInputHandler, actor: str) -> PendingInput:
    return await handler.create("ask", {"question": f"Ship it, {actor}?"}, actor_id=actor)


@pytest.mark.parametrize("fault", ["answers 503", "hangs"])
async def test_a_failing_push_service_holds_back_only_the_pushes_to_it(
    clocked: tuple[HumanInputHandler, Clock], tmp_path: Path, fault: str
) -> None:
    """Bob's push service fails: alice's question, on another push service, goes out at
    once; carol's, on bob's, waits without a push; once the service's back-off ends (the
    store's clock moved), bob's and carol's are pushed to it."""
    handler, clock = clocked
    async with Hanging() as failing, PushService() as healthy:
        bob, carol = failing.browser("bob"), failing.browser("carol")
        alice = healthy.browser("alice")
        subscribe(tmp_path, "bob", bob.subscription())
        subscribe(tmp_path, "carol", carol.subscription())
        subscribe(tmp_path, "alice", alice.subscription())
        if fault == "hangs":
            failing.hang = True
        else:
            failing.status[bob.endpoint] = failing.status[carol.endpoint] = 503
        push = WebPush(
            SUBJECT,
            data_dir=tmp_path,
            push_hosts=[failing.origin, healthy.origin],
            retry=Retry(first=BACK_OFF, cap=BACK_OFF, jitter=0.0),
            timeout=1.0 if fault == "hangs" else 10.0,
        )
        notifier = Notifier(handler, [push], desk_url=DESK, link_secret=SECRET, poll=0.05)
        async with notifier:
            await ask(handler, "bob")
            # Idle once bob's push failed (timed out, or answered 503): its retry waits.
            await notifier.wait_idle()
            assert failing.attempts + failing.held == 1
            assert notifier.statistics().failed["webpush"] == 1

            await ask(handler, "alice")
            await ask(handler, "carol")
            async with asyncio.timeout(GUARD):  # a surface backing off waits for the clock
                [taken] = await healthy.wait_for(1)
            await notifier.wait_idle()
            assert taken.endpoint == alice.endpoint
            # Carol's push is held back while bob's push service backs off: nothing new.
            assert failing.attempts + failing.held == 1
            assert notifier.statistics().failed["webpush"] == 2

            failing.hang = False
            failing.release.set()
            failing.status.clear()
            # The back-off ends: one push at a time until one goes through, then the rest;
            # a push held back meanwhile is retried after its own delay.
            clock.now += BACK_OFF
            async with asyncio.timeout(GUARD):
                await failing.wait_for(1)
            await notifier.wait_idle()
            clock.now += BACK_OFF
            async with asyncio.timeout(GUARD):
                received = await failing.wait_for(2)
            await notifier.wait_idle()
    assert sorted(r.endpoint for r in received) == sorted([bob.endpoint, carol.endpoint])
    assert [r.endpoint for r in healthy.received] == [alice.endpoint]
    assert notifier.statistics().delivered["webpush"] == 3
    assert notifier.statistics().dropped["webpush"] == 0


async def test_a_device_on_a_push_service_that_hangs_holds_up_no_other_device(
    tmp_path: Path,
) -> None:
    """Dave's tablet is on a push service that holds every push; his phone, on another, shows
    the question meanwhile. Once the tablet's service answers (504), the delivery is retried
    on its own, and the tablet gets it once its service works again."""
    handler = HumanInputHandler()
    async with Hanging() as hanging, PushService() as healthy:
        tablet, phone = hanging.browser("tablet"), healthy.browser("phone")
        subscribe(tmp_path, "dave", tablet.subscription())  # pushed to first
        subscribe(tmp_path, "dave", phone.subscription())
        hanging.hang = True
        push = WebPush(
            SUBJECT,
            data_dir=tmp_path,
            push_hosts=[hanging.origin, healthy.origin],
            retry=Retry(first=0.01, cap=0.05),
            timeout=60.0,
        )
        notifier = Notifier(handler, [push], desk_url=DESK, link_secret=SECRET)
        async with notifier:
            request = await ask(handler, "dave")
            await hanging.holding.wait()
            async with asyncio.timeout(GUARD):
                [shown] = await healthy.wait_for(1)
            assert shown.message["notification"]["tag"] == request.pending_id
            hanging.hang = False
            hanging.release.set()
            async with asyncio.timeout(GUARD):
                [taken] = await hanging.wait_for(1)
            await notifier.wait_idle()
    assert taken.endpoint == tablet.endpoint
    assert {r.endpoint for r in healthy.received} == {phone.endpoint}
    assert notifier.statistics().delivered["webpush"] == 1
    assert notifier.statistics().dropped["webpush"] == 0
    history = await handler.history(request.pending_id)
    assert [e.get("actor") for e in history if e["type"] == "shown"] == ["dave"]


async def test_a_push_held_back_is_retried_when_its_push_service_takes_pushes_again(
    clocked: tuple[HumanInputHandler, Clock], tmp_path: Path
) -> None:
    """Bob's push service has failed twice, so it backs off for two delays; carol's question,
    held back from it, is retried when that back-off ends, not after her delivery's own
    first delay, when it would only be held back again."""
    handler, clock = clocked
    async with PushService() as failing:
        bob, carol = failing.browser("bob"), failing.browser("carol")
        subscribe(tmp_path, "bob", bob.subscription())
        subscribe(tmp_path, "carol", carol.subscription())
        failing.status[bob.endpoint] = failing.status[carol.endpoint] = 503
        push = WebPush(
            SUBJECT,
            data_dir=tmp_path,
            push_hosts=[failing.origin],
            retry=Retry(first=BACK_OFF, cap=10 * BACK_OFF, jitter=0.0),
        )
        notifier = Notifier(handler, [push], desk_url=DESK, link_secret=SECRET, poll=0.05)
        async with notifier:
            await ask(handler, "bob")
            await notifier.wait_idle()
            clock.now += BACK_OFF  # bob's retry fails too: the service waits two delays
            async with asyncio.timeout(GUARD):
                await failing.wait_attempts(2)
            await notifier.wait_idle()
            request = await ask(handler, "carol")
            await notifier.wait_idle()
            [held] = [
                item
                for item in await handler.outbox.items_for(request.pending_id)
                if item.lane == "webpush"
            ]
    assert failing.attempts == 2
    assert held.attempts == 1
    assert held.due == clock.now + 2 * BACK_OFF


class Busy(PushService):
    """A push service answering 429 with ``Retry-After: <retry_after>`` while
    :attr:`busy` is set, as a vendor's push service rate-limiting a sender does."""

    def __init__(self, retry_after: str) -> None:
        super().__init__()
        self.busy = True
        self.retry_after = retry_after

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                status, body = await self.answer(*await read_request(reader))
                # Its Date is the store's clock's: a date to wait until is counted from it.
                extra = f"date: {formatdate(START, usegmt=True)}\r\n"
                if status == 429:
                    extra += f"retry-after: {self.retry_after}\r\n"
                head = f"HTTP/1.1 {status} X\r\n{extra}content-length: {len(body)}\r\n\r\n"
                writer.write(head.encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass

    def _take(self, path: str, headers: dict[str, str], body: bytes) -> int:
        return 429 if self.busy else super()._take(path, headers, body)


@pytest.mark.parametrize("form", ["seconds", "date"])
async def test_a_push_service_s_retry_after_is_waited_out(
    clocked: tuple[HumanInputHandler, Clock], tmp_path: Path, form: str
) -> None:
    """A push service answering 429 with Retry-After is sent nothing, the push it refused
    and others to it alike, until that time has passed, however short the surface's own
    retry delay."""
    handler, clock = clocked
    asked = 1800.0
    value = str(int(asked)) if form == "seconds" else formatdate(START + asked, usegmt=True)
    async with Busy(value) as busy:
        bob, carol = busy.browser("bob"), busy.browser("carol")
        subscribe(tmp_path, "bob", bob.subscription())
        subscribe(tmp_path, "carol", carol.subscription())
        push = WebPush(
            SUBJECT,
            data_dir=tmp_path,
            push_hosts=[busy.origin],
            retry=Retry(first=1.0, cap=1.0, jitter=0.0),
        )
        notifier = Notifier(handler, [push], desk_url=DESK, link_secret=SECRET, poll=0.05)
        async with notifier:
            first = await ask(handler, "bob")
            await notifier.wait_idle()
            clock.now += 60.0  # the surface's own delay is long past; the service's is not
            await ask(handler, "carol")
            await notifier.wait_idle()
            assert busy.attempts == 1
            items = [
                item
                for request in (first,)
                for item in await handler.outbox.items_for(request.pending_id)
                if item.lane == "webpush"
            ]
            busy.busy = False
            clock.now = START + asked
            # One push at a time until one goes through; one held back meanwhile is retried
            # after its own delay.
            async with asyncio.timeout(GUARD):
                await busy.wait_for(1)
            await notifier.wait_idle()
            clock.now += 1.0
            async with asyncio.timeout(GUARD):
                received = await busy.wait_for(2)
            await notifier.wait_idle()
    assert [item.due for item in items] == [START + asked]
    assert sorted(r.endpoint for r in received) == sorted([bob.endpoint, carol.endpoint])


@pytest.mark.parametrize(
    ("value", "date", "seconds"),
    [
        ("120", None, 120.0),
        (" 7 ", None, 7.0),
        ("Sat, 01 Jan 2030 00:02:00 GMT", "Sat, 01 Jan 2030 00:00:00 GMT", 120.0),
        ("Sat, 01 Jan 2000 00:00:00 GMT", "Sat, 01 Jan 2030 00:00:00 GMT", 0.0),
        (None, None, 0.0),
        ("", None, 0.0),
        ("-5", None, 0.0),
        ("soon", None, 0.0),
        ("1.5", None, 0.0),
        ("9" * 5000, None, 999_999_999_999.0),
        ("\u0662\u0660", None, 0.0),
        ("Sat, 01 Jan 99999999999999999999 00:00:00 GMT", None, 0.0),
        ("Sat, 01 Jan 2000 00:02:00 GMT", "Sat, 01 Jan 99999999999999999999 00:00:00 GMT", 0.0),
    ],
)
def test_a_retry_after_is_read_or_ignored_never_raised(
    value: str | None, date: str | None, seconds: float
) -> None:
    """Seconds or an HTTP date (from the answer's Date) are read; anything else asks no wait."""
    assert retry_after(value, date) == seconds
