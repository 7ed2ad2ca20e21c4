"""The desk page in headless Chromium: its service worker, the push subscription it gives the
desk, and the worker's push and notificationclick handlers answering through the link.

Headless Chromium has no push service to subscribe with (a browser context is off the
record, where Chrome refuses the Push API, and a persistent one waits for Google's push
service, which the tests cannot reach). So the page's ``PushManager.subscribe`` is replaced
by one that hands back a subscription of the loopback push service's; everything else is
real: the page posts it to the desk, the notifier pushes to it (VAPID-signed, encrypted), and
the message the push service decrypted is dispatched to the page's worker as a ``PushEvent``.
A synthetic ``notificationclick`` may fetch but not open a window (Chromium refuses
``clients.openWindow`` to an event the browser did not send), so the Approve button is
tested, and the plain tap's ``openWindow`` is not.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    Request,
    Response,
    Route,
    expect,
    sync_playwright,
)
from tests.push.push_service import PushService
from tests.servers.threaded_app import ThreadedApp

from roomkit import RoomKit
from roomkit.auth import issue_token
from roomkit.desk.app import create_desk_app
from roomkit.notify import Notifier, WebPush
from roomkit.notify.push_subscriptions import PushSubscriptions, subscription_of
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
SUBJECT = "mailto:ops@example.com"

# Stands in for the browser's push service: subscribe() hands back the loopback service's
# subscription, and keeps the key the page subscribed with.
FAKE_SUBSCRIBE = """
(function (subscription) {
  var current = null;
  PushManager.prototype.getSubscription = function () { return Promise.resolve(current); };
  PushManager.prototype.subscribe = function (options) {
    var key = new Uint8Array(options.applicationServerKey);
    window.__subscribedWith = btoa(String.fromCharCode.apply(null, key))
      .replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    current = { toJSON: function () { return subscription; } };
    return Promise.resolve(current);
  };
})(%s);
"""


def subscribing_page(
    served: Served, browser: Browser, subscription: dict[str, Any]
) -> tuple[BrowserContext, Page]:
    """A page in a context of its own, notifications allowed, whose browser subscribes with
    ``subscription``."""
    context = browser.new_context()
    context.grant_permissions(["notifications"], origin=served.url)
    context.add_init_script(FAKE_SUBSCRIBE % json.dumps(subscription))
    return context, context.new_page()


# Dispatches a push message to the worker and resolves with the notification it showed.
PUSH = """async (data) => {
  const shown = new Promise((resolve) => {
    const show = self.registration.showNotification.bind(self.registration);
    self.registration.showNotification = (title, options) =>
      show(title, options).then(() => resolve({ title, tag: options.tag, body: options.body }));
  });
  self.dispatchEvent(new PushEvent('push', { data }));
  const note = await shown;
  const [n] = await self.registration.getNotifications({ tag: note.tag });
  return { ...note, actions: n.actions.map((a) => a.action), navigate: n.data.navigate };
}"""

# Taps a notification's button and resolves with the notification that replaced it.
TAP = """async ([tag, action]) => {
  const [n] = await self.registration.getNotifications({ tag });
  const replaced = new Promise((resolve) => {
    const show = self.registration.showNotification.bind(self.registration);
    self.registration.showNotification = (title, options) =>
      show(title, options).then(() => resolve({ title, tag: options.tag }));
  });
  self.dispatchEvent(new NotificationEvent('notificationclick', { notification: n, action }));
  return await replaced;
}"""


class Served(ThreadedApp):
    """The desk, its handler, a notifier and a loopback push service, on a loop of their own
    in a thread; the desk on ``127.0.0.1:<free port>``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.service = PushService()
        super().__init__(self.build)

    async def build(self, url: str) -> tuple[FastAPI, HumanInputHandler]:
        handler = HumanInputHandler()
        await self.service.__aenter__()
        self.cleanups.append(self.service.__aexit__)
        app = create_desk_app(
            RoomKit(),
            handler=handler,
            secret=SECRET,
            data_dir=self.data_dir,
            push_hosts=[self.service.origin],
        )
        self.notifier = Notifier(
            handler,
            [WebPush(SUBJECT, data_dir=self.data_dir, push_hosts=[self.service.origin])],
            desk_url=url,
            link_secret=SECRET,
        )
        await self.notifier.__aenter__()
        self.cleanups.append(self.notifier.aclose)
        return app, handler


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path)
    yield server
    server.close()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed (apt-get install chromium)", pytrace=False)
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    launched = playwright.chromium.launch(executable_path=path, args=args, headless=True)
    yield launched
    launched.close()


def test_a_question_pushed_to_the_page_is_approved_from_its_notification(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    phone = served.service.browser("phone")
    context, page = subscribing_page(served, browser, phone.subscription())
    try:
        # The page registers its worker and, notifications being allowed, subscribes and
        # gives the desk the subscription.
        with page.expect_response(lambda r: r.url.endswith("/api/push/subscriptions")) as sent:
            page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
        assert sent.value.status == 200
        assert page.evaluate("navigator.serviceWorker.ready.then(r => r.scope)") == served.url + "/"
        key = page.evaluate("window.__subscribedWith")
        assert key == served.notifier.surfaces["webpush"].public_key  # type: ignore[attr-defined]
        [kept] = PushSubscriptions(tmp_path).of("alice")
        assert kept.endpoint == phone.endpoint

        request = served.run(
            served.handler.create_approval("refund", {"order": "A-17"}, approvers=["alice"])
        )
        [pushed] = served.run(served.service.wait_for(1))
        [worker] = context.service_workers
        shown = worker.evaluate(PUSH, json.dumps(pushed.message))
        assert shown["title"] == "Approval needed: refund"
        assert shown["tag"] == request.pending_id
        assert shown["actions"] == ["approve", "reject"]
        assert shown["navigate"].startswith(f"{served.url}/#token=")

        replaced = worker.evaluate(TAP, [request.pending_id, "approve"])
        assert replaced == {"title": "Approved", "tag": request.pending_id}
        decided = served.run(served.handler.wait(request.pending_id))
        assert json.loads(decided) == {"decision": "approve"}
        [_, settled] = served.run(served.service.wait_for(2))
        note = settled.message["notification"]
        assert (note["tag"], note["title"]) == (
            request.pending_id,
            "Approved by alice through an answer link",
        )
    finally:
        context.close()


def test_the_worker_and_the_page_turn_no_text_into_markup() -> None:
    static = Path(__file__).parents[2] / "src" / "roomkit" / "desk" / "static"
    for name in ("sw.js", "push.js"):
        script = (static / name).read_text(encoding="utf-8")
        assert not [
            sink
            for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "new Function")
            if sink in script
        ], name


# A browser subscribed already (``existing``) that hands out ``fresh`` once unsubscribed.
SUBSCRIBED_BEFORE = """
(function ([existing, fresh]) {
  var current = null;
  function held(json) {
    var subscription = { toJSON: function () { return json; } };
    subscription.unsubscribe = function () {
      if (current === subscription) current = null;
      return Promise.resolve(true);
    };
    return subscription;
  }
  current = held(existing);
  PushManager.prototype.getSubscription = function () { return Promise.resolve(current); };
  PushManager.prototype.subscribe = function () {
    current = current || held(fresh);
    return Promise.resolve(current);
  };
})(%s);
"""


def test_a_browser_subscribed_for_another_person_subscribes_anew_for_this_one(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    """The desk keeps the endpoint another person gave it (409): the page gets a new one."""
    phone = served.service.browser("phone").subscription()
    bob_keys = served.service.browser("bobs-phone").subscription()["keys"]
    fresh = served.service.browser("phone-again").subscription()
    kept = PushSubscriptions(tmp_path)
    assert kept.add("bob", subscription_of({"endpoint": phone["endpoint"], "keys": bob_keys}))
    context = browser.new_context()
    context.grant_permissions(["notifications"], origin=served.url)
    context.add_init_script(SUBSCRIBED_BEFORE % json.dumps([phone, fresh]))
    page = context.new_page()

    def kept_for_alice(response: Response) -> bool:
        return response.url.endswith("/api/push/subscriptions") and response.status == 200

    try:
        with page.expect_response(kept_for_alice, timeout=10_000):
            page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
        assert [s.endpoint for s in kept.of("alice")] == [fresh["endpoint"]]
        assert [s.endpoint for s in kept.of("bob")] == [phone["endpoint"]]
    finally:
        context.close()


def test_a_subscription_the_desk_refuses_is_said_on_the_page(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    """Notifications allowed already, the desk refuses the browser's subscription (its push
    service is not one the desk pushes to): the page says why, as text, and offers to try
    again."""
    elsewhere = served.service.browser("phone").subscription()
    elsewhere["endpoint"] = "https://push.example.net<b>/send/phone"
    context, page = subscribing_page(served, browser, elsewhere)
    try:
        with page.expect_response(lambda r: r.url.endswith("/api/push/subscriptions")) as sent:
            page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
        assert sent.value.status == 400
        reason = sent.value.json()["detail"]
        assert "'push.example.net<b>' is not a known push service" in reason
        said = page.locator("#push-error")
        expect(said).to_have_text(f"Notifications to this device could not be turned on: {reason}")
        expect(said.locator("*")).to_have_count(0)
        expect(said).to_have_attribute("role", "alert")
        expect(page.get_by_role("button", name="Notify me on this device")).to_be_visible()
        assert PushSubscriptions(tmp_path).of("alice") == []
    finally:
        context.close()


def test_a_subscription_lost_on_the_way_is_said_and_tried_again(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    """The subscription never reaches the desk (the request fails in the browser): the page
    says the desk cannot be reached, and its button gives the subscription again."""
    phone = served.service.browser("phone")
    context, page = subscribing_page(served, browser, phone.subscription())
    subscriptions = "**/api/push/subscriptions"
    page.route(subscriptions, lambda route: route.abort("internetdisconnected"))
    try:
        page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
        said = page.locator("#push-error")
        expect(said).to_have_text(
            "Notifications to this device could not be turned on: The desk cannot be reached."
        )
        page.unroute(subscriptions)
        button = page.get_by_role("button", name="Notify me on this device")
        with page.expect_response(lambda r: r.url.endswith("/api/push/subscriptions")) as sent:
            button.click()
        assert sent.value.status == 200
        expect(said).to_be_hidden()
        expect(button).to_be_hidden()
        assert [kept.endpoint for kept in PushSubscriptions(tmp_path).of("alice")] == [
            phone.endpoint
        ]
    finally:
        context.close()


def test_a_click_subscribes_once_however_often_the_page_started(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    """Signed out (the desk refused the token) and signed in again without a reload, the
    page gives the subscription once per click of its button, not once per sign-in."""
    phone = served.service.browser("phone")
    context, page = subscribing_page(served, browser, phone.subscription())
    subscriptions = "**/api/push/subscriptions"
    answers = iter(["refused"])

    def desk_unreachable(route: Route) -> None:
        # The first subscription given is answered as a desk refusing the token (401: the
        # page signs out); the next never reaches the desk (the button stays to try again).
        if next(answers, None) == "refused":
            route.fulfill(status=401, json={"detail": "Invalid token"})
        else:
            route.abort("internetdisconnected")

    page.route(subscriptions, desk_unreachable)

    def given(request: Request) -> bool:
        return request.url.endswith("/api/push/subscriptions")

    try:
        page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
        expect(page.locator("#signin-error")).to_have_text(
            "The desk refused your token: open a fresh link."
        )
        page.get_by_label("Token").fill(issue_token(SECRET, "alice"))
        # Signed in again, the page gives the subscription again (and the desk is not
        # reached): the button stays to try again.
        with page.expect_event("requestfailed", given):
            page.get_by_role("button", name="Sign in").click()
        page.unroute(subscriptions)
        sent: list[Request] = []
        page.on("request", lambda request: sent.append(request) if given(request) else None)
        button = page.get_by_role("button", name="Notify me on this device")
        with page.expect_response(lambda r: given(r.request)) as answered:
            button.click()
        assert answered.value.status == 200
        expect(button).to_be_hidden()
        expect(page.locator("#push-error")).to_be_hidden()
        assert len(sent) == 1
        assert [kept.endpoint for kept in PushSubscriptions(tmp_path).of("alice")] == [
            phone.endpoint
        ]
    finally:
        context.close()


BROWSER_REFUSED = (
    "Notifications to this device could not be turned on: this browser could not subscribe "
    "to its push service (a private window cannot)."
)


def test_a_subscription_the_browser_refuses_is_said_and_offered_again(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    """The browser's own ``PushManager.subscribe()`` fails (Chromium has no push service in
    a private window, which a Playwright context is): after a tap, and on a visit with
    notifications allowed already, the page says so and offers to try again."""
    context = browser.new_context()
    page = context.new_page()
    button = page.get_by_role("button", name="Notify me on this device")
    said = page.locator("#push-error")
    try:
        page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
        expect(button).to_be_visible()
        context.grant_permissions(["notifications"], origin=served.url)
        button.click()
        expect(said).to_have_text(BROWSER_REFUSED)
        expect(button).to_be_visible()
        page.reload()
        expect(said).to_have_text(BROWSER_REFUSED)
        expect(button).to_be_visible()
        assert PushSubscriptions(tmp_path).of("alice") == []
    finally:
        context.close()
