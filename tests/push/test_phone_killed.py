"""A notifier killed between sending a question to a phone and recording that it did: how
the request ends still replaces the question there (Web Push: on the devices it was pushed
to; ntfy: on the person's topic)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from tests.forked_processes import Peer, ready
from tests.push import phone_peer
from tests.push.ntfy_server import NtfyServer
from tests.push.phone_peer import DESK, SECRET, SUBJECT, TOPIC
from tests.push.push_service import PushService
from tests.servers.stores import Ahead, StoreSite

from roomkit.models.pending_input import PendingInput
from roomkit.notify import Notifier, Ntfy
from roomkit.notify.ntfy import sequence_id
from roomkit.notify.push_subscriptions import PushSubscriptions, subscription_of
from roomkit.notify.surface import Surface
from roomkit.notify.webpush import WebPush
from roomkit.tools.human_input import HumanInputHandler

LEASE = 30.0
"""The killed notifier's lease: it runs out when the tests' store clock is moved past it."""
APPROVED = '{"decision":"approve"}'

pytestmark = pytest.mark.parametrize("store_kind", ["sqlite", "redis", "postgres"], indirect=True)


def phone_notifier(site: StoreSite, *surface: str) -> AbstractAsyncContextManager[Peer]:
    """A notifier in a process of its own with one surface (see :mod:`tests.push.phone_peer`)."""
    return ready(phone_peer.main, site.url, site.prefix, str(LEASE), *surface)


def holding_the_first() -> tuple[asyncio.Event, asyncio.Event, Callable[[int], Awaitable[None]]]:
    """A receiver's ``before_reply`` that holds its first answer until ``release`` is set,
    with ``taken`` set once the first request came."""
    taken, release = asyncio.Event(), asyncio.Event()

    async def hold(number: int) -> None:
        if number == 1:
            taken.set()
            await release.wait()

    return taken, release, hold


@asynccontextmanager
async def durable_handler(site: StoreSite) -> AsyncIterator[tuple[HumanInputHandler, Ahead]]:
    clock = Ahead()
    store = site.open(clock=clock)
    try:
        yield HumanInputHandler(store=store), clock
    finally:
        await store.close()


async def killed_while_sending(
    handler: HumanInputHandler,
    clock: Ahead,
    taken: asyncio.Event,
    release: asyncio.Event,
    running: Callable[[], AbstractAsyncContextManager[Peer]],
) -> PendingInput:
    """Ask alice for an approval while a peer notifier runs; kill it once its first send
    was taken, answer the approval in Slack, and let the dead notifier's lease run out."""
    async with running() as process:
        request = await handler.create_approval(
            "refund", {"order": "A-17", "amount": 40}, approvers=["alice"]
        )
        await taken.wait()
        process.kill()  # SIGKILL: sent, never marked done
        await process.wait()
    release.set()
    assert await handler.aresolve(request.pending_id, APPROVED, by="alice", surface="slack")
    await clock.move(LEASE)  # the killed notifier's lease runs out
    return request


def notifier_of(handler: HumanInputHandler, surface: Surface) -> Notifier:
    return Notifier(handler, [surface], desk_url=DESK, link_secret=SECRET, poll=0.05)


async def test_a_question_pushed_by_a_killed_notifier_is_replaced_once_answered(
    store_site: StoreSite, tmp_path: Path
) -> None:
    """SIGKILL once the push service took the question, before the delivery is marked done;
    answered before the lease runs out: the next notifier replaces the question on the
    phone, so no answer buttons are left on it for a request answered."""
    taken, release, hold = holding_the_first()
    async with durable_handler(store_site) as (handler, clock), PushService() as service:
        phone = service.browser("phone")
        PushSubscriptions(tmp_path).add("alice", subscription_of(phone.subscription()))
        service.before_reply = hold
        request = await killed_while_sending(
            handler,
            clock,
            taken,
            release,
            lambda: phone_notifier(store_site, "webpush", str(tmp_path), service.origin),
        )
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        async with notifier_of(handler, push):
            [question, settled] = await service.wait_for(2)
    assert question.endpoint == settled.endpoint == phone.endpoint
    actions = question.message["notification"]["actions"]
    assert [a["action"] for a in actions] == ["approve", "reject"]
    note = settled.message["notification"]
    assert note["tag"] == question.message["notification"]["tag"] == request.pending_id
    assert note["title"] == "Approved by alice in Slack"
    assert "actions" not in note
    assert settled.headers["topic"] == question.headers["topic"]


async def test_a_question_published_by_a_killed_notifier_is_updated_once_answered(
    store_site: StoreSite,
) -> None:
    """The same on ntfy: the question is updated in place, by its sequence id, on alice's
    topic."""
    taken, release, hold = holding_the_first()
    async with durable_handler(store_site) as (handler, clock), NtfyServer() as server:
        server.before_reply = hold
        request = await killed_while_sending(
            handler, clock, taken, release, lambda: phone_notifier(store_site, "ntfy", server.url)
        )
        async with notifier_of(handler, Ntfy(server.url, TOPIC)):
            [question, settled] = await server.wait_for(2)
    assert question.body is not None
    assert settled.body is not None
    assert question.body["topic"] == settled.body["topic"] == "approvals-alice-k3v9q"
    assert question.body["sequence_id"] == settled.body["sequence_id"]
    assert settled.body["sequence_id"] == sequence_id(request.pending_id)
    assert [a["label"] for a in question.body["actions"]] == ["Approve", "Reject", "Open"]
    assert settled.body["title"] == "Approved by alice in Slack"
    assert "actions" not in settled.body
