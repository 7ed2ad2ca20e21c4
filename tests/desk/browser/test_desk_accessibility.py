"""An accessibility pass over the desk page: axe-core finds no serious or critical violation
on every card kind and the chat, and a person answers with the keyboard alone."""

from __future__ import annotations

from typing import Any

from approval_cards import hold
from axe_playwright_python.sync_playwright import Axe
from desk_page import OpenPage, card, wait_live
from desk_server import DeskServer
from playwright.sync_api import Page, expect

from roomkit.desk.demo import DEMO_PERSON

SERIOUS = {"serious", "critical"}


def serious_violations(page: Page) -> list[dict[str, Any]]:
    results = Axe().run(page)
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:3]}
        for v in results.response["violations"]
        if v["impact"] in SERIOUS
    ]


def ask(desk: DeskServer, room: str, arguments: dict[str, Any], **options: Any) -> str:
    request = desk.run(
        desk.demo.handler.create_detached(
            "AskUserQuestion", arguments, room_id=room, actor_id=DEMO_PERSON, **options
        )
    )
    return request.pending_id


def test_every_card_kind_and_the_chat_pass_axe(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    ask(desk, room, {"question": "Where to?"})
    ask(desk, room, {"question": "Which?", "options": ["Train", "Plane"]})
    ask(desk, room, {"question": "Include?", "options": ["Flights", "Hotel"], "multiSelect": True})
    ask(
        desk,
        room,
        {"questions": [{"question": "When?", "options": [{"label": "May"}, {"label": "June"}]}]},
    )
    hold(desk, room)
    for viewport in ({"width": 1280, "height": 900}, {"width": 390, "height": 844}):
        page = open_page(desk.link(room), viewport=viewport).page
        wait_live(page)
        expect(page.locator(".card")).to_have_count(5)
        card(page, "approval").get_by_role("button", name="Edit…").click()
        assert serious_violations(page) == []


def test_a_question_is_answered_with_the_keyboard_alone(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = ask(desk, room, {"question": "Where to?"})
    page = open_page(desk.link(room)).page
    wait_live(page)
    answer = card(page, "question").get_by_label("Your answer")
    for _ in range(40):
        page.keyboard.press("Tab")
        if answer.evaluate("element => element === document.activeElement"):
            break
    expect(answer).to_be_focused()
    page.keyboard.type("Lisbon")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "Answer"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "the focused button shows its focus"
    page.keyboard.press("Enter")
    expect(page.locator(".card")).to_have_count(0)
    settled = desk.run(desk.demo.handler.get_request(pending_id))
    assert settled is not None
    assert settled.result == "Lisbon"


def test_the_sign_in_screen_passes_axe(desk: DeskServer, open_page: OpenPage) -> None:
    page = open_page(f"{desk.url}/").page
    expect(page.locator("#signin-token")).to_be_visible()
    assert serious_violations(page) == []
