"""A question's push lives no longer than the answer link in it, and a link past its time
says so to the person who taps it."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from tests.push.push_service import PushService

from roomkit import RoomKit
from roomkit.auth import issue_answer_link, issue_token
from roomkit.auth.tokens import token_claims
from roomkit.desk.app import create_desk_app
from roomkit.notify import Notifier
from roomkit.notify.links import NO_DEADLINE_TTL
from roomkit.notify.push_subscriptions import PushSubscriptions, subscription_of
from roomkit.notify.webpush import WebPush
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
DESK = "https://desk.example.com"
TWO_DAYS_AGO = time.time() - 2 * 86_400


async def test_a_question_without_a_deadline_is_kept_only_while_its_link_answers(
    tmp_path: Path,
) -> None:
    handler = HumanInputHandler()
    async with PushService() as service:
        phone = service.browser("phone")
        PushSubscriptions(tmp_path).add("alice", subscription_of(phone.subscription()))
        push = WebPush("mailto:ops@example.com", data_dir=tmp_path, push_hosts=[service.origin])
        notifier = Notifier(handler, [push], desk_url=DESK, link_secret=SECRET)
        async with notifier:
            await handler.create_approval("refund", {"order": "A-17"}, approvers=["alice"])
            [question] = await service.wait_for(1)
            await notifier.wait_idle()
    ttl = int(question.headers["ttl"])
    token = question.message["notification"]["navigate"].split("#token=", 1)[1]
    claims = token_claims(SECRET, token)
    assert ttl == NO_DEADLINE_TTL == pytest.approx(claims["exp"] - claims["iat"], abs=1)


async def test_an_expired_answer_link_says_so_and_where_to_answer() -> None:
    handler = HumanInputHandler()
    request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    link = issue_answer_link(SECRET, request.pending_id, "alice", 60, now=TWO_DAYS_AGO)
    token = issue_token(SECRET, "alice", ttl=60, now=TWO_DAYS_AGO)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as desk:
        tapped = await desk.get("/api/link", headers={"Authorization": f"Bearer {link}"})
        old = await desk.get("/api/requests", headers={"Authorization": f"Bearer {token}"})
    assert tapped.status_code == 401
    assert tapped.json()["detail"] == (
        "This answer link has expired: sign in to the desk to answer the question there"
    )
    assert old.status_code == 401
    assert "roomkit token" in old.json()["detail"]
