"""The desk page in a real browser: sign-in by link, every question shape, the chat, privacy."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx
import pytest
from desk_page import (
    ARTIFACTS,
    OpenPage,
    card,
    last_reply,
    say,
    settled,
    wait_live,
    walk_to_booking,
)
from desk_server import DeskServer
from playwright.sync_api import expect

from roomkit.desk.app import CONTENT_SECURITY_POLICY
from roomkit.desk.demo import DEMO_PERSON

DOCS_SCREENSHOT = Path(__file__).parents[3] / "docs" / "assets" / "desk.png"


def test_the_token_moves_from_the_link_to_session_storage(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    token = desk.token(DEMO_PERSON)
    opened = open_page(f"{desk.url}/#token={token}&room={room}")
    page = opened.page
    wait_live(page)
    assert "#" not in page.url
    assert "token" not in page.url
    assert page.evaluate("sessionStorage.getItem('roomkit.desk.token')") == token
    expect(page.locator("#who")).to_have_text(f"Signed in as {DEMO_PERSON}")
    expect(page.locator("#chat-room")).to_have_text(room)


def test_a_sign_in_link_signs_the_page_in_once(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """The page trades the link ``roomkit desk`` prints for a token; a second page cannot."""
    from roomkit.desk.tokens import issue_sign_in_link

    link = issue_sign_in_link(desk.demo.secret, "admin", admin=True)
    first = open_page(f"{desk.url}/#token={link}&room={room}").page
    wait_live(first)
    expect(first.locator("#who")).to_have_text("Signed in as admin (admin)")
    kept = first.evaluate("sessionStorage.getItem('roomkit.desk.token')")
    second = open_page(f"{desk.url}/#token={link}&room={room}").page
    expect(second.locator("#signin-error")).to_have_text(
        "This sign-in link was already used: ask for a fresh one"
    )
    first.reload()
    wait_live(first)
    assert kept not in (None, link)
    assert "#" not in first.url
    expect(first.locator("#who")).to_have_text("Signed in as admin (admin)")


def test_every_response_carries_the_content_security_policy(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    opened = open_page()
    page = opened.page
    policies = {}
    page.on(
        "response", lambda r: policies.update({r.url: r.headers.get("content-security-policy")})
    )
    page.goto(desk.link(room))
    wait_live(page)
    expect(page.locator("#chat-input")).to_be_enabled()
    loaded = {url.removeprefix(desk.url) for url in policies}
    files = {"/desk.js", "/session.js", "/questions.js", "/chat.js", "/cards.js", "/dom.js"}
    files |= {"/notices.js", "/desk.css"}
    assert {"/", *files, "/api/me"} <= loaded
    assert set(policies.values()) == {CONTENT_SECURITY_POLICY}
    assert opened.console_errors == []


def test_a_trip_is_planned_by_answering_every_question_shape(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    opened = open_page(desk.link(room))
    page = opened.page
    wait_live(page)
    walk_to_booking(page, kind="Beach holiday", place="Crete")
    booking = card(page, "approval")
    expect(booking.locator(".tool-description")).to_contain_text("Book the planned trip")
    shown = json.loads(booking.locator(".arguments").text_content() or "")
    assert shown == {
        "trip": "beach holiday to Crete",
        "dates": "Next month",
        "travellers": 2,
        "includes": ["Flights", "Hotel"],
        "budget_eur": 1500,
    }
    booking.get_by_role("button", name="Approve").click()
    expect(last_reply(page)).to_have_text(
        "Booked: a beach holiday to Crete, next month, for two, up to 1500 EUR per person, "
        "with flights and hotel. Enjoy the trip!"
    )
    expect(page.locator(".card")).to_have_count(0)
    expect(page.locator("#no-questions")).to_be_visible()
    outcomes = settled(page, room)
    expect(outcomes.locator(".settled-how")).to_have_text(
        ["Approved by you"] + ["Answered by you"] * 4
    )
    expect(outcomes.locator(".settled-answer")).to_have_text(
        [
            "When do you want to leave? → Next month; What is your budget per person? → "
            "500-1500 EUR; Who is coming? → Two of us",
            "Flights, Hotel",
            "Crete",
            "Beach holiday",
        ]
    )
    assert opened.console_errors == []
    assert opened.dialogs == []


def test_rejecting_the_booking_books_nothing_and_says_why(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = open_page(desk.link(room)).page
    wait_live(page)
    walk_to_booking(page)
    booking = card(page, "approval")
    booking.get_by_role("button", name="Reject…").click()
    booking.get_by_label("Why you reject it").fill("too pricey")
    booking.get_by_role("button", name="Reject", exact=True).click()
    expect(last_reply(page)).to_contain_text("Nothing booked (too pricey).")
    outcome = settled(page, room).first
    expect(outcome.locator(".settled-how")).to_have_text("Rejected by you: too pricey")
    expect(outcome).to_have_attribute("data-outcome", "rejected")


def test_the_booking_runs_with_the_budget_the_person_edits(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = open_page(desk.link(room)).page
    wait_live(page)
    walk_to_booking(page)
    booking = card(page, "approval")
    booking.get_by_role("button", name="Edit…").click()
    budget = booking.locator("input[data-field=budget_eur]")
    expect(budget).to_have_attribute("type", "number")
    expect(budget).to_have_value("1500")
    budget.fill("900")
    booking.get_by_role("button", name="Run with these arguments").click()
    expect(last_reply(page)).to_have_text(
        "Booked (as you edited it: budget_eur): a city break to Lisbon, next month, for two, "
        "up to 900 EUR per person, with flights and hotel. Enjoy the trip!"
    )
    outcome = settled(page, room).first
    expect(outcome.locator(".settled-how")).to_have_text("Approved with changes by you")


def test_declining_a_question_stops_the_plan(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = open_page(desk.link(room)).page
    wait_live(page)
    say(page, "Hello")
    question = card(page, "question")
    question.get_by_text("Decline to answer…").click()
    question.get_by_label("Why you decline").fill("not today")
    question.get_by_role("button", name="Decline").click()
    expect(settled(page, room).first.locator(".settled-how")).to_have_text(
        "Declined by you: not today"
    )
    expect(last_reply(page)).to_have_text(
        "Understood, you would rather not answer, so I stopped planning. "
        'You said: "not today". Write again to start over.'
    )


def test_an_answer_the_request_refuses_keeps_it_open(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    handler = desk.demo.handler
    request = desk.run(
        handler.create_detached(
            "PickANumber",
            {"why": "How many nights?"},
            room_id=room,
            actor_id=DEMO_PERSON,
            answer_schema={"type": "integer", "minimum": 1},
        )
    )
    page = open_page(desk.link(room)).page
    custom = card(page, "custom")
    expect(custom.locator(".arguments")).to_contain_text('"why": "How many nights?"')
    answer = custom.get_by_label("Your answer")
    expect(answer).to_have_attribute("type", "number")
    answer.fill("0")
    custom.get_by_role("button", name="Answer").click()
    expect(custom.locator(".error")).to_have_text(
        "Fix the answer first: the answer must be at least 1."
    )
    assert desk.run(handler.get_request(request.pending_id)).status == "pending"
    answer.fill("3")
    custom.get_by_role("button", name="Answer").click()
    expect(page.locator(".card")).to_have_count(0)
    settled = desk.run(handler.get_request(request.pending_id))
    assert settled is not None
    assert settled.result == "3"


def test_questions_settled_elsewhere_leave_with_who_or_why(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    handler = desk.demo.handler

    def ask(question: str) -> str:
        request = desk.run(
            handler.create_detached(
                "AskUserQuestion", {"question": question}, room_id=room, actor_id=DEMO_PERSON
            )
        )
        return request.pending_id

    answered, refused, withdrawn = ask("Answered?"), ask("Refused?"), ask("Withdrawn?")
    timed = desk.run(
        handler.create(
            "AskUserQuestion", {"question": "Timed?"}, room_id=room, actor_id=DEMO_PERSON
        )
    )
    page = open_page(desk.link(room)).page
    expect(page.locator(".card")).to_have_count(4)
    admin = {"Authorization": f"Bearer {desk.token('root', admin=True)}"}
    with httpx.Client(base_url=desk.url, headers=admin) as api:
        assert api.post(f"/api/requests/{answered}/answer", json={"answer": "yes"}).is_success
        assert api.post(f"/api/requests/{refused}/reject", json={"reason": "no"}).is_success
    assert desk.run(handler.arelease(withdrawn))
    waiting = desk.submit(handler.wait(timed.pending_id, timeout=0.05))
    expect(page.locator(".card")).to_have_count(0)
    outcomes = dict(
        zip(
            settled(page, room).locator(".settled-what").all_text_contents(),
            settled(page, room).locator(".settled-how").all_text_contents(),
            strict=True,
        )
    )
    assert outcomes["Answered?"] == "Answered by root"
    assert outcomes["Refused?"] == "Declined by root: no"
    assert outcomes["Withdrawn?"].startswith("Withdrawn: the agent stopped waiting")
    assert outcomes["Timed?"] == "Timed out: nobody answered in time"
    with pytest.raises(TimeoutError):
        waiting.result(10)


def test_another_person_sees_none_of_it(desk: DeskServer, room: str, open_page: OpenPage) -> None:
    stranger = open_page(f"{desk.url}/#token={desk.token('mallory')}&room={room}")
    wait_live(stranger.page)
    expect(stranger.page.locator("#chat-note")).to_have_text(f"You are not in room {room}.")
    page = open_page(desk.link(room)).page
    wait_live(page)
    say(page, "Plan a secret trip")
    card(page, "question").get_by_role("button", name="Road trip").click()
    expect(card(page, "question")).to_contain_text("Road trip it is. Where")
    expect(stranger.page.locator(".card")).to_have_count(0)
    expect(stranger.page.locator("#no-questions")).to_be_visible()
    expect(stranger.page.locator(".message")).to_have_count(0)
    expect(stranger.page.locator(".settled")).to_have_count(0)
    assert stranger.page.locator("#chat-input").is_disabled()
    assert [json.loads(frame)["type"] for frame in stranger.frames] == ["snapshot"]
    assert "secret" not in stranger.page.content()


def test_the_chat_history_survives_a_reload(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = open_page(desk.link(room)).page
    wait_live(page)
    say(page, "Hello there")
    expect(card(page, "question")).to_contain_text("What kind of trip")
    page.reload()
    wait_live(page)
    expect(page.locator(".message.mine .message-body")).to_have_text(["Hello there"])
    expect(card(page, "question")).to_contain_text("What kind of trip")


def test_without_a_token_the_page_asks_for_one(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = open_page(f"{desk.url}/").page
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#desk")).to_be_hidden()
    page.get_by_label("Token").fill(desk.token(DEMO_PERSON))
    page.get_by_role("button", name="Sign in").click()
    wait_live(page)
    expect(page.locator("#who")).to_have_text(f"Signed in as {DEMO_PERSON}")


def test_a_refused_token_signs_the_page_out(desk: DeskServer, open_page: OpenPage) -> None:
    page = open_page(f"{desk.url}/#token=forged.token").page
    expect(page.locator("#signin-error")).to_have_text(
        "The desk refused your token: open a fresh link."
    )
    assert page.evaluate("sessionStorage.getItem('roomkit.desk.token')") is None


def test_the_page_fits_a_phone_screen(desk: DeskServer, room: str, open_page: OpenPage) -> None:
    page = open_page(desk.link(room), viewport={"width": 390, "height": 844}).page
    wait_live(page)
    say(page, "Plan a trip for two")
    card(page, "question").get_by_role("button", name="City break").click()
    free = card(page, "question")
    free.get_by_label("Your answer").fill("Porto")
    free.get_by_role("button", name="Answer").click()
    several = card(page, "question")
    several.get_by_label("Flights").check()
    several.get_by_role("button", name="Answer").click()
    plan = card(page, "questions")
    plan.get_by_label("This weekend").check()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    for control in [*plan.get_by_role("button").all(), *plan.get_by_role("radio").all()]:
        box = control.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 390
    shot = Path(ARTIFACTS) / "desk-phone.png"
    shot.parent.mkdir(exist_ok=True)
    page.screenshot(path=shot, full_page=True)


def test_on_a_touch_phone_the_new_question_is_in_sight_and_fields_are_thumb_sized(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    page = open_page(
        desk.link(room), viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
    ).page
    wait_live(page)
    # A long conversation: the chat's input sits far below the questions.
    page.evaluate("document.getElementById('chat-log').style.minHeight = '2400px'")
    page.locator("#chat-input").focus()
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    say(page, "Plan a trip for two")
    expect(card(page, "question")).to_be_in_viewport()
    card(page, "question").get_by_role("button", name="City break").click()
    expect(card(page, "question").get_by_label("Your answer")).to_have_attribute(
        "placeholder", "Your answer"
    )
    desk.run(
        desk.demo.handler.create_detached(
            "PickANumber",
            {"why": "How many nights?"},
            room_id=room,
            actor_id=DEMO_PERSON,
            answer_schema={"type": "integer", "minimum": 1},
        )
    )
    number = card(page, "custom").get_by_label("Your answer")
    box = number.bounding_box()
    assert box is not None
    assert box["height"] >= 36


def test_a_wide_screen_shows_questions_and_chat_side_by_side(
    desk: DeskServer, open_page: OpenPage
) -> None:
    """Also the README's and the docs' picture: ``ROOMKIT_UPDATE_SCREENSHOT=1`` writes it."""
    room = desk.new_room(name="weekend")
    try:
        shot = _plan_on_a_wide_screen(desk.link(room), open_page)
    finally:
        desk.withdraw_open(room)
    if os.environ.get("ROOMKIT_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, DOCS_SCREENSHOT)


def _plan_on_a_wide_screen(link: str, open_page: OpenPage) -> Path:
    page = open_page(link, viewport={"width": 1200, "height": 760}).page
    wait_live(page)
    say(page, "Hi! Can you plan a weekend away?")
    card(page, "question").get_by_role("button", name="City break").click()
    free = card(page, "question")
    free.get_by_label("Your answer").fill("Lisbon")
    free.get_by_role("button", name="Answer").click()
    several = card(page, "question")
    several.get_by_label("Flights").check()
    several.get_by_label("Hotel").check()
    several.get_by_role("button", name="Answer").click()
    plan = card(page, "questions")
    plan.get_by_label("This weekend").check()
    questions = page.locator(".panel.questions").bounding_box()
    chat = page.locator(".panel.chat").bounding_box()
    assert questions is not None
    assert chat is not None
    assert questions["x"] + questions["width"] <= chat["x"]
    assert abs(questions["y"] - chat["y"]) < 1
    shot = Path(ARTIFACTS) / "desk-wide.png"
    shot.parent.mkdir(exist_ok=True)
    page.screenshot(path=shot)
    return shot


def test_ctrl_enter_sends_a_text_answer_and_enter_starts_a_new_line(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    handler = desk.demo.handler
    request = desk.run(
        handler.create_detached(
            "AskUserQuestion", {"question": "Any wishes?"}, room_id=room, actor_id=DEMO_PERSON
        )
    )
    page = open_page(desk.link(room)).page
    answer = card(page, "question").get_by_label("Your answer")
    answer.type("A quiet room")
    answer.press("Enter")
    answer.type("near the sea")
    expect(answer).to_have_value("A quiet room\nnear the sea")
    expect(page.locator(".card")).to_have_count(1)
    answer.press("Control+Enter")
    expect(page.locator(".card")).to_have_count(0)
    expect(settled(page, room).locator(".settled-how")).to_have_text(["Answered by you"])
    stored = desk.run(handler.get_request(request.pending_id))
    assert stored is not None
    assert stored.result == "A quiet room\nnear the sea"
