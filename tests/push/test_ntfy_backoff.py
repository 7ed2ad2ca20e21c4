"""ntfy through the notifier when the server answers 429: the whole server is left alone,
every topic, a minute after the first 429 and doubling with each in a row (on the store's
clock, moved by the test); ntfy says no Retry-After, and ntfy.sh bans an address that goes
on sending."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.push.ntfy_server import NtfyServer

from roomkit.notify import DeliveryError, Notice, Notifier, Ntfy, Retry
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
DESK = "https://desk.example.com"
TOPIC = "approvals-{actor}-k3v9q"
START = 1_900_000_000.0
GUARD = 30.0
"""Seconds a test waits for what must come before it fails instead of hanging."""
# The surface's own retries: one second, far shorter than a 429's quiet.
SECOND = Retry(first=1.0, cap=1.0, jitter=0.0)
POLL = 0.05
"""Seconds between the notifier's looks at its outbox: what is due once the test moves the
store's clock goes out at the next look."""


class Clock:
    """The store's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def clocked(tmp_path: Path) -> AsyncIterator[tuple[HumanInputHandler, Clock]]:
    clock = Clock()
    store = SQLiteStore(tmp_path / "pending.db", clock=clock)
    yield HumanInputHandler(store=store), clock
    await store.close()


async def ask(handler: HumanInputHandler, actor: str) -> None:
    await handler.create("ask", {"question": f"Ship it, {actor}?"}, actor_id=actor)


async def moved(
    clock: Clock, seconds: float, server: NtfyServer, requests: int, notifier: Notifier
) -> None:
    """Move the store's clock ``seconds`` on, wait for the server's ``requests``-th request
    (no longer than :data:`GUARD`), and let the notifier settle."""
    clock.now += seconds
    async with asyncio.timeout(GUARD):
        await server.wait_for(requests)
    await notifier.wait_idle()


async def bob_quieted_then_both_sent(
    handler: HumanInputHandler, clock: Clock, server: NtfyServer, notifier: Notifier
) -> None:
    """Bob's publish is answered 429 (the server's POSTs are); alice's, asked after it, waits
    out the minute with his; then the server takes POSTs again: one request goes through,
    and the other follows as due."""
    await ask(handler, "bob")
    await notifier.wait_idle()
    assert len(server.requests) == 1
    await ask(handler, "alice")
    await notifier.wait_idle()
    clock.now += 59
    await notifier.wait_idle()
    assert len(server.requests) == 1
    server.status.clear()
    await moved(clock, 1, server, 2, notifier)
    # One request at a time until one goes through, then the rest as due.
    await moved(clock, SECOND.cap, server, 3, notifier)


async def test_a_429_leaves_the_server_alone_for_a_minute_for_every_topic(
    clocked: tuple[HumanInputHandler, Clock],
) -> None:
    """Bob's publish is answered 429: for a minute nothing more goes to the server, not his
    retry (whatever the surface's own retry delay) nor alice's new question on her topic;
    after it, both are published."""
    handler, clock = clocked
    async with NtfyServer() as server:
        server.status["POST"] = 429
        notifier = Notifier(
            handler,
            [Ntfy(server.url, TOPIC, retry=SECOND)],
            desk_url=DESK,
            link_secret=SECRET,
            poll=POLL,
        )
        async with notifier:
            await bob_quieted_then_both_sent(handler, clock, server, notifier)
    topics = sorted(r.body["topic"] for r in server.requests[1:] if r.body is not None)
    assert topics == ["approvals-alice-k3v9q", "approvals-bob-k3v9q"]
    assert notifier.statistics().delivered["ntfy"] == 2
    assert notifier.statistics().dropped["ntfy"] == 0


async def test_each_429_in_a_row_doubles_the_quiet(
    clocked: tuple[HumanInputHandler, Clock],
) -> None:
    """A second 429, after the first minute, leaves the server alone two minutes; a publish
    that goes through ends the quiet, and the next 429 leaves it alone a minute again."""
    handler, clock = clocked
    async with NtfyServer() as server:
        server.status["POST"] = 429
        notifier = Notifier(
            handler,
            [Ntfy(server.url, TOPIC, retry=SECOND)],
            desk_url=DESK,
            link_secret=SECRET,
            poll=POLL,
        )
        async with notifier:
            await ask(handler, "bob")
            await notifier.wait_idle()
            await moved(clock, 60, server, 2, notifier)
            clock.now += 119
            await notifier.wait_idle()
            assert len(server.requests) == 2
            server.status.clear()
            await moved(clock, 1, server, 3, notifier)
            assert notifier.statistics().delivered["ntfy"] == 1

            server.status["POST"] = 429
            await ask(handler, "alice")
            await notifier.wait_idle()
            assert len(server.requests) == 4
            server.status.clear()
            await moved(clock, 60, server, 5, notifier)
    assert notifier.statistics().delivered["ntfy"] == 2


async def test_every_surface_sending_to_the_server_leaves_it_alone_after_a_429(
    clocked: tuple[HumanInputHandler, Clock],
) -> None:
    """Two surfaces on one server (a team's topics beside the people's, another path to the
    same server): bob's publish through the first is answered 429, and alice's through the
    second waits out the same minute instead of going on sending."""
    handler, clock = clocked
    async with NtfyServer() as server:
        server.status["POST"] = 429
        people = Ntfy(server.url, {"bob": "approvals-bob-k3v9q"}, retry=SECOND)
        team = Ntfy(
            server.url + "/",
            {"alice": "team-alice-k3v9q"},
            retry=SECOND,
            name="ntfy-team",
        )
        notifier = Notifier(handler, [people, team], desk_url=DESK, link_secret=SECRET, poll=POLL)
        async with notifier:
            await bob_quieted_then_both_sent(handler, clock, server, notifier)
    topics = sorted(r.body["topic"] for r in server.requests[1:] if r.body is not None)
    assert topics == ["approvals-bob-k3v9q", "team-alice-k3v9q"]
    assert notifier.statistics().delivered["ntfy-team"] == 1


async def test_surfaces_made_apart_share_the_servers_quiet() -> None:
    """Without a notifier, on the event loop's clock: a second surface made apart sends
    nothing to the server that answered the first 429, and says so."""
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="alice")
    notice = Notice("question_pending", "d1", request, recipient="alice", desk_url=DESK)
    async with NtfyServer() as server:
        server.status["POST"] = 429
        first, second = Ntfy(server.url, TOPIC), Ntfy(server.url, TOPIC)
        with pytest.raises(DeliveryError, match="429"):
            await first.send(notice)
        with pytest.raises(DeliveryError, match="left alone") as held:
            await second.send(notice)
        await first.aclose()
        await second.aclose()
    assert len(server.requests) == 1
    assert held.value.alone
    assert held.value.retry
    assert 59 < held.value.retry_after <= 60


async def test_a_429_seen_on_another_clock_counts_on_the_stores(
    clocked: tuple[HumanInputHandler, Clock],
) -> None:
    """A surface of the process on no store (the event loop's clock) is answered 429: the
    notifier's surface on the store's clock leaves the server alone the same minute, on its
    own clock, then publishes."""
    handler, clock = clocked
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="bob")
    notice = Notice("question_pending", "d1", request, recipient="bob", desk_url=DESK)
    async with NtfyServer() as server:
        server.status["POST"] = 429
        apart = Ntfy(server.url, TOPIC)
        notifier = Notifier(
            handler,
            [Ntfy(server.url, TOPIC, retry=SECOND)],
            desk_url=DESK,
            link_secret=SECRET,
            poll=POLL,
        )
        async with notifier:
            with pytest.raises(DeliveryError, match="429"):
                await apart.send(notice)
            server.status.clear()
            await ask(handler, "alice")
            await notifier.wait_idle()
            clock.now += 59
            await notifier.wait_idle()
            assert len(server.requests) == 1
            await moved(clock, 1, server, 2, notifier)
        await apart.aclose()
    assert notifier.statistics().delivered["ntfy"] == 1
