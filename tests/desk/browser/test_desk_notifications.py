"""The desk page tells the person of a new question while its tab is in the background.

Chromium is given the ``notifications`` permission; the page is made hidden by overriding
``document.hidden`` and ``document.visibilityState`` before its scripts run; and
``window.Notification`` is wrapped by a spy that records each notification shown and closed
(the real constructor still runs).
"""

from __future__ import annotations

from typing import Any

import httpx
from desk_page import OpenPage, card, wait_live
from desk_server import DeskServer
from playwright.sync_api import Page, expect

from roomkit.desk.demo import DEMO_PERSON

SPY = """
window.__hidden = false;
for (const name of ['hidden', 'visibilityState']) {
  Object.defineProperty(document, name, {
    configurable: true,
    get: () => name === 'hidden' ? window.__hidden : (window.__hidden ? 'hidden' : 'visible'),
  });
}
window.__setHidden = (hidden) => {
  window.__hidden = hidden;
  document.dispatchEvent(new Event('visibilitychange'));
};
window.__notices = [];
window.__asked = 0;
if (typeof window.Notification === 'function') {
  const Real = window.Notification;
  class Spy extends Real {
    constructor(title, options) {
      super(title, options);
      this.__record = { title, body: options && options.body, tag: options && options.tag,
                        closed: false };
      window.__notices.push(this.__record);
    }
    close() {
      this.__record.closed = true;
      super.close();
    }
    static requestPermission() {
      window.__asked += 1;
      return Real.requestPermission();
    }
  }
  window.Notification = Spy;
}
"""


def _open(open_page: OpenPage, url: str, *, hidden: bool, **options: Any) -> Page:
    opened = open_page(permissions=["notifications"], **options)
    page = opened.page
    page.add_init_script(SPY)
    page.goto(url)
    wait_live(page)
    if hidden:
        page.evaluate("window.__setHidden(true)")
    return page


def _ask(desk: DeskServer, room: str, question: str, actor: str = DEMO_PERSON) -> str:
    request = desk.run(
        desk.demo.handler.create_detached(
            "AskUserQuestion", {"question": question}, room_id=room, actor_id=actor
        )
    )
    return request.pending_id


def _notices(page: Page) -> list[dict[str, Any]]:
    notices: list[dict[str, Any]] = page.evaluate("window.__notices")
    return notices


def test_a_question_arriving_while_hidden_is_notified_once(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = _open(open_page, desk.link(room), hidden=True)
    expect(page).to_have_title("Answer desk")
    pending_id = _ask(desk, room, "Window or aisle?")
    expect(card(page, "question")).to_contain_text("Window or aisle?")
    page.wait_for_function("() => window.__notices.length === 1")
    assert _notices(page) == [
        {
            "title": "A question for you",
            "body": f"Window or aisle? (room {room})",
            "tag": f"roomkit-{pending_id}",
            "closed": False,
        }
    ]
    expect(page).to_have_title("(1) Answer desk")
    _ask(desk, room, "Vegetarian meal?")
    expect(page).to_have_title("(2) Answer desk")
    page.wait_for_function("() => window.__notices.length === 2")


def test_a_question_answered_elsewhere_closes_its_notification(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = _open(open_page, desk.link(room), hidden=True)
    pending_id = _ask(desk, room, "Late checkout?")
    page.wait_for_function("() => window.__notices.length === 1")
    admin = {"Authorization": f"Bearer {desk.token('root', admin=True)}"}
    with httpx.Client(base_url=desk.url, headers=admin) as api:
        assert api.post(f"/api/requests/{pending_id}/answer", json={"answer": "yes"}).is_success
    expect(page.locator(".card")).to_have_count(0)
    expect(page).to_have_title("Answer desk")
    page.wait_for_function("() => window.__notices[0].closed")


def test_a_visible_page_shows_the_question_without_a_notification(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = _open(open_page, desk.link(room), hidden=False)
    _ask(desk, room, "Breakfast included?")
    expect(card(page, "question")).to_contain_text("Breakfast included?")
    expect(page).to_have_title("(1) Answer desk")
    assert _notices(page) == []


def test_questions_open_when_the_page_loads_are_not_notified(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """What the person opened the page to see needs no notification, even in a hidden tab."""
    _ask(desk, room, "Taxi from the airport?")
    page = _open(open_page, desk.link(room), hidden=True)
    expect(card(page, "question")).to_contain_text("Taxi from the airport?")
    expect(page).to_have_title("(1) Answer desk")
    page.evaluate("window.__setHidden(false)")
    _ask(desk, room, "Travel insurance?")
    expect(page.locator(".card")).to_have_count(2)
    assert _notices(page) == []


def test_an_administrator_is_not_notified_of_someone_else_s_question(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """An administrator's page shows every question, but notifies only their own."""
    admin_link = f"{desk.url}/#token={desk.token('root', admin=True)}&room={room}"
    page = _open(open_page, admin_link, hidden=True)
    _ask(desk, room, "For the demo user")
    expect(page.locator(".card", has_text="For the demo user")).to_have_count(1)
    _ask(desk, room, "For root", actor="root")
    page.wait_for_function("() => window.__notices.length === 1")
    assert [notice["body"] for notice in _notices(page)] == [f"For root (room {room})"]


def test_a_granted_permission_needs_no_button(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = _open(open_page, desk.link(room), hidden=False)
    expect(page.locator("#notify-me")).to_be_hidden()


def test_the_page_offers_to_ask_for_the_permission(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """While the browser has not asked the person, a button asks (a click is needed)."""
    opened = open_page()
    page = opened.page
    session = page.context.new_cdp_session(page)
    session.send(
        "Browser.setPermission",
        {"permission": {"name": "notifications"}, "setting": "prompt", "origin": desk.url},
    )
    page.add_init_script(SPY)
    page.goto(desk.link(room))
    wait_live(page)
    assert page.evaluate("Notification.permission") == "default"
    button = page.get_by_role("button", name="Notify me of new questions")
    expect(button).to_be_visible()
    button.click()
    page.wait_for_function("() => window.__asked === 1")
