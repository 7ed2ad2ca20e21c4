"""A press on a card's button while the desk sends something: the release lands on the
button pressed, whatever arrived meanwhile."""

from __future__ import annotations

from desk_page import OpenPage, card, say, settled, wait_live
from desk_server import DeskServer
from playwright.sync_api import Route, expect

from roomkit.desk.demo import DEMO_PERSON

# Counts the WebSocket frames the page's own listeners have handled (they run first).
HANDLED = """
window.__handled = 0;
const listen = WebSocket.prototype.addEventListener;
WebSocket.prototype.addEventListener = function (type, listener, options) {
  if (type !== 'message') return listen.call(this, type, listener, options);
  return listen.call(this, type, function (event) {
    try { return listener.call(this, event); } finally { window.__handled += 1; }
  }, options);
};
"""


def hold(desk: DeskServer, room: str, to: str) -> str:
    """Hold a transfer to ``to`` for the demo person's decision in ``room``; its id."""
    request = desk.run(
        desk.demo.handler.create_approval(
            "transfer_money",
            {"to": to, "amount": 120, "memo": "March rent " * 20},
            approvers=(DEMO_PERSON,),
            room_id=room,
            actor_id=DEMO_PERSON,
            channel_id="agent",
            description="Send money to someone. It runs only once a person approves it.",
        )
    )
    return request.pending_id


def test_a_card_arriving_during_a_press_leaves_the_pressed_button_where_it_is(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """On a phone, a question arriving just after a chat message is scrolled into sight:
    it waits for the press to end, so the release approves the card pressed."""
    first = hold(desk, room, "bob")
    opened = open_page(viewport={"width": 390, "height": 500}, is_mobile=True)
    page = opened.page
    page.add_init_script(HANDLED)

    def refuse(route: Route) -> None:
        # The message is sent and refused: the agent is not asked anything new.
        if route.request.method == "POST":
            route.fulfill(status=503, json={"detail": "The chat is resting."})
        else:
            route.continue_()

    page.route("**/messages", refuse)
    page.goto(desk.link(room))
    wait_live(page)
    approval = card(page, "approval")
    approve = approval.get_by_role("button", name="Approve")
    expect(approve).to_be_visible()
    say(page, "Is the rent paid?")
    page.locator("#chat-choice").get_by_role("button", name="Send anyway").click()
    expect(page.locator("#chat-error")).to_have_text("The chat is resting.")
    approve.scroll_into_view_if_needed()
    box = approve.bounding_box()
    assert box is not None
    handled = page.evaluate("window.__handled")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    second = hold(desk, room, "carol")
    page.wait_for_function("seen => window.__handled > seen", arg=handled)
    page.mouse.up()
    expect(settled(page, room).first).to_have_attribute("data-request-id", first)
    expect(settled(page, room).first).to_have_attribute("data-outcome", "approved")
    expect(page.locator(".card")).to_have_count(1)
    expect(page.locator(".card")).to_have_attribute("data-request-id", second)
