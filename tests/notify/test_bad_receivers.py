"""Receivers that hang or fail beside healthy ones: each surface is delivered on its own, a
failure is one log line, and a notifier that stops mid-delivery hands the delivery back."""

from __future__ import annotations

import asyncio
import logging
import math
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.notify.misbehaving import GARBAGE, Misbehaving
from tests.notify.receiver import SECRET, Receiver
from tests.tools.human_input.durable.store_fixtures import open_store

from roomkit.notify import DeliveryError, Notice, Notifier, Person, Retry, Webhook
from roomkit.stores.outbox import now_of, outbox_for
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

START = 1_900_000_000.0


async def test_a_receiver_that_hangs_delays_no_other(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """While one receiver holds every POST it takes, the other receives all of its own."""
    handler = make_handler()
    release = asyncio.Event()

    async def hold(attempt: int) -> None:
        await release.wait()

    async with Receiver(before_reply=hold) as hanging, Receiver() as healthy:
        # Named so that, by id, the hanging one's deliveries come first.
        surfaces = [
            Webhook(hanging.url, hanging.secret, name="a-hanging", timeout=60),
            Webhook(healthy.url, healthy.secret, name="b-healthy"),
        ]
        async with Notifier(handler, surfaces, concurrency=2) as notifier:
            created = [
                (await handler.create("ask", {"question": f"#{n}"}, actor_id="alice")).pending_id
                for n in range(6)
            ]
            delivered = await healthy.wait_for(6)
            assert hanging.deliveries == []  # every POST it took is still held
            release.set()
            held = await hanging.wait_for(6)
            await notifier.wait_idle()
    assert sorted(body["pending_id"] for _, body in delivered) == sorted(created)
    assert sorted(body["pending_id"] for _, body in held) == sorted(created)
    assert notifier.statistics().delivered == {"a-hanging": 6, "b-healthy": 6}


class Watch(logging.Handler):
    """Keeps the notifier's records, and says when one at warning or above came."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.warned = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if record.levelno >= logging.WARNING:
            self.warned.set()


@pytest.fixture
def watch() -> Any:
    found = Watch()
    log = logging.getLogger("roomkit.notify")
    log.addHandler(found)
    yield found
    log.removeHandler(found)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("how", ["500", "reset", "tls", "refused", "timeout", *GARBAGE])
async def test_a_receivers_failure_is_one_line_without_a_traceback(how: str, watch: Watch) -> None:
    """Refused, reset, timed out, a 500, TLS that does not verify, answers that are not
    HTTP: each attempt is one line saying what went wrong, and no traceback."""
    handler = HumanInputHandler()
    release = asyncio.Event()

    async def hold(attempt: int) -> None:
        await release.wait()

    async with Misbehaving(how if how in ("500", "reset", "tls", *GARBAGE) else "500") as bad:
        url = bad.url
        if how == "refused":
            url = f"http://127.0.0.1:{closed_port()}/hooks"
        async with Receiver(before_reply=hold) as hanging:
            if how == "timeout":
                url = hanging.url
            timeout = 0.2 if how == "timeout" else 10.0
            webhook = Webhook(url, SECRET, retry=Retry(first=60.0), timeout=timeout)
            async with Notifier(handler, [webhook]) as notifier:
                await handler.create("ask", {"question": "Anyone there?"}, actor_id="alice")
                await watch.warned.wait()
            release.set()
    assert notifier.statistics().failed["webhook"] == 1
    [line] = [r for r in watch.records if r.levelno >= logging.WARNING]
    assert line.exc_info is None
    message = line.getMessage()
    assert "\n" not in message
    assert f"webhook {url} " in message
    assert "retrying in" in message


class Clock:
    """A store's clock that stands still: no lease lapses while a test runs."""

    def __call__(self) -> float:
        return START


@pytest.fixture
async def still_handler(
    store_kind: str, store_url: str, store_prefix: str
) -> AsyncIterator[Callable[[], HumanInputHandler]]:
    """Handlers sharing the test's store, on a clock that stands still (the memory store:
    the event loop's)."""
    opened: list[Any] = []
    shared = HumanInputHandler()

    def factory() -> HumanInputHandler:
        if store_kind == "memory":
            return shared
        store = open_store(store_url, store_prefix, clock=Clock())  # type: ignore[arg-type]
        opened.append(store)
        return HumanInputHandler(store=store)

    yield factory
    for store in opened:
        await store.close()


async def test_a_notifier_stopped_mid_delivery_hands_it_back(
    still_handler: Callable[[], HumanInputHandler],
) -> None:
    """Stopped while its POST is held, a notifier hands the delivery back, due at once: the
    next notifier sends it straight away, with the same webhook-id, though the first
    one's lease (an hour) has not lapsed."""
    first, second = still_handler(), still_handler()
    first_post, release = asyncio.Event(), asyncio.Event()

    async def hold(attempt: int) -> None:
        if attempt == 1:
            first_post.set()
            await release.wait()

    async with Receiver(before_reply=hold) as receiver:
        stopping = Notifier(first, [Webhook(receiver.url, receiver.secret)], lease=3600)
        async with stopping:
            request = await first.create("ask", {"question": "Still there?"}, actor_id="alice")
            await first_post.wait()
        outbox = outbox_for(first)
        [delivery] = [i for i in await outbox.items_for(request.pending_id) if not i.done]
        assert delivery.due <= now_of(first)  # handed back, not held for the lease
        async with Notifier(second, [Webhook(receiver.url, receiver.secret)], lease=3600):
            [(webhook_id, body)] = await receiver.wait_for(1)
        release.set()
    assert body["pending_id"] == request.pending_id
    assert webhook_id == delivery.item_id
    assert receiver.ids_seen == [webhook_id, webhook_id]


class AsksForYears:
    """A surface whose receiver is busy and asks to be left alone for ``wait`` seconds."""

    name = "asking"
    retry = Retry(first=1.0, cap=1.0, give_up=3600.0, jitter=0.0)

    def __init__(self, wait: float) -> None:
        self.wait = wait

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        return True

    async def send(self, notice: Notice) -> None:
        raise DeliveryError("busy", retry=True, retry_after=self.wait)

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(
    ("wait", "after"),
    [(1e9, 3600.0), (math.inf, 3600.0), (math.nan, 1.0), (-5.0, 1.0), (120.0, 120.0)],
)
async def test_a_surface_s_retry_after_waits_no_longer_than_its_give_up(
    tmp_path: Path, wait: float, after: float
) -> None:
    """Whatever a surface's receiver asks to wait (years, forever, NaN), its delivery is
    retried no later than the surface's give-up time, and no sooner than asked within it."""
    store = SQLiteStore(tmp_path / "pending.db", clock=Clock())
    handler = HumanInputHandler(store=store)
    try:
        async with Notifier(handler, [AsksForYears(wait)]) as notifier:
            request = await handler.create("ask", {"question": "Anyone?"}, actor_id="alice")
            await notifier.wait_idle()
        items = await handler.outbox.items_for(request.pending_id)
    finally:
        await store.close()
    [item] = [item for item in items if item.body.get("surface") == "asking"]
    assert (item.done, item.attempts) == (False, 1)
    assert item.due == START + after
