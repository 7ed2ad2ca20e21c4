"""In a real browser: a chat message that could answer two open questions asks which."""

from __future__ import annotations

from desk_page import OpenPage, say, wait_live
from desk_server import DeskServer
from playwright.sync_api import expect

from roomkit.desk.demo import DEMO_PERSON
from roomkit.models.pending_input import PendingInputStatus


def test_a_message_that_could_answer_two_questions_asks_which(
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

    where, when = ask("Where would you like to go?"), ask("When do you leave?")
    page = open_page(desk.link(room)).page
    wait_live(page)
    expect(page.locator(".card")).to_have_count(2)

    say(page, "Lisbon")
    choice = page.get_by_role("group", name="Which question does this answer?")
    expect(choice).to_be_visible()
    expect(choice.locator("button.choice")).to_have_text(
        ["Where would you like to go?", "When do you leave?"]
    )
    choice.get_by_role("button", name="Where would you like to go?").click()

    expect(choice).to_be_hidden()
    expect(page.locator(".message.mine .message-body")).to_have_text(["Lisbon"])
    expect(page.locator(".card")).to_have_count(1)
    expect(page.locator(".card .question-text")).to_have_text("When do you leave?")
    answered = desk.run(handler.get_request(where))
    assert answered is not None
    assert (answered.status, answered.result) == (PendingInputStatus.RESOLVED, "Lisbon")
    still = desk.run(handler.get_request(when))
    assert still is not None
    assert still.status is PendingInputStatus.PENDING

    # One question left: the next message answers it without asking.
    say(page, "In May")
    expect(page.locator(".card")).to_have_count(0)
    expect(page.locator(".message.mine .message-body")).to_have_text(["Lisbon", "In May"])
    settled = desk.run(handler.get_request(when))
    assert settled is not None
    assert settled.result == "In May"


def test_cancelling_the_choice_sends_nothing(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    handler = desk.demo.handler
    for question in ("Where to?", "When?"):
        desk.run(
            handler.create_detached(
                "AskUserQuestion", {"question": question}, room_id=room, actor_id=DEMO_PERSON
            )
        )
    page = open_page(desk.link(room)).page
    wait_live(page)
    expect(page.locator(".card")).to_have_count(2)

    say(page, "Lisbon")
    choice = page.get_by_role("group", name="Which question does this answer?")
    choice.get_by_role("button", name="Cancel").click()

    expect(choice).to_be_hidden()
    expect(page.locator("#chat-input")).to_have_value("Lisbon")
    expect(page.locator(".message.mine")).to_have_count(0)
    expect(page.locator(".card")).to_have_count(2)


def test_a_message_sent_while_a_multiple_choice_waits_says_so_before_it_goes(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    handler = desk.demo.handler
    question = {"question": "What should the trip include?", "multiSelect": True}
    options = [{"label": "Flights"}, {"label": "Hotel"}]
    desk.run(
        handler.create_detached(
            "AskUserQuestion",
            {"questions": [{**question, "options": options}]},
            room_id=room,
            actor_id=DEMO_PERSON,
        )
    )
    page = open_page(desk.link(room)).page
    wait_live(page)
    expect(page.locator(".card")).to_have_count(1)

    say(page, "Can we go to Porto instead?")
    waiting = page.get_by_role("group", name="The agent waits for your answer")
    expect(waiting).to_contain_text("What should the trip include?")
    expect(page.locator(".message.mine")).to_have_count(0)
    waiting.get_by_role("button", name="Answer the question").click()
    expect(waiting).to_be_hidden()
    expect(page.locator("#chat-input")).to_have_value("Can we go to Porto instead?")

    say(page, "Can we go to Porto instead?")
    waiting.get_by_role("button", name="Send anyway").click()
    expect(page.locator(".message.mine .message-body")).to_have_text(
        ["Can we go to Porto instead?"]
    )
    # The demo agent (not waiting on this test's question) takes the message as a new plan
    # and asks its first question; both are withdrawn when the test ends.
    expect(page.locator(".card")).to_have_count(2)
