"""Notifiers in processes of their own: one killed mid-delivery, two on one store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import pytest
from tests.forked_processes import Peer, ready
from tests.notify import notifier_peer
from tests.notify.receiver import Receiver

from roomkit.notify import Notifier, Retry, Webhook
from roomkit.tools.human_input import HumanInputHandler

pytestmark = pytest.mark.parametrize("store_kind", ["sqlite", "redis", "postgres"], indirect=True)


def notifier(
    url: str, prefix: str, receiver: Receiver, lease: float
) -> AbstractAsyncContextManager[Peer]:
    """A notifier in a process of its own (see :mod:`tests.notify.notifier_peer`)."""
    return ready(notifier_peer.main, url, prefix, receiver.url, receiver.secret, str(lease))


async def test_a_notifier_killed_mid_delivery_is_replaced_and_the_webhook_id_kept(
    make_handler: Callable[[], HumanInputHandler], store_url: str, store_prefix: str
) -> None:
    """SIGKILL while the POST is in flight: the next notifier sends it again, same id."""
    handler = make_handler()
    first_post = asyncio.Event()
    release = asyncio.Event()

    async def hold(attempt: int) -> None:
        if attempt == 1:
            first_post.set()
            await release.wait()

    # The held first POST is answered only once its sender is dead: it counts for nothing.
    async with Receiver(status=lambda n: 599 if n == 1 else 200, before_reply=hold) as receiver:
        async with notifier(store_url, store_prefix, receiver, lease=1.0) as process:
            request = await handler.create("ask", {"question": "Still there?"}, actor_id="alice")
            await first_post.wait()
            process.kill()  # SIGKILL: claimed, sent, never marked done
            await process.wait()
        release.set()
        webhook = Webhook(receiver.url, receiver.secret, retry=Retry(first=0.05, cap=0.2))
        async with Notifier(handler, [webhook], lease=1.0, poll=0.1):
            delivered = await receiver.wait_for(1)
    [(webhook_id, body)] = delivered
    assert body["pending_id"] == request.pending_id
    assert receiver.ids_seen == [webhook_id, webhook_id]


async def test_two_notifier_processes_never_send_one_delivery_twice(
    make_handler: Callable[[], HumanInputHandler], store_url: str, store_prefix: str
) -> None:
    handler = make_handler()
    async with Receiver() as receiver:
        async with (
            notifier(store_url, store_prefix, receiver, 30.0),
            notifier(store_url, store_prefix, receiver, 30.0),
        ):
            for n in range(20):
                await handler.create("ask", {"question": f"#{n}"}, actor_id="alice")
            await receiver.wait_for(20)
        ids = [webhook_id for webhook_id, _ in receiver.deliveries]
    assert len(ids) == 20
    assert len(set(ids)) == 20
    assert receiver.attempts == 20
