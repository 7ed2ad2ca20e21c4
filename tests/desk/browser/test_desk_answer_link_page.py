"""An answer link's journey: answered, spent, expired or withdrawn, pasted into a tab, and a
page opened with no room."""

from __future__ import annotations

import pytest
from desk_page import OpenPage, card
from desk_server import DeskServer
from playwright.sync_api import Route, expect

from roomkit.desk.demo import DEMO_PERSON
from roomkit.desk.tokens import issue_answer_link

pytestmark = pytest.mark.usefixtures("room")


def ask(desk: DeskServer, room: str, question: str, *, person: str = DEMO_PERSON) -> str:
    """A free-text question for ``person``; returns its id."""
    created = desk.run(
        desk.demo.handler.create_detached(
            "AskUserQuestion", {"question": question}, room_id=room, actor_id=person,
        )
    )  # fmt: skip
    return created.pending_id


def answer_link(desk: DeskServer, pending_id: str) -> str:
    return f"{desk.url}/#token={issue_answer_link(desk.demo.secret, pending_id, DEMO_PERSON)}"


def test_an_answer_link_confirms_what_was_sent_and_shows_it_again_once_spent(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = ask(desk, room, "Which city?")
    link = answer_link(desk, pending_id)
    opened = open_page(link)
    page = opened.page
    asked = card(page, "question")
    asked.get_by_role("textbox").fill("Lisbon")
    asked.get_by_role("button", name="Answer").click()
    outcome = page.locator("#link-outcome")
    expect(outcome).to_be_visible()
    expect(outcome).to_contain_text("Sent: the agent has your answer")
    expect(outcome).to_contain_text("Lisbon")
    expect(page.locator("#signin-error")).to_be_hidden()
    assert desk.run(desk.demo.handler.get_request(pending_id)).result == "Lisbon"

    again = open_page(link).page
    expect(again.locator("#link-outcome")).to_contain_text("Already answered")
    expect(again.locator("#link-outcome")).to_contain_text(f"Answered by {DEMO_PERSON}")
    expect(again.locator("#link-outcome")).to_contain_text("Lisbon")
    expect(again.locator("#signin")).to_be_hidden()
    assert "refused" not in again.locator("body").inner_text()
    assert not [e for e in opened.console_errors if "404" in e]


def test_a_check_that_comes_back_after_the_answer_leaves_it_sent(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    # The page asks whether the link's request is still open as it starts. Held back here
    # until the person has answered, that check comes back settled: the page must go on
    # saying the answer was sent, not call it already answered.
    pending_id = ask(desk, room, "Which beach?")
    opened = open_page()
    page = opened.page
    held: list[Route] = []
    page.route("**/api/link", lambda route: held.append(route))
    page.goto(answer_link(desk, pending_id))
    asked = card(page, "question")
    asked.get_by_role("textbox").fill("Comporta")
    asked.get_by_role("button", name="Answer").click()
    title = page.locator("#link-outcome-title")
    expect(title).to_contain_text("Sent: the agent has your answer")
    # Its start's check, and any the spent link's refusals asked for since.
    assert held
    for check in held:
        with page.expect_response("**/api/link") as came:
            check.continue_()
        came.value.finished()
    # What the page does with the reply runs in its next tasks: let them run.
    page.evaluate("() => new Promise((done) => setTimeout(() => setTimeout(done)))")
    expect(title).to_contain_text("Sent: the agent has your answer")
    expect(page.locator("#link-outcome")).to_contain_text("Comporta")


def test_a_withdrawn_request_says_so_in_plain_words(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = ask(desk, room, "Which hotel?")
    desk.run(desk.demo.handler.arelease(pending_id))
    page = open_page(answer_link(desk, pending_id)).page
    outcome = page.locator("#link-outcome")
    expect(outcome).to_contain_text("This request is closed")
    expect(outcome).to_contain_text("withdrawn")


def test_a_fresh_link_pasted_into_the_same_tab_opens_its_question(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    first = ask(desk, room, "First question?")
    second = ask(desk, room, "Second question?")
    page = open_page(answer_link(desk, first)).page
    expect(card(page, "question")).to_contain_text("First question?")
    page.evaluate("url => { window.location.href = url; }", answer_link(desk, second))
    expect(page.locator(f'.card[data-request-id="{second}"]')).to_be_visible()


def test_a_page_without_a_room_shows_no_chat_and_asks_for_no_room(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    # Someone outside the demo's own room, on a plain desk page.
    pending_id = ask(desk, room, "Any room?", person="visitor")
    opened = open_page(f"{desk.url}/#token={desk.token('visitor')}")
    page = opened.page
    expect(page.locator(f'.card[data-request-id="{pending_id}"]')).to_be_visible()
    expect(page.locator("#chat")).to_be_hidden()
    assert "You are not in room" not in page.locator("body").inner_text()
    assert opened.console_errors == []
