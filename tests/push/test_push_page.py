"""The desk page in headless Chromium (see :mod:`tests.push.push_page`): its service worker,
the push subscription it gives the desk, and the worker's push and notificationclick handlers
answering through the link.

A synthetic ``notificationclick`` may fetch but not open a window (Chromium refuses
``clients.openWindow`` to an event the browser did not send), so the Approve button is
tested, and the plain tap's ``openWindow`` is not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Request, Response, Route, expect
from tests.push.push_page import SECRET, Served, subscribing_page

from roomkit.auth import issue_token
from roomkit.notify.push_subscriptions import PushSubscriptions, subscription_of

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


SERVICE_REFUSED = (
    "Notifications to this device could not be turned on: this desk does not accept this "
    "device's push service; ask whoever runs the desk to allow it."
)


def test_a_subscription_the_desk_refuses_is_said_on_the_page(
    served: Served, browser: Browser, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Notifications allowed already, the desk refuses the browser's subscription (its push
    service is not one the desk pushes to): the page says so, as text, in words the person
    can act on, and offers to try again; the desk's reason, which names its option, is in its
    answer and its log, for whoever runs it."""
    elsewhere = served.service.browser("phone").subscription()
    elsewhere["endpoint"] = "https://push.example.net<b>/send/phone"
    context, page = subscribing_page(served, browser, elsewhere)
    try:
        with page.expect_response(lambda r: r.url.endswith("/api/push/subscriptions")) as sent:
            page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
        assert sent.value.status == 400
        reason = sent.value.json()["detail"]
        assert "'push.example.net<b>' is not a known push service" in reason
        assert "push_hosts" in reason
        [logged] = [r.getMessage() for r in caplog.records if reason in r.getMessage()]
        assert "alice" in logged
        said = page.locator("#push-error")
        expect(said).to_have_text(SERVICE_REFUSED)
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
