"""A2A pushes over real HTTP to a receiver on loopback: a POST held past the push's timeout
and one answered 500 are both tried again, under one ``webhook-id``, until one lands."""

from __future__ import annotations

import asyncio

from a2a.types import TaskPushNotificationConfig, TaskState
from a2a_world import SIGNING, World, ask, pushes
from tests.servers.webhook_receiver import Receiver

from roomkit.notify import Notifier
from roomkit.providers.ai.base import AIResponse

# The receiver's POSTs, numbered from 1: the opening push lands; the settling push is first
# held until the push gives up on it, then answered 500, then taken.
HELD, FAILED = 2, 3


async def test_a_push_held_past_its_timeout_then_refused_is_retried_until_it_lands() -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    given_up = asyncio.Event()

    async def hold(attempt: int) -> None:
        if attempt == HELD:
            # Held until the next POST comes: the push stopped waiting for this one.
            await given_up.wait()
        elif attempt == FAILED:
            given_up.set()

    def status(attempt: int) -> int:
        # The held POST's answer goes to a connection its sender has closed.
        return 500 if attempt in (HELD, FAILED) else 200

    async with Receiver(SIGNING, status, before_reply=hold) as receiver:
        push = pushes(world, timeout=0.2)
        config = TaskPushNotificationConfig(id="hook-1", url=receiver.url, token="task-token")
        try:
            async with Notifier(world.handler, [push], poll=0.05):
                async with world.http() as http:
                    task = await world.send(http, text="Paint it", push=config)
                assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
                async with asyncio.timeout(10):
                    [(_, opened)] = await receiver.wait_for(1)
                [request] = await world.handler.list_pending(room_id="ctx-1")
                await world.handler.aresolve(request.pending_id, "blue", by="alice", surface="desk")
                async with asyncio.timeout(10):
                    [_, (settled_id, settled)] = await receiver.wait_for(2)
        finally:
            given_up.set()

    # Every delivery the receiver took verified under the signing secret (standardwebhooks).
    assert receiver.refused == 0
    assert receiver.attempts == 4
    assert opened["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    # The held POST, the refused one and the one that landed are one delivery.
    assert receiver.ids_seen[1:] == [settled_id] * 3
    assert settled_id != receiver.ids_seen[0]
    update = settled["statusUpdate"]
    assert update["taskId"] == task.id
    assert update["contextId"] == "ctx-1"
    assert update["status"]["state"] == "TASK_STATE_WORKING"
    assert "resolved by alice on desk" in update["status"]["message"]["parts"][0]["text"]
