"""Web Push through the notifier, on every store, to a loopback push service that checks the
VAPID signature and decrypts each message with the subscribing browser's keys."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from tests.push.phones import tap
from tests.push.push_service import Browser, PushService

from roomkit import RoomKit
from roomkit._extras import install_command
from roomkit.auth.tokens import token_claims
from roomkit.desk.app import create_desk_app
from roomkit.models.pending_input import PendingInput
from roomkit.notify import DeliveryError, Notice, Notifier, Retry
from roomkit.notify.push_subscriptions import (
    SUBSCRIPTIONS_FILE,
    VAPID_FILE,
    PushSubscriptions,
    load_or_create_vapid_key,
    subscription_of,
    vapid_public_key,
)
from roomkit.notify.webpush import MAX_MESSAGE_BYTES, WebPush, push_message
from roomkit.people import Delegation, Directory, Person
from roomkit.stores.outbox import outbox_for
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
DESK = "https://desk.example.com"
SUBJECT = "mailto:ops@example.com"


def subscribe(data_dir: Path, actor: str, subscription: dict[str, object]) -> None:
    PushSubscriptions(data_dir).add(actor, subscription_of(subscription))


def notifier_of(handler: HumanInputHandler, push: WebPush) -> Notifier:
    """A notifier that looks again every 50 ms: an ending whose question's delivery is still
    being recorded goes out at the next look."""
    return Notifier(handler, [push], desk_url=DESK, link_secret=SECRET, poll=0.05)


async def shown_on(handler: HumanInputHandler, pending_id: str) -> list[str | None]:
    return [e.get("actor") for e in await handler.history(pending_id) if e["type"] == "shown"]


async def test_a_question_reaches_every_device_signed_and_encrypted(
    make_handler: Callable[[], HumanInputHandler], tmp_path: Path
) -> None:
    """Each of alice's devices gets the question: VAPID-signed for the service's origin,
    encrypted to the device, tagged with the request's id, opening her answer link."""
    handler = make_handler()
    async with PushService() as service:
        phone, laptop = service.browser("phone"), service.browser("laptop")
        subscribe(tmp_path, "alice", phone.subscription())
        subscribe(tmp_path, "alice", laptop.subscription())
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        notifier = notifier_of(handler, push)
        async with notifier:
            request = await handler.create(
                "ask", {"question": "Ship it?"}, actor_id="alice", timeout=600
            )
            received = await service.wait_for(2)
            await notifier.wait_idle()
    assert service.refused == []
    assert {r.endpoint for r in received} == {phone.endpoint, laptop.endpoint}
    key = vapid_public_key(load_or_create_vapid_key(tmp_path))
    for push_ in received:
        assert push_.claims["sub"] == SUBJECT
        assert push_.claims["k"] == key == push.public_key
        assert push_.headers["urgency"] == "high"
        assert 60 <= int(push_.headers["ttl"]) <= 600
        assert len(push_.headers["topic"]) <= 32
        assert push_.message["web_push"] == 8030
        note = push_.message["notification"]
        assert (note["title"], note["body"], note["tag"]) == (
            "A question for you",
            "Ship it?",
            request.pending_id,
        )
        assert note["navigate"].startswith(f"{DESK}/#token=")
        claims = token_claims(SECRET, note["navigate"].split("#token=", 1)[1])
        assert (claims["sub"], claims["req"], claims["kind"]) == (
            "alice",
            request.pending_id,
            "answer",
        )
        assert "actions" not in note  # free text is answered in the page the link opens
    assert await shown_on(handler, request.pending_id) == ["alice"]
    assert notifier.statistics().delivered["webpush"] == 1


async def test_the_approve_button_answers_through_the_link_then_the_notice_is_replaced(
    tmp_path: Path,
) -> None:
    """An approval's Approve button sends what the service worker sends: the desk takes it
    with the link's token, once, and the question is replaced under the same tag."""
    handler = HumanInputHandler()
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    async with PushService() as service:
        phone = service.browser("phone")
        subscribe(tmp_path, "alice", phone.subscription())
        notifier = notifier_of(
            handler, WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        )
        async with notifier:
            request = await handler.create_approval(
                "refund", {"order": "A-17", "amount": 40}, approvers=["alice"]
            )
            [question] = await service.wait_for(1)
            note = question.message["notification"]
            assert [a["action"] for a in note["actions"]] == ["approve", "reject"]
            assert all(a["navigate"] == note["navigate"] for a in note["actions"])
            approve = note["data"]["answers"]["approve"]
            assert approve["body"] == {
                "decision": "approve",
                "digest": request.arguments_digest,
            }
            token = note["navigate"].split("#token=", 1)[1]
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=DESK) as desk:
                path = approve["url"].removeprefix(DESK)
                headers = {"Authorization": f"Bearer {token}"}
                first = await desk.post(path, json=approve["body"], headers=headers)
                again = await desk.post(path, json=approve["body"], headers=headers)
            assert first.status_code == 200
            assert again.status_code == 401  # the link was spent
            [_, settled] = await service.wait_for(2)
            await notifier.wait_idle()
    assert json.loads((await handler.get_request(request.pending_id)).result or "") == {  # type: ignore[union-attr]
        "decision": "approve"
    }
    replaced = settled.message["notification"]
    assert replaced["tag"] == request.pending_id
    assert replaced["title"] == "Approved by alice through an answer link"
    assert replaced["silent"] is True
    assert "actions" not in replaced
    assert settled.headers["urgency"] == "normal"
    assert settled.headers["topic"] == question.headers["topic"]


async def test_a_request_settled_elsewhere_replaces_the_notice_on_the_devices_told(
    make_handler: Callable[[], HumanInputHandler], tmp_path: Path
) -> None:
    """Answered in Slack: the phone that showed the question now reads who answered where;
    a device subscribed since, which never showed it, gets nothing."""
    handler = make_handler()
    async with PushService() as service:
        phone, tablet = service.browser("phone"), service.browser("tablet")
        subscribe(tmp_path, "alice", phone.subscription())
        notifier = notifier_of(
            handler, WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        )
        async with notifier:
            request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            await service.wait_for(1)
            await notifier.wait_idle()
            subscribe(tmp_path, "alice", tablet.subscription())
            assert await handler.aresolve(request.pending_id, "yes", by="alice", surface="slack")
            [_, settled] = await service.wait_for(2)
            await notifier.wait_idle()
    assert settled.endpoint == phone.endpoint
    note = settled.message["notification"]
    assert (note["tag"], note["title"], note["body"]) == (
        request.pending_id,
        "Answered by alice in Slack",
        "Ship it?",
    )
    assert note["navigate"] == DESK
    assert len(service.received) == 2


def tablet_failing(service: PushService, data_dir: Path) -> tuple[Browser, Browser, WebPush]:
    """Alice's phone and tablet subscribed on ``service``, the tablet's pushes answered 503,
    and a Web Push that retries within a few hundredths of a second."""
    phone, tablet = service.browser("phone"), service.browser("tablet")
    subscribe(data_dir, "alice", phone.subscription())
    subscribe(data_dir, "alice", tablet.subscription())
    service.status[tablet.endpoint] = 503
    retry = Retry(first=0.01, cap=0.05)
    push = WebPush(SUBJECT, data_dir=data_dir, push_hosts=[service.origin], retry=retry)
    return phone, tablet, push


async def test_a_question_shown_on_one_device_of_two_is_replaced_there_when_answered(
    make_handler: Callable[[], HumanInputHandler], tmp_path: Path
) -> None:
    """The tablet's push service keeps failing while the phone shows the question; it is
    answered meanwhile: the phone's notice is replaced by who answered, and the tablet,
    which never showed it, gets nothing."""
    handler = make_handler()
    async with PushService() as service:
        phone, _, push = tablet_failing(service, tmp_path)
        notifier = notifier_of(handler, push)
        async with notifier:
            request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            [question] = await service.wait_for(1)
            assert question.endpoint == phone.endpoint
            assert await handler.aresolve(request.pending_id, "yes", by="alice", surface="slack")
            [_, settled] = await service.wait_for(2)
            await notifier.wait_idle()
    assert settled.endpoint == phone.endpoint
    note = settled.message["notification"]
    assert (note["tag"], note["title"]) == (request.pending_id, "Answered by alice in Slack")
    assert [taken.endpoint for taken in service.received] == [phone.endpoint] * 2
    assert await shown_on(handler, request.pending_id) == ["alice"]


async def test_a_retry_pushes_only_to_the_devices_that_did_not_take_the_question(
    make_handler: Callable[[], HumanInputHandler], tmp_path: Path
) -> None:
    """The phone takes the question and the tablet's push service fails until it is let
    through: each retry goes to the tablet alone, and the phone is pushed the question once."""
    handler = make_handler()
    async with PushService() as service:
        phone, tablet, push = tablet_failing(service, tmp_path)
        async with notifier_of(handler, push) as notifier:
            request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            # The first attempt's two pushes, then at least one retry's.
            await service.wait_attempts(4)
            del service.status[tablet.endpoint]
            [_, taken] = await service.wait_for(2)
            await notifier.wait_idle()
    assert [r.endpoint for r in service.received] == [phone.endpoint, tablet.endpoint]
    assert taken.message["notification"]["tag"] == request.pending_id
    [delivery] = [
        item
        for item in await outbox_for(handler).items_for(request.pending_id)
        if item.body.get("surface") == "webpush"
    ]
    assert delivery.done
    assert delivery.receipt is not None
    assert sorted(delivery.receipt["endpoints"]) == sorted([phone.endpoint, tablet.endpoint])
    assert await shown_on(handler, request.pending_id) == ["alice"]


@pytest.mark.parametrize("gone", [404, 410])
async def test_a_subscription_the_service_reports_gone_is_dropped(
    make_handler: Callable[[], HumanInputHandler], tmp_path: Path, gone: int
) -> None:
    """The phone answers 404 or 410: its subscription is dropped; the laptop still gets the
    question, and the delivery counts as done."""
    handler = make_handler()
    async with PushService() as service:
        phone, laptop = service.browser("phone"), service.browser("laptop")
        subscribe(tmp_path, "alice", phone.subscription())
        subscribe(tmp_path, "alice", laptop.subscription())
        service.status[phone.endpoint] = gone
        notifier = notifier_of(
            handler, WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        )
        async with notifier:
            request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            [taken] = await service.wait_for(1)
            await notifier.wait_idle()
    assert taken.endpoint == laptop.endpoint
    assert [s.endpoint for s in PushSubscriptions(tmp_path).of("alice")] == [laptop.endpoint]
    assert notifier.statistics().delivered["webpush"] == 1
    assert notifier.statistics().failed["webpush"] == 0
    assert await shown_on(handler, request.pending_id) == ["alice"]


async def test_a_person_whose_every_device_is_gone_is_shown_nothing(tmp_path: Path) -> None:
    handler = HumanInputHandler()
    async with PushService() as service:
        phone = service.browser("phone")
        subscribe(tmp_path, "alice", phone.subscription())
        service.status[phone.endpoint] = 410
        notifier = notifier_of(
            handler, WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        )
        async with notifier:
            request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            await service.wait_attempts(1)
            await notifier.wait_idle()
    assert PushSubscriptions(tmp_path).of("alice") == []
    assert await shown_on(handler, request.pending_id) == []


async def ask(handler: HumanInputHandler) -> PendingInput:
    return await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")


def notice_for(request: PendingInput, *, desk_url: str | None = DESK) -> Notice:
    return Notice(
        type="question_pending",
        delivery_id="d1",
        request=request,
        recipient="alice",
        answer_url=None if desk_url is None else f"{desk_url}/#token=abc",
        desk_url=desk_url,
    )


@pytest.mark.parametrize(("status", "retry"), [(503, True), (429, True), (403, False)])
async def test_a_failing_push_service_is_retried_and_a_refusal_is_not(
    tmp_path: Path, status: int, retry: bool
) -> None:
    request = await ask(HumanInputHandler())
    async with PushService() as service:
        phone = service.browser("phone")
        subscribe(tmp_path, "alice", phone.subscription())
        service.status[phone.endpoint] = status
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        with pytest.raises(DeliveryError) as raised:
            await push.send(notice_for(request))
        await push.aclose()
    assert raised.value.retry is retry
    assert f"answered {status}" in str(raised.value)
    if status == 403:
        assert "VAPID" in str(raised.value)
    assert len(PushSubscriptions(tmp_path).of("alice")) == 1


async def test_a_notifier_without_a_desk_url_is_told_what_to_give() -> None:
    request = await ask(HumanInputHandler())
    with pytest.raises(DeliveryError, match="desk_url") as raised:
        push_message(notice_for(request, desk_url=None))
    assert raised.value.retry is False


def test_the_vapid_key_is_made_once_and_kept_private(tmp_path: Path) -> None:
    first = load_or_create_vapid_key(tmp_path)
    assert load_or_create_vapid_key(tmp_path) == first
    assert stat.S_IMODE((tmp_path / VAPID_FILE).stat().st_mode) == 0o600
    assert WebPush(SUBJECT, data_dir=tmp_path).public_key == vapid_public_key(first)


def test_a_broken_key_file_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / VAPID_FILE).write_text("not a key")
    with pytest.raises(ValueError, match="remove it to make a new one"):
        WebPush(SUBJECT, data_dir=tmp_path)


@pytest.mark.parametrize("subject", ["ops@example.com", "http://example.com", ""])
def test_a_subject_the_push_services_refuse_is_refused_here(tmp_path: Path, subject: str) -> None:
    with pytest.raises(ValueError, match="mailto:"):
        WebPush(subject, data_dir=tmp_path)


def test_without_the_push_extra_the_error_names_it() -> None:
    script = (
        "import sys\n"
        "sys.modules['pywebpush'] = None\n"
        "try:\n"
        "    import roomkit.notify.webpush\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == (
        "roomkit.notify.webpush needs the push extra (pywebpush is not installed): "
        f"{install_command('push')}"
    )


async def test_a_push_the_service_failed_is_retried_through_the_outbox(tmp_path: Path) -> None:
    """A 503, then the service is back: the outbox sends the question again, once more."""
    handler = HumanInputHandler()
    async with PushService() as service:
        phone = service.browser("phone")
        subscribe(tmp_path, "alice", phone.subscription())
        service.status[phone.endpoint] = 503
        push = WebPush(
            SUBJECT,
            data_dir=tmp_path,
            push_hosts=[service.origin],
            retry=Retry(first=0.01, cap=0.05),
        )
        notifier = notifier_of(handler, push)
        async with notifier:
            request = await ask(handler)
            await service.wait_attempts(1)
            del service.status[phone.endpoint]
            [taken] = await service.wait_for(1)
            await notifier.wait_idle()
    assert taken.message["notification"]["tag"] == request.pending_id
    assert notifier.statistics().failed["webpush"] == 1
    assert notifier.statistics().delivered["webpush"] == 1
    assert await shown_on(handler, request.pending_id) == ["alice"]


async def test_a_subscription_edited_in_to_a_host_off_the_list_is_never_posted_to(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    request = await ask(HumanInputHandler())
    async with PushService() as service:
        phone = service.browser("phone")
        subscribe(tmp_path, "alice", phone.subscription())
        # The same service under a name the list does not hold: an internal one, to the
        # notifier's eyes. The file is edited by hand, past the desk's own check.
        path = tmp_path / SUBSCRIPTIONS_FILE
        document = json.loads(path.read_text(encoding="utf-8"))
        internal = phone.endpoint.replace("127.0.0.1", "localhost") + "-internal"
        document["people"]["alice"].append({**phone.subscription(), "endpoint": internal})
        path.write_text(json.dumps(document), encoding="utf-8")
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        receipt = await push.send(notice_for(request))
        await push.aclose()
        assert service.attempts == 1
    assert receipt == {"endpoints": [phone.endpoint]}
    assert "'localhost' is not a known push service" in caplog.text
    assert "push_hosts" in caplog.text


async def test_by_default_only_the_browsers_push_services_are_pushed_to(tmp_path: Path) -> None:
    request = await ask(HumanInputHandler())
    async with PushService() as service:
        subscribe(tmp_path, "alice", service.browser("phone").subscription())
        push = WebPush(SUBJECT, data_dir=tmp_path)
        receipt = await push.send(notice_for(request))
        await push.aclose()
        assert service.attempts == 0
    assert receipt == {"skipped": "no push subscription"}


@pytest.mark.parametrize(
    ("hosts", "problem"),
    [
        ("127.0.0.1", TypeError),
        (["https://push.example.com"], ValueError),
        (["a:1"], ValueError),
        (["http://push.example.com/push"], ValueError),
        (["http://*.example.com:8080"], ValueError),
        (["http://user@localhost:8080"], ValueError),
        (["http://localhost:99999"], ValueError),
        (["http://localhost:0"], ValueError),
    ],
)
def test_push_hosts_that_are_no_host_names_are_refused(
    tmp_path: Path, hosts: object, problem: type[Exception]
) -> None:
    with pytest.raises(problem, match="push_hosts"):
        WebPush(SUBJECT, data_dir=tmp_path, push_hosts=hosts)  # type: ignore[arg-type]


def test_without_a_data_dir_the_desk_s_variable_names_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_DESK_DATA", str(tmp_path))
    push = WebPush(SUBJECT)
    assert (tmp_path / VAPID_FILE).is_file()
    assert push.public_key == vapid_public_key(load_or_create_vapid_key(tmp_path))
    assert push.subscriptions.path == tmp_path / SUBSCRIPTIONS_FILE


async def test_a_huge_question_still_fits_in_one_push(tmp_path: Path) -> None:
    """A 50,000-character question: the push carries its start, within what a push
    service takes, and the device decrypts it."""
    handler = HumanInputHandler()
    async with PushService() as service:
        phone = service.browser("phone")
        subscribe(tmp_path, "alice", phone.subscription())
        notifier = notifier_of(
            handler, WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        )
        async with notifier:
            question = "Ship it? " + "x" * 50_000
            await handler.create("ask", {"question": question}, actor_id="alice")
            [taken] = await service.wait_for(1)
            await notifier.wait_idle()
    note = taken.message["notification"]
    assert note["body"].startswith("Ship it? xxx")
    assert len(json.dumps(taken.message).encode()) <= MAX_MESSAGE_BYTES
    assert service.refused == []


async def test_the_delegate_s_phone_gets_the_question_and_answers_it_for_the_approver(
    tmp_path: Path,
) -> None:
    """Alice is away: Carol's phone is pushed the approval, its Approve button answers
    through Carol's link, and the decision is recorded as hers on Alice's behalf."""
    away = Delegation(
        to="carol",
        starts=datetime(2026, 1, 1, tzinfo=UTC),
        ends=datetime(2126, 1, 1, tzinfo=UTC),
    )
    handler = HumanInputHandler(directory=Directory({"alice": Person(delegations=[away])}))
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    async with PushService() as service:
        alices, carols = service.browser("alice-phone"), service.browser("carol-phone")
        subscribe(tmp_path, "alice", alices.subscription())
        subscribe(tmp_path, "carol", carols.subscription())
        notifier = notifier_of(
            handler, WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        )
        async with notifier:
            request = await handler.create_approval("refund", {"amount": 40}, approvers=["alice"])
            [question] = await service.wait_for(1)
            note = question.message["notification"]
            token = note["navigate"].split("#token=", 1)[1]
            assert token_claims(SECRET, token)["sub"] == "carol"
            tapped = await tap(app, note, "approve")
            assert tapped.status_code == 200, tapped.text
            [_, settled] = await service.wait_for(2)
            await notifier.wait_idle()
    assert question.endpoint == settled.endpoint == carols.endpoint
    assert settled.message["notification"]["tag"] == request.pending_id
    decided = [e for e in await handler.history(request.pending_id) if e["type"] == "decided"]
    assert (decided[0]["actor"], decided[0]["on_behalf_of"]) == ("carol", "alice")


async def test_a_push_service_s_redirect_is_not_followed(tmp_path: Path) -> None:
    """A listed push service answering 307 to another host: the signed, encrypted message
    never reaches that host, and the delivery is refused without a retry."""
    internal: list[str] = []

    async def secret(request: web.Request) -> web.Response:
        internal.append(request.path)
        return web.Response(status=201)

    async def redirecting(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(f"http://localhost:{ports['internal']}/secret")

    ports: dict[str, int] = {}
    runners = []
    for name, route, handle in (("internal", "/secret", secret), ("push", "/push/p", redirecting)):
        app = web.Application()
        app.router.add_post(route, handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports[name] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        runners.append(runner)
    try:
        subscription = Browser(f"http://127.0.0.1:{ports['push']}/push/p").subscription()
        subscribe(tmp_path, "alice", subscription)
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[f"http://127.0.0.1:{ports['push']}"])
        with pytest.raises(DeliveryError, match=r"redirect to .*not followed") as raised:
            await push.send(notice_for(await ask(HumanInputHandler())))
        await push.aclose()
    finally:
        for runner in runners:
            await runner.cleanup()
    assert internal == []
    assert raised.value.retry is False
