"""A request that times out or is withdrawn ends its A2A task then and there when the push
surface runs: the task store holds the end, and the task's push URL is told."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from a2a.auth.user import User
from a2a.helpers.proto_helpers import get_text_parts
from a2a.server.context import ServerCallContext
from a2a.types import GetTaskRequest, Task, TaskPushNotificationConfig, TaskState, TaskStatus
from a2a_world import World, ask, pushes
from google.protobuf.timestamp_pb2 import Timestamp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roomkit.notify import Notifier
from roomkit.providers.ai.base import AIResponse

ENDED = {"TASK_STATE_FAILED", "TASK_STATE_CANCELED"}


class Receiver:
    """A push receiver that keeps every update and tells when a task's end was taken; it
    answers the first ``refuse`` ends 503."""

    def __init__(self, refuse: int = 0) -> None:
        self.updates: list[dict[str, Any]] = []
        self.ids: list[str] = []
        self.ended = asyncio.Event()
        self.refuse = refuse
        self.app = Starlette(routes=[Route("/push", self.take, methods=["POST"])])

    async def take(self, request: Request) -> Response:
        update = json.loads(await request.body())["statusUpdate"]
        self.updates.append(update)
        if update["status"]["state"] in ENDED:
            self.ids.append(request.headers["webhook-id"])
            if self.refuse > 0:
                self.refuse -= 1
                return Response(status_code=503)
            self.ended.set()
        return Response(status_code=200)


@pytest.mark.parametrize(
    ("how", "state", "said"),
    [
        ("timeout", TaskState.TASK_STATE_FAILED, "timed out"),
        ("withdrawal", TaskState.TASK_STATE_CANCELED, "Withdrawn"),
    ],
)
async def test_an_unanswered_end_ends_the_task_without_a_follow_up(
    how: str, state: TaskState, said: str
) -> None:
    world = World(
        [ask(), AIResponse(content="Blue it is.")], timeout=0.2 if how == "timeout" else 300
    )
    receiver = Receiver()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=receiver.app))
    push = pushes(world, client=client)
    config = TaskPushNotificationConfig(id="hook-1", url="http://receiver.test/push")
    try:
        async with Notifier(world.handler, [push], poll=0.05), world.http() as http:
            task = await world.send(http, text="Paint it", push=config)
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            [request] = await world.handler.list_pending(room_id="ctx-1")
            if how == "withdrawal":
                assert await world.handler.arelease(request.pending_id)
            async with asyncio.timeout(10):
                await receiver.ended.wait()
            stored = await world.client(http).get_task(GetTaskRequest(id=task.id))
    finally:
        await client.aclose()
    assert stored.status.state == state
    [text] = get_text_parts(list(stored.status.message.parts))
    assert said in text
    [end] = [u for u in receiver.updates if u["status"]["state"] in ENDED]
    assert end["taskId"] == task.id
    assert said in end["status"]["message"]["parts"][0]["text"]


class Caller(User):
    """A caller as the SDK's task store knows its owners."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


async def test_a_task_past_the_first_page_of_its_context_is_ended_too() -> None:
    """The task waiting on the withdrawn request has 60 newer tasks in its context (more
    than one page of the task store's listing): it is still ended and pushed."""
    world = World([ask(), AIResponse(content="Blue it is.")])
    receiver = Receiver()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=receiver.app))
    push = pushes(world, client=client)
    config = TaskPushNotificationConfig(id="hook-1", url="http://receiver.test/push")
    alice = ServerCallContext(user=Caller("alice"))
    try:
        notifier = Notifier(world.handler, [push], poll=0.05)
        async with notifier, world.http() as http:
            task = await world.send(http, text="Paint it", push=config)
            [request] = await world.handler.list_pending(room_id="ctx-1")
            for n in range(60):
                stamp = Timestamp()
                stamp.GetCurrentTime()
                done = TaskStatus(state=TaskState.TASK_STATE_COMPLETED, timestamp=stamp)
                await world.tasks.save(
                    Task(id=f"later-{n}", context_id="ctx-1", status=done), alice
                )
            assert await world.handler.arelease(request.pending_id)
            async with asyncio.timeout(10):
                await notifier.wait_idle()
            stored = await world.client(http).get_task(GetTaskRequest(id=task.id))
    finally:
        await client.aclose()
    assert stored.status.state == TaskState.TASK_STATE_CANCELED
    [end] = [u for u in receiver.updates if u["status"]["state"] in ENDED]
    assert end["taskId"] == task.id


async def test_an_end_whose_push_failed_is_pushed_again() -> None:
    """The first POST of a withdrawn request's end is answered 503: the retry posts the end
    the task store holds, under the same ``webhook-id``."""
    world = World([ask(), AIResponse(content="Blue it is.")])
    receiver = Receiver(refuse=1)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=receiver.app))
    push = pushes(world, client=client)
    config = TaskPushNotificationConfig(id="hook-1", url="http://receiver.test/push")
    try:
        async with Notifier(world.handler, [push], poll=0.05), world.http() as http:
            task = await world.send(http, text="Paint it", push=config)
            [request] = await world.handler.list_pending(room_id="ctx-1")
            assert await world.handler.arelease(request.pending_id)
            async with asyncio.timeout(10):
                await receiver.ended.wait()
            stored = await world.client(http).get_task(GetTaskRequest(id=task.id))
    finally:
        await client.aclose()
    assert len(receiver.ids) == 2
    assert len(set(receiver.ids)) == 1
    first, again = [u for u in receiver.updates if u["status"]["state"] in ENDED]
    assert first == again
    assert again["taskId"] == task.id
    assert again["status"]["state"] == "TASK_STATE_CANCELED"
    assert stored.status.state == TaskState.TASK_STATE_CANCELED
    assert again["status"]["message"]["parts"][1]["data"]["pending_id"] == request.pending_id
