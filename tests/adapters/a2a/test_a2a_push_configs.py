"""A task's push config is checked as it is set, by the rule the push posts by: one the push
could not send is refused with a JSON-RPC error saying what is wrong, and nothing is stored;
one stored around the request handler is refused by the push the same way."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from a2a.server.context import ServerCallContext
from a2a.types import AuthenticationInfo, TaskPushNotificationConfig, TaskState
from a2a.utils.errors import InvalidParamsError
from a2a.utils.push_url_validator import validate_push_notification_url
from a2a_world import SIGNING, World, ask, pushes
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roomkit.adapters.a2a import A2APush
from roomkit.notify import Notifier
from roomkit.providers.ai.base import AIResponse

GOOD = "http://receiver.test/push"
BAD = "http://receiver.test/bad"
BEARER = AuthenticationInfo(scheme="Bearer", credentials="abc")

# Each config the push cannot send, and what the refusal says.
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "loopback": ({"url": "http://127.0.0.1:6379/bad"}, "names no public host"),
    "loopback-v6": ({"url": "http://[::1]:8080/bad"}, "names no public host"),
    "private": ({"url": "http://10.0.0.7/bad"}, "names no public host"),
    "metadata": ({"url": "http://169.254.169.254/latest/meta-data/"}, "names no public host"),
    "label-too-long": ({"url": f"https://{'a' * 64}.example/bad"}, "names no public host"),
    "file": ({"url": "file:///etc/passwd"}, "not file:"),
    "ftp": ({"url": "ftp://receiver.test/bad"}, "not ftp:"),
    "no-scheme": ({"url": "receiver.test/bad"}, "it names no scheme"),
    "no-host": ({"url": "https:///bad"}, "names no host"),
    "bad-port": ({"url": "http://receiver.test:99999/bad"}, "port is not a number"),
    "credentials": ({"url": "http://user:pass@receiver.test/bad"}, "carries credentials"),
    "url-too-long": ({"url": f"{BAD}?{'a' * 3000}"}, "at most 2048 are taken"),
    "url-line-break": ({"url": f"{BAD}\r\nX-Evil: 1"}, "percent-encode"),
    "url-not-ascii": ({"url": "http://receiver.test/bäd"}, "percent-encode"),
    "token-line-break": ({"url": BAD, "token": "t\r\nX-Evil: 1"}, "token holds a line break"),
    "token-control": ({"url": BAD, "token": "t\x00k"}, "token holds a control character"),
    "token-not-ascii": ({"url": BAD, "token": "tëst"}, "token holds a letter outside ASCII"),
    "token-spaces": ({"url": BAD, "token": " tok "}, "token starts or ends with whitespace"),
    "token-too-big": ({"url": BAD, "token": "t" * 100_000}, "at most 4096 are taken"),
    "id-line-break": ({"id": "a\nb", "url": BAD}, "its id holds a line break"),
    "id-too-long": ({"id": "i" * 300, "url": BAD}, "at most 256 are taken"),
    "no-credentials": (
        {"url": BAD, "authentication": AuthenticationInfo(scheme="Bearer")},
        "needs both a scheme",
    ),
    "no-scheme-word": (
        {"url": BAD, "authentication": AuthenticationInfo(scheme="Bea rer", credentials="c")},
        "scheme must be one word",
    ),
    "credentials-line-break": (
        {"url": BAD, "authentication": AuthenticationInfo(scheme="Bearer", credentials="c\nX")},
        "credentials holds a line break",
    ),
    "credentials-too-big": (
        {"url": BAD, "authentication": AuthenticationInfo(scheme="Bearer", credentials="c" * 5000)},
        "at most 4096 are taken",
    ),
}


async def public_or_receiver(url: str) -> bool:
    """A server's own URL check: its receiver, or a public host as the SDK's check says."""
    return urlsplit(url).hostname == "receiver.test" or await validate_push_notification_url(url)


async def failing_for_bad(url: str) -> bool:
    """A server's own URL check that fails, as one asking a service may."""
    if urlsplit(url).path == "/bad":
        raise RuntimeError("the allow-list service is down")
    return True


async def _asking(world: World, http: httpx.AsyncClient) -> str:
    task = await world.send(http, text="Paint it")
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    return task.id


@pytest.mark.parametrize("shape", REFUSED)
async def test_a_config_the_push_cannot_send_is_refused_as_it_is_set(shape: str) -> None:
    fields, says = REFUSED[shape]
    world = World([ask(), AIResponse(content="Blue it is.")])
    pushes(world, push_url_validator=validate_push_notification_url)
    async with world.http() as http:
        task_id = await _asking(world, http)
        config = TaskPushNotificationConfig(task_id=task_id, **fields)
        with pytest.raises(InvalidParamsError) as refused:
            await world.client(http, "JSONRPC").create_task_push_notification_config(config)
    assert str(refused.value.message).startswith("Push notification config refused: ")
    assert says in str(refused.value.message)
    assert await world.configs.get_info_for_dispatch(task_id) == []


async def test_a_refusal_is_a_json_rpc_invalid_params_error_on_the_wire() -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    pushes(world, push_url_validator=validate_push_notification_url)
    async with world.http() as http:
        task_id = await _asking(world, http)
        params = {"taskId": task_id, "url": "http://169.254.169.254/latest/meta-data/"}
        body = {"jsonrpc": "2.0", "id": 7, "method": "CreateTaskPushNotificationConfig"}
        response = await http.post(
            "/rpc", json={**body, "params": params}, headers={"A2A-Version": "1.0"}
        )
    error = response.json()["error"]
    assert response.json()["id"] == 7
    assert error["code"] == -32602
    assert "names no public host" in error["message"]
    assert "push_url_validator" in error["message"]
    assert await world.configs.get_info_for_dispatch(task_id) == []


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_message_setting_a_refused_config_starts_no_task(binding: str) -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    pushes(world, push_url_validator=validate_push_notification_url)
    config = TaskPushNotificationConfig(url="http://127.0.0.1:6379/push", token="t")
    async with world.http() as http:
        with pytest.raises(InvalidParamsError, match="names no public host"):
            await world.send(http, text="Paint it", push=config, binding=binding)
    assert await world.handler.list_pending(room_id="ctx-1") == []


async def test_a_url_check_that_fails_refuses_the_config_as_it_is_set() -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    pushes(world, push_url_validator=failing_for_bad)
    async with world.http() as http:
        task_id = await _asking(world, http)
        config = TaskPushNotificationConfig(task_id=task_id, url=BAD)
        with pytest.raises(InvalidParamsError, match=r"could not be checked: .* RuntimeError"):
            await world.client(http, "JSONRPC").create_task_push_notification_config(config)
    assert await world.configs.get_info_for_dispatch(task_id) == []


class Hits:
    """A push receiver: every POST's path and headers; ``/push`` sets :attr:`pushed`."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, str]]] = []
        self.pushed = asyncio.Event()
        self.app = Starlette(routes=[Route("/{path:path}", self.take, methods=["POST"])])

    async def take(self, request: Request) -> Response:
        self.posts.append((request.url.path, dict(request.headers)))
        if request.url.path == "/push":
            self.pushed.set()
        return Response(status_code=200)


@pytest.mark.parametrize("shape", [*REFUSED, "check-fails"])
async def test_a_config_stored_around_the_handler_is_refused_by_the_push(shape: str) -> None:
    """The push sends by the rule configs are set by: one refused there is never posted
    to, and keeps none of the task's other configs from its push."""
    fields = {"url": BAD} if shape == "check-fails" else REFUSED[shape][0]
    check = failing_for_bad if shape == "check-fails" else public_or_receiver
    world = World([ask(), AIResponse(content="Blue it is.")])
    hits = Hits()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=hits.app))
    push = pushes(world, client=client, push_url_validator=check)
    async with Notifier(world.handler, [push], poll=0.05) as notifier:
        async with world.http() as http:
            task_id = await _asking(world, http)
        # The opening push went to no config: the task had none yet.
        await notifier.wait_idle()
        context = ServerCallContext()
        await world.configs.set_info(task_id, TaskPushNotificationConfig(**fields), context)
        kept = TaskPushNotificationConfig(id="kept", url=GOOD, token="task-token")
        await world.configs.set_info(task_id, kept, context)
        [request] = await world.handler.list_pending(room_id="ctx-1")
        await world.handler.aresolve(request.pending_id, "blue", by="alice", surface="desk")
        async with asyncio.timeout(10):
            await hits.pushed.wait()
    await client.aclose()
    assert [path for path, _ in hits.posts] == ["/push"]


async def test_an_accepted_config_is_pushed_with_its_token_and_authentication() -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    hits = Hits()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=hits.app))
    push = pushes(world, client=client)
    async with Notifier(world.handler, [push], poll=0.05) as notifier:
        async with world.http() as http:
            task_id = await _asking(world, http)
            await notifier.wait_idle()
            config = TaskPushNotificationConfig(
                task_id=task_id, id="hook-1", url=GOOD, token="task-token", authentication=BEARER
            )
            stored = await world.client(http, "JSONRPC").create_task_push_notification_config(
                config
            )
            assert stored.url == GOOD
            [request] = await world.handler.list_pending(room_id="ctx-1")
            await world.handler.aresolve(request.pending_id, "blue", by="alice", surface="desk")
        async with asyncio.timeout(10):
            await hits.pushed.wait()
    await client.aclose()
    [(_, headers)] = hits.posts
    assert headers["x-a2a-notification-token"] == "task-token"
    assert headers["authorization"] == "Bearer abc"
    assert headers["webhook-id"].endswith(".hook-1")


async def test_a_long_url_refused_is_quoted_cut_short() -> None:
    """A URL of 2,000 characters naming no public host: the refusal quotes 80 of them."""
    world = World([ask(), AIResponse(content="Blue it is.")])
    pushes(world, push_url_validator=validate_push_notification_url)
    async with world.http() as http:
        task_id = await _asking(world, http)
        url = f"http://127.0.0.1/{'a' * 2000}"
        config = TaskPushNotificationConfig(task_id=task_id, url=url)
        with pytest.raises(InvalidParamsError, match="names no public host") as refused:
            await world.client(http, "JSONRPC").create_task_push_notification_config(config)
    assert "aaa..." in str(refused.value.message)
    assert len(str(refused.value.message)) < 600, len(str(refused.value.message))


async def test_a_timeout_refused_is_quoted_cut_short() -> None:
    """A ``Decimal`` of a million digits below 0 (one compares with 0, as a number does)."""
    world = World([AIResponse(content="Blue it is.")])
    with pytest.raises(ValueError, match=r"takes seconds above 0, got Decimal\('-111") as refused:
        A2APush(
            world.tasks,
            world.configs,
            secret=SIGNING,
            timeout=Decimal("-" + "1" * 1_000_000),  # type: ignore[arg-type]
        )
    assert len(str(refused.value)) < 200
