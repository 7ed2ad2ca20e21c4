"""A small Slack Web API on loopback, for the real ``slack_sdk`` client to talk to.

It serves ``conversations.open``, ``chat.postMessage`` and ``chat.update`` under ``/api/``
the way Slack answers them (``{"ok": false, "error": ...}`` with HTTP 200 for a refusal,
429 with ``Retry-After`` when rate limited), keeps the messages posted, and records every
call. ``/response/<id>`` stands in for an interaction's ``response_url``. A test scripts a
failure with :meth:`SlackAPI.fail_next`. The fixtures ``slack_api`` and ``slack`` (a real
``Slack`` surface on the fake) are in :mod:`tests.servers.plugin`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

TOKEN = "xoxb-test-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@dataclass
class Call:
    """One Web API call as it reached the server."""

    method: str
    payload: dict[str, Any]
    authorization: str | None


@dataclass
class Message:
    """A message as the server keeps it (updated in place by ``chat.update``)."""

    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    updates: int = 0


@dataclass
class SlackAPI:
    """The fake Web API; :attr:`base_url` is what ``Slack(base_url=...)`` takes."""

    users: set[str] = field(default_factory=lambda: {"U0ALICE", "U0BOB"})
    channels: set[str] = field(default_factory=lambda: {"C0TEAM"})
    """Channels the bot is in."""
    outside: set[str] = field(default_factory=lambda: {"C0OTHER"})
    """Channels that exist but the bot is not in."""
    revoked: bool = False
    calls: list[Call] = field(default_factory=list)
    messages: dict[tuple[str, str], Message] = field(default_factory=dict)
    responses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """What was posted to each ``/response/<id>``, in order."""
    _failures: dict[str, list[tuple[int, Any, dict[str, str]]]] = field(default_factory=dict)
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _runner: web.AppRunner | None = None
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    base_url: str = ""
    url: str = ""

    def fail_next(
        self, method: str, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        """Answer the next call of ``method`` with ``status`` and ``body`` (JSON, or text)."""
        self._failures.setdefault(method, []).append((status, body, headers or {}))

    def posted(self, method: str = "chat.postMessage") -> list[dict[str, Any]]:
        """The payloads of the calls of ``method``, in order."""
        return [call.payload for call in self.calls if call.method == method]

    async def wait_until(self, check: Callable[[], bool]) -> None:
        """Wait until ``check()`` holds, looked at again after each call the server takes."""
        async with self._changed:
            await self._changed.wait_for(check)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_post("/response/{id}", self._response)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        site = web.SockSite(self._runner, sock)
        await site.start()
        port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.url}/api/"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _payload(self, request: web.Request) -> dict[str, Any]:
        payload: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            payload.update(await request.json())
        else:
            payload.update(await request.post())
        return payload

    async def _response(self, request: web.Request) -> web.Response:
        self.responses.append((request.match_info["id"], await request.json()))
        await self._tell()
        return web.Response(text="ok")

    async def _tell(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _api(self, request: web.Request) -> web.Response:
        try:
            return await self._answer(request)
        finally:
            await self._tell()

    async def _answer(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        payload = await self._payload(request)
        self.calls.append(Call(method, payload, request.headers.get("Authorization")))
        scripted = self._failures.get(method)
        if scripted:
            status, body, headers = scripted.pop(0)
            if isinstance(body, str):
                return web.Response(
                    status=status, text=body, content_type="text/html", headers=headers
                )
            return web.json_response(body, status=status, headers=headers)
        if self.revoked:
            return _refuse("token_revoked")
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _refuse("invalid_auth")
        handle = {
            "conversations.open": self._open,
            "chat.postMessage": self._post,
            "chat.update": self._update,
        }.get(method)
        if handle is None:
            return _refuse("unknown_method")
        return handle(payload)

    def _open(self, payload: dict[str, Any]) -> web.Response:
        user = str(payload.get("users", ""))
        if user not in self.users:
            return _refuse("user_not_found")
        channel = f"D{user}"
        self.channels.add(channel)
        return web.json_response({"ok": True, "channel": {"id": channel}})

    def _post(self, payload: dict[str, Any]) -> web.Response:
        channel = str(payload.get("channel", ""))
        if channel in self.outside:
            return _refuse("not_in_channel")
        if channel not in self.channels:
            return _refuse("channel_not_found")
        ts = f"1700000000.{next(self._ts):06d}"
        blocks = _blocks(payload.get("blocks"))
        self.messages[(channel, ts)] = Message(channel, ts, str(payload.get("text")), blocks)
        return web.json_response({"ok": True, "channel": channel, "ts": ts})

    def _update(self, payload: dict[str, Any]) -> web.Response:
        key = (str(payload.get("channel", "")), str(payload.get("ts", "")))
        message = self.messages.get(key)
        if message is None:
            return _refuse("message_not_found")
        message.text = str(payload.get("text"))
        message.blocks = _blocks(payload.get("blocks"))
        message.updates += 1
        return web.json_response({"ok": True, "channel": key[0], "ts": key[1]})


def _blocks(value: Any) -> list[dict[str, Any]]:
    blocks = json.loads(value) if isinstance(value, str) else value
    return list(blocks or [])


def _refuse(error: str) -> web.Response:
    return web.json_response({"ok": False, "error": error})
