"""What the tests of both phone surfaces share: one phone on each, and a tap on a button.

:func:`phone_surfaces` turns alice's phone on for Web Push (subscribed at the loopback push
service) and gives the ntfy surface her topic; :func:`tap` sends what the desk's service
worker sends for a button of a push: its body to its URL, with the link's token
(:func:`settled_by_tap`: and the request's status once the desk took it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from tests.push.ntfy_server import NtfyServer
from tests.push.push_service import PushService

from roomkit.models.pending_input import PendingInputStatus
from roomkit.notify import Ntfy, WebPush
from roomkit.notify.push_subscriptions import PushSubscriptions, subscription_of
from roomkit.tools.human_input import HumanInputHandler

DESK = "https://desk.example.com"
SUBJECT = "mailto:ops@example.com"
TOPIC = "approvals-{actor}-k3v9q"


def phone_surfaces(data_dir: Path, service: PushService, ntfy: NtfyServer) -> list[WebPush | Ntfy]:
    """Web Push to alice's one phone (subscribed in ``data_dir``), and ntfy to her topic."""
    phone = service.browser("phone")
    PushSubscriptions(data_dir).add("alice", subscription_of(phone.subscription()))
    return [
        WebPush(SUBJECT, data_dir=data_dir, push_hosts=[service.origin]),
        Ntfy(ntfy.url, TOPIC),
    ]


async def tap(app: Any, notification: dict[str, Any], action: str) -> httpx.Response:
    """The desk's answer to the button ``action`` of a pushed ``notification``, sent as the
    service worker sends it."""
    button = notification["data"]["answers"][action]
    token = notification["navigate"].split("#token=", 1)[1]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=DESK) as desk:
        return await desk.post(
            button["url"].removeprefix(DESK),
            json=button["body"],
            headers={"Authorization": f"Bearer {token}"},
        )


async def settled_by_tap(
    app: Any, handler: HumanInputHandler, notification: dict[str, Any], action: str
) -> PendingInputStatus | None:
    """The status of a pushed ``notification``'s request once the desk took the answer of
    its button ``action``."""
    tapped = await tap(app, notification, action)
    assert tapped.status_code == 200, tapped.text
    request = await handler.get_request(notification["tag"])
    return None if request is None else request.status
