"""The push offer on the desk page across a sign-out and a sign-in again without a reload
(see :mod:`tests.push.push_page`): what one person's sign-in offered goes with them."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, Route, WebSocketRoute, expect
from tests.push.push_page import SECRET, Served, subscribing_page

from roomkit.auth import issue_token

SUBSCRIPTIONS = "**/api/push/subscriptions"
UNREACHABLE = "Notifications to this device could not be turned on: The desk cannot be reached."

# Counts the page's asks for permission to notify (made at once on a click of its button).
COUNT_ASKS = """
(function () {
  var ask = Notification.requestPermission.bind(Notification);
  window.__asked = 0;
  Notification.requestPermission = function () {
    window.__asked += 1;
    return ask();
  };
})();
"""


def live_links(page: Page) -> list[WebSocketRoute]:
    """The page's WebSockets to the desk, passed through, the last opened last."""
    sockets: list[WebSocketRoute] = []

    def through(ws: WebSocketRoute) -> None:
        ws.connect_to_server()
        sockets.append(ws)

    page.route_web_socket("**/api/ws", through)
    return sockets


def refuse_the_token(page: Page, sockets: list[WebSocketRoute]) -> None:
    """The desk refuses the page's token: its live link drops, and the desk answers the
    page's next call (``GET api/me``) with a 401, which signs the page out."""
    expect(page.locator("#link-state")).to_have_attribute("data-state", "live")
    me = "**/api/me"
    page.route(me, lambda route: route.fulfill(status=401, json={"detail": "Invalid token"}))
    sockets[-1].close()
    expect(page.locator("#signin-error")).to_have_text(
        "The desk refused your token: open a fresh link."
    )
    page.unroute(me)


def offered_but_unreachable(served: Served, browser: Browser) -> tuple[Page, list[WebSocketRoute]]:
    """A page signed in as alice, notifications allowed, whose subscription never reaches
    the desk: it says so, and offers its button to try again."""
    context, page = subscribing_page(
        served, browser, served.service.browser("phone").subscription()
    )
    context.add_init_script(COUNT_ASKS)
    page.route(SUBSCRIPTIONS, lambda route: route.abort("internetdisconnected"))
    sockets = live_links(page)
    page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
    expect(page.locator("#push-error")).to_have_text(UNREACHABLE)
    expect(page.get_by_role("button", name="Notify me on this device")).to_be_visible()
    return page, sockets


def test_signing_out_takes_the_push_offer_and_its_message_away(
    served: Served, browser: Browser
) -> None:
    """The sign-in screen shows neither "Notify me on this device" nor what the page said
    of the signed-out person's last try."""
    page, sockets = offered_but_unreachable(served, browser)
    try:
        refuse_the_token(page, sockets)
        expect(page.locator("#signin")).to_be_visible()
        expect(page.locator("#push-me")).to_be_hidden()
        expect(page.locator("#push-error")).to_be_hidden()
    finally:
        page.context.close()


def test_a_sign_in_without_the_desks_key_offers_no_push(served: Served, browser: Browser) -> None:
    """Signed in again, ``GET api/push/key`` fails: the button stays hidden, and holds nothing
    of the last sign-in (its key, its handler): a click on it does not even ask for
    permission."""
    page, sockets = offered_but_unreachable(served, browser)
    button = page.locator("#push-me")
    try:
        refuse_the_token(page, sockets)
        page.route("**/api/push/key", lambda route: route.abort("internetdisconnected"))
        page.get_by_label("Token").fill(issue_token(SECRET, "alice"))
        with page.expect_event("requestfailed", lambda r: r.url.endswith("/api/push/key")):
            page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#desk")).to_be_visible()
        expect(button).to_be_hidden()
        expect(page.locator("#push-error")).to_be_hidden()
        button.dispatch_event("click")
        assert page.evaluate("window.__asked") == 0
    finally:
        page.context.close()


def test_an_answer_that_comes_after_a_sign_out_offers_nothing(
    served: Served, browser: Browser
) -> None:
    """The subscription the page gave before the person signed out fails once they are out:
    the sign-in screen shows neither the button nor what the page would have said."""
    context, page = subscribing_page(
        served, browser, served.service.browser("phone").subscription()
    )
    held: list[Route] = []
    page.route(SUBSCRIPTIONS, lambda route: held.append(route))
    sockets = live_links(page)
    try:
        with page.expect_request(lambda request: request.url.endswith("/api/push/subscriptions")):
            page.goto(f"{served.url}/#token={issue_token(SECRET, 'alice')}")
        refuse_the_token(page, sockets)
        with page.expect_event(
            "requestfailed", lambda r: r.url.endswith("/api/push/subscriptions")
        ):
            held[0].abort("internetdisconnected")
        # A round trip through the page: what it does with the failure has run by then.
        page.evaluate("new Promise(function (done) { setTimeout(done); })")
        expect(page.locator("#signin")).to_be_visible()
        expect(page.locator("#push-me")).to_be_hidden()
        expect(page.locator("#push-error")).to_be_hidden()
    finally:
        context.close()
