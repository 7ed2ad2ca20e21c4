"""An approval a person can read: the arguments as a labelled table built from the tool's JSON
Schema, the raw JSON one click away, and what an edit changed marked with what it was."""

from __future__ import annotations

import json
from typing import Any

from approval_cards import ARGUMENTS, hold
from desk_page import OpenPage, card, wait_live
from desk_server import DeskServer
from playwright.sync_api import expect

from roomkit.desk.demo import DEMO_PERSON
from roomkit.tools import approvals

LABELLED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "title": "Payee", "description": "Who gets the money"},
        "amount": {"type": "number", "x-unit": "EUR"},
        "urgent": {"type": "boolean"},
        "currency": {
            "oneOf": [
                {"const": "EUR", "title": "Euro"},
                {"const": "USD", "title": "US dollar"},
            ]
        },
        "tags": {"type": "array", "items": {"type": "string"}},
        "memo": {"type": "object", "properties": {"text": {"type": "string", "title": "Note"}}},
    },
}
SHOWN = {
    "to": "bob",
    "amount": 1200,
    "urgent": False,
    "currency": "EUR",
    "tags": ["rent", "march"],
    "memo": {"text": "March rent"},
}


def test_the_arguments_read_as_a_labelled_table_with_the_json_one_click_away(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    hold(desk, room, arguments=SHOWN, schema=LABELLED)
    page = open_page(desk.link(room)).page
    wait_live(page)
    approval = card(page, "approval")
    table = approval.locator(".argument-view > .argument-table")

    def row(field: str) -> Any:
        return table.locator(f":scope > tbody > tr[data-field={field}]")

    expect(row("to").locator("th")).to_contain_text("Payee")
    expect(row("to").locator("th .field-description")).to_have_text("Who gets the money")
    expect(row("amount").locator("th")).to_have_text("Amount")
    expect(row("amount").locator("td")).to_contain_text("EUR")
    expect(row("urgent").locator("td")).to_have_text("No")
    expect(row("currency").locator("td")).to_have_text("Euro")
    expect(row("tags").locator("td")).to_have_text("rent, march")
    expect(row("memo").locator("td th")).to_have_text("Note")
    expect(row("memo").locator("td td")).to_have_text("March rent")
    raw = approval.locator(".raw-arguments")
    expect(raw.locator(".arguments")).to_be_hidden()
    raw.get_by_text("Show as JSON").click()
    expect(raw.locator(".arguments")).to_be_visible()
    assert json.loads(raw.locator(".arguments").text_content() or "") == SHOWN


def test_an_edit_under_a_quorum_marks_what_changed_and_what_it_was(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = hold(desk, room, approvers=(DEMO_PERSON, "alice", "bob"), quorum=2)
    edited = {**ARGUMENTS, "amount": 4999}
    assert desk.run(desk.demo.handler.aresolve(pending_id, approvals.edit(edited), by="alice"))
    page = open_page(desk.link(room)).page
    wait_live(page)
    table = card(page, "approval").locator(".argument-view > .argument-table")
    changed = table.locator("tr.changed")
    expect(changed).to_have_count(1)
    expect(changed).to_have_attribute("data-field", "amount")
    expect(changed.locator("td")).to_contain_text("4,999")
    expect(changed.locator(".was")).to_have_text("was 120")
    expect(table.locator("tr[data-field=to]")).not_to_have_class("changed")


def ask_with(desk: DeskServer, room: str, schema: dict[str, Any]) -> str:
    request = desk.run(
        desk.demo.handler.create_detached(
            "PlanTrip",
            {"why": "Plan the trip"},
            room_id=room,
            actor_id=DEMO_PERSON,
            answer_schema=schema,
        )
    )
    return request.pending_id


def test_an_answer_schema_is_answered_with_a_form_built_from_it(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "nights": {"type": "integer", "minimum": 1, "title": "Nights"},
            "budget": {"type": "number", "x-unit": "EUR", "title": "Budget"},
            "board": {"enum": ["room only", "half board"], "title": "Board"},
            "pets": {"type": "boolean", "title": "Pets"},
            "start": {"type": "string", "format": "date", "title": "Start"},
        },
        "required": ["nights", "board"],
    }
    pending_id = ask_with(desk, room, schema)
    page = open_page(desk.link(room)).page
    form = card(page, "custom").locator("form.schema-answer")
    expect(form.get_by_label("Budget")).to_have_attribute("type", "number")
    expect(form.locator(".field-hint")).to_contain_text(["in EUR"])
    expect(form.get_by_label("Start")).to_have_attribute("type", "date")
    form.get_by_role("button", name="Answer").click()
    expect(card(page, "custom").locator(".error")).to_contain_text("nights")
    form.get_by_label("Nights").fill("4")
    form.get_by_label("Budget").fill("950.5")
    form.get_by_label("half board").check()
    form.get_by_label("Pets").check()
    form.get_by_label("Start").fill("2027-01-10")
    form.get_by_role("button", name="Answer").click()
    expect(page.locator(".card")).to_have_count(0)
    settled = desk.run(desk.demo.handler.get_request(pending_id))
    assert settled is not None
    assert json.loads(settled.result or "") == {
        "nights": 4,
        "budget": 950.5,
        "board": "half board",
        "pets": True,
        "start": "2027-01-10",
    }


def test_a_single_choice_answer_is_a_set_of_choices(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = ask_with(desk, room, {"enum": ["train", "plane"], "title": "How to travel"})
    page = open_page(desk.link(room)).page
    custom = card(page, "custom")
    expect(custom.locator("legend")).to_have_text("How to travel")
    custom.get_by_label("train").check()
    custom.get_by_role("button", name="Answer").click()
    expect(page.locator(".card")).to_have_count(0)
    settled = desk.run(desk.demo.handler.get_request(pending_id))
    assert settled is not None
    assert settled.result == "train"  # a text answer is kept as the text itself


def test_an_empty_multiple_choice_is_caught_in_plain_words(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    request = desk.run(
        desk.demo.handler.create_detached(
            "AskUserQuestion",
            {"question": "Include what?", "options": ["Flights", "Hotel"], "multiSelect": True},
            room_id=room,
            actor_id=DEMO_PERSON,
        )
    )
    page = open_page(desk.link(room)).page
    question = card(page, "question")
    question.get_by_role("button", name="Answer").click()
    expect(question.locator(".error")).to_have_text(
        "Pick at least one, or decline the question below."
    )
    assert "{" not in (question.locator(".error").text_content() or "")
    settled = desk.run(desk.demo.handler.get_request(request.pending_id))
    assert settled is not None
    assert settled.status == "pending"
