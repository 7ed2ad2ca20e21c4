"""A2A pushes through roomkit's outbox: an answer given on the desk reaches the task's push
URL, signed, retried after a 500 under the same id."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from a2a.types import TaskPushNotificationConfig, TaskState
from a2a_world import SIGNING, World, ask, pushes
from standardwebhooks import Webhook as Verifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roomkit.notify import Notifier
from roomkit.providers.ai.base import AIResponse

RECEIVER = "http://receiver.test/push"


class Receiver:
    """A push receiver that fails the first POST of each delivery with a 500."""

    def __init__(self) -> None:
        self.posts: list[tuple[dict[str, str], bytes, int]] = []
        self.settled = asyncio.Event()
        self.app = Starlette(routes=[Route("/push", self.take, methods=["POST"])])

    async def take(self, request: Request) -> Response:
        body = await request.body()
        headers = dict(request.headers)
        first = all(h["webhook-id"] != headers["webhook-id"] for h, _, _ in self.posts)
        status = 500 if first else 200
        self.posts.append((headers, body, status))
        if status == 200 and json.loads(body)["statusUpdate"]["status"]["state"] == (
            "TASK_STATE_WORKING"
        ):
            self.settled.set()
        return Response(status_code=status)


async def test_an_answer_on_the_desk_is_pushed_signed_and_retried_under_one_id() -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    receiver = Receiver()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=receiver.app))
    push = pushes(world, client=client)
    config = TaskPushNotificationConfig(id="hook-1", url=RECEIVER, token="task-token")
    async with Notifier(world.handler, [push], poll=0.05):
        async with world.http() as http:
            task = await world.send(http, text="Paint it", push=config)
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [request] = await world.handler.list_pending(room_id="ctx-1")
        await world.handler.aresolve(request.pending_id, "blue", by="alice", surface="desk")
        async with asyncio.timeout(10):
            await receiver.settled.wait()
    await client.aclose()
    settled = [
        (headers, body, status)
        for headers, body, status in receiver.posts
        if b"TASK_STATE_WORKING" in body
    ]
    assert [status for _, _, status in settled] == [500, 200]
    assert len({headers["webhook-id"] for headers, _, _ in settled}) == 1
    headers, body, _ = settled[-1]
    assert headers["x-a2a-notification-token"] == "task-token"
    Verifier(SIGNING).verify(body, headers)
    update: dict[str, Any] = json.loads(body)["statusUpdate"]
    assert update["taskId"] == task.id
    assert update["contextId"] == "ctx-1"
    assert "resolved by alice on desk" in update["status"]["message"]["parts"][0]["text"]


class Hits:
    """Push receivers: ``/gone`` answers 404, ``/push`` 200; every POST is counted."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.pushed = asyncio.Event()
        self.app = Starlette(
            routes=[
                Route("/gone", self.gone, methods=["POST"]),
                Route("/push", self.push, methods=["POST"]),
            ]
        )

    async def gone(self, request: Request) -> Response:
        self.paths.append(request.url.path)
        return Response(status_code=404)

    async def push(self, request: Request) -> Response:
        self.paths.append(request.url.path)
        self.pushed.set()
        return Response(status_code=200)


async def test_a_push_url_naming_the_loopback_is_refused_by_default() -> None:
    """A caller sets its task's push URL: one naming this host (or any private address) is
    refused as it is set, and never posted to."""
    from a2a.utils.errors import InvalidParamsError
    from a2a.utils.push_url_validator import validate_push_notification_url

    world = World([ask(), AIResponse(content="Blue it is.")])
    hits = Hits()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=hits.app))
    push = pushes(world, client=client, push_url_validator=validate_push_notification_url)
    config = TaskPushNotificationConfig(id="inside", url="http://127.0.0.1:6379/push")
    async with Notifier(world.handler, [push], poll=0.05) as notifier:
        async with world.http() as http:
            with pytest.raises(InvalidParamsError, match="names no public host"):
                await world.send(http, text="Paint it", push=config)
        await notifier.wait_idle()
    await client.aclose()
    assert hits.paths == []


async def test_one_push_url_that_fails_keeps_no_other_from_its_push() -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    hits = Hits()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=hits.app))
    push = pushes(world, client=client)
    gone = TaskPushNotificationConfig(id="a-gone", url="http://receiver.test/gone")
    kept = TaskPushNotificationConfig(id="b-kept", url="http://receiver.test/push")
    async with Notifier(world.handler, [push], poll=0.05):
        async with world.http() as http:
            task = await world.send(http, text="Paint it", push=gone)
            await world.client(http).create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, **_fields(kept))
            )
            [request] = await world.handler.list_pending(room_id="ctx-1")
            await world.handler.aresolve(request.pending_id, "blue", by="alice")
        async with asyncio.timeout(10):
            await hits.pushed.wait()
    await client.aclose()
    assert "/push" in hits.paths


def _fields(config: TaskPushNotificationConfig) -> dict[str, Any]:
    return {"id": config.id, "url": config.url}
