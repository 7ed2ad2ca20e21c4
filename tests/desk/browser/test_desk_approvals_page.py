"""Approvals on the desk page: every decision, the edit form and the JSON editor, and the
checks in the page and on the server (who may decide, votes and grants: in
test_desk_approval_votes.py)."""

from __future__ import annotations

import json

from approval_cards import ARGUMENTS, DESCRIPTION, SCHEMA, HoldCall, hold
from desk_page import OpenPage, card, wait_live
from desk_server import DeskServer
from playwright.sync_api import Route, expect

from roomkit.desk.demo import DEMO_PERSON
from roomkit.models.history import Delivered
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools import approvals


def test_the_card_shows_the_tool_its_description_arguments_and_history(
    hold_call: HoldCall,
) -> None:
    held = hold_call()
    approval = held.card
    expect(approval.locator(".tool-name")).to_have_text("transfer_money")
    expect(approval.locator(".tool-description")).to_have_text(DESCRIPTION)
    assert json.loads(approval.locator(".arguments").text_content() or "") == ARGUMENTS
    for name in ("Approve", "Edit…", "Reject…", "Answer instead…"):
        expect(approval.get_by_role("button", name=name, exact=True)).to_be_visible()
    approval.locator(".history summary").click()
    created = approval.locator(".history-list li[data-type=created]")
    expect(created).to_contain_text(f"by {DEMO_PERSON}")
    expect(created).to_contain_text(f"approvers: {DEMO_PERSON}")
    digest = held.request().arguments_digest
    assert digest is not None
    expect(created).to_contain_text(f"digest {digest[:12]}")


def test_the_history_shows_a_delivery_the_framework_refused_and_why(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """A ``delivered`` entry the framework refused reads "refused: <reason>", the reason
    as text, never as markup; one it took reads as before."""
    pending_id = hold(desk, room)
    why = "the workflow ended (terminated) <img src=x onerror=__xss()> before it took it"
    for entry in (
        Delivered(surface="temporal", accepted=False, refused=why),
        Delivered(surface="temporal", accepted=True),
    ):
        desk.run(desk.demo.handler.record(pending_id, entry))
    opened = open_page(desk.link(room))
    page = opened.page
    wait_live(page)
    approval = card(page, "approval")
    approval.locator(".history summary").click()
    delivered = approval.locator(".history-list li[data-type=delivered]")
    expect(delivered).to_have_count(2)
    expect(delivered.first.locator("span")).to_have_text(
        f"delivered · via temporal · refused: {why}"
    )
    expect(delivered.last.locator("span")).to_have_text("delivered · via temporal")
    expect(delivered.locator("img")).to_have_count(0)
    assert opened.xss_calls() == 0


def test_the_card_offers_its_decisions_once_its_history_is_in(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """The history brings the tool's description, shown above the buttons: the buttons
    wait for it, so that none moves under a press (one whose release lands beside the
    button opens nothing), and Edit… then opens its panel."""
    hold(desk, room)
    page = open_page().page
    held: list[Route] = []
    released = False

    def history(route: Route) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route("**/history", history)
    page.goto(desk.link(room))
    wait_live(page)
    approval = card(page, "approval")
    expect(approval.locator(".tool-name")).to_have_text("transfer_money")
    expect(approval.get_by_role("button")).to_have_count(0)
    released = True
    for route in held:
        route.continue_()
    expect(approval.locator(".tool-description")).to_have_text(DESCRIPTION)
    approval.get_by_role("button", name="Edit…").click()
    expect(approval.locator(".edit-panel input[data-field=amount]")).to_be_visible()


def test_the_card_offers_only_the_decisions_the_request_takes(hold_call: HoldCall) -> None:
    held = hold_call(decisions=["approve", "reject"])
    for name in ("Approve", "Reject…"):
        expect(held.card.get_by_role("button", name=name, exact=True)).to_be_visible()
    for name in ("Edit…", "Answer instead…"):
        expect(held.card.get_by_role("button", name=name, exact=True)).to_have_count(0)
    held.card.get_by_role("button", name="Approve").click()
    assert held.decided().status is PendingInputStatus.RESOLVED


def test_approve_settles_with_the_approval(hold_call: HoldCall) -> None:
    held = hold_call()
    held.card.get_by_role("button", name="Approve").click()
    request = held.decided()
    assert (request.status, request.result) == (PendingInputStatus.RESOLVED, approvals.approve())
    assert request.settled_by == DEMO_PERSON
    expect(held.outcome().locator(".settled-how")).to_have_text("Approved by you")
    decisions = held.decisions()
    assert [(entry["decision"], entry["surface"]) for entry in decisions] == [("approve", "desk")]


def test_approve_with_changes_in_the_open_edit_form_sends_nothing_and_says_why(
    hold_call: HoldCall,
) -> None:
    held = hold_call()
    form = held.edit_form()
    form.locator("input[data-field=amount]").fill("800")
    held.card.get_by_role("button", name="Approve").click()
    expect(held.card.locator(".error")).to_contain_text("Run with these arguments")
    assert held.request().status == PendingInputStatus.PENDING
    form.locator("input[data-field=amount]").fill("120")  # back as shown: Approve approves
    held.card.get_by_role("button", name="Approve").click()
    request = held.decided()
    assert request.result == approvals.approve()


def test_an_edit_through_the_form_sends_every_field_as_its_type(hold_call: HoldCall) -> None:
    held = hold_call()
    form = held.edit_form()
    expect(form.locator("input[data-field=to]")).to_have_value("bob")
    expect(form.locator("input[data-field=amount]")).to_have_attribute("max", "5000")
    form.locator("input[data-field=to]").fill("carol")
    form.locator("input[data-field=amount]").fill("99.5")
    form.locator("input[data-field=splits]").fill("2")
    form.locator("input[data-field=urgent]").check()
    form.get_by_label("USD").check()
    form.locator("textarea[data-field=tags]").fill("rent\napril\n")
    form.locator("input[data-field=text]").fill("April rent")
    request = held.run_edit()
    edited = {
        "to": "carol",
        "amount": 99.5,
        "splits": 2,
        "urgent": True,
        "currency": "USD",
        "tags": ["rent", "april"],
        "memo": {"text": "April rent"},
    }
    assert request.result == approvals.edit(edited)
    expect(held.outcome().locator(".settled-how")).to_have_text("Approved with changes by you")


def test_an_edit_leaves_out_what_the_model_left_out_and_the_person_left_empty(
    hold_call: HoldCall,
) -> None:
    """Optional fields absent from the call (a nested object with required fields among
    them) stay absent unless the person fills them in."""
    held = hold_call(arguments={"to": "bob", "amount": 5, "currency": "EUR"})
    form = held.edit_form()
    expect(form.locator("input[data-field=splits]")).to_have_value("")
    form.locator("input[data-field=amount]").fill("6")
    request = held.run_edit()
    assert request.result == approvals.edit({"to": "bob", "amount": 6, "currency": "EUR"})


def test_an_edit_as_json_sends_the_object_written(hold_call: HoldCall) -> None:
    held = hold_call()
    form = held.edit_form()
    form.locator("input[data-field=amount]").fill("300")
    form.get_by_role("button", name="Edit as JSON").click()
    editor = form.get_by_label("Arguments as JSON")
    written = json.loads(editor.input_value())
    assert written == {**ARGUMENTS, "amount": 300}
    editor.fill(json.dumps({"to": "dave", "amount": 42, "currency": "GBP"}))
    request = held.run_edit()
    assert request.result == approvals.edit({"to": "dave", "amount": 42, "currency": "GBP"})


def test_a_schema_the_form_cannot_draw_is_edited_as_json(hold_call: HoldCall) -> None:
    schema = {
        "type": "object",
        "properties": {"target": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["target"],
    }
    held = hold_call(tool="ping", arguments={"target": "db-1"}, schema=schema)
    form = held.edit_form()
    expect(form).to_contain_text("the form cannot draw")
    expect(form.get_by_role("button", name="Back to the form")).to_be_hidden()
    form.get_by_label("Arguments as JSON").fill('{"target": 7}')
    assert held.run_edit().result == approvals.edit({"target": 7})


def test_an_invalid_edit_is_refused_by_the_page_and_then_by_the_desk(
    hold_call: HoldCall,
) -> None:
    """The page checks required fields, types and bounds; the desk checks the whole schema
    (here a pattern the page leaves to it) and its message is shown; nothing is decided."""
    schema = {
        **SCHEMA,
        "properties": {**SCHEMA["properties"], "to": {"type": "string", "pattern": "^[a-z]+$"}},
    }
    held = hold_call(schema=schema)
    form = held.edit_form()
    send = form.get_by_role("button", name="Run with these arguments")
    error = held.card.locator(".error[role=alert]")
    form.locator("input[data-field=amount]").fill("9000")
    form.locator("input[data-field=to]").fill("")
    send.click()
    expect(error).to_have_text("Fix the edit first: to is required; amount must be at most 5000.")
    form.locator("input[data-field=to]").fill("Bob Smith")
    form.locator("input[data-field=amount]").fill("10")
    form.get_by_role("button", name="Edit as JSON").click()
    editor = form.get_by_label("Arguments as JSON")
    editor.fill('{"to": "bob", "amount": "ten", "currency": "EUR"}')
    send.click()
    expect(error).to_have_text("Fix the edit first: amount must be a number.")
    editor.fill("{not json")
    send.click()
    expect(error).to_contain_text("the JSON does not parse")
    assert held.decisions() == []

    editor.fill('{"to": "Bob Smith", "amount": 10, "currency": "EUR"}')
    send.click()
    expect(error).to_contain_text("Invalid edit for 'transfer_money'")
    expect(error).to_contain_text("Bob Smith")
    expect(held.card).to_be_visible()
    assert held.request().status is PendingInputStatus.PENDING
    editor.fill('{"to": "bob", "amount": 10, "currency": "EUR"}')
    request = held.run_edit()
    assert request.result == approvals.edit({"to": "bob", "amount": 10, "currency": "EUR"})


def test_reject_takes_a_reason_and_the_agent_reads_it(hold_call: HoldCall) -> None:
    held = hold_call()
    approval = held.card
    approval.get_by_role("button", name="Reject…").click()
    approval.get_by_role("button", name="Reject", exact=True).click()
    expect(approval.locator(".error[role=alert]")).to_have_text(
        "Say why you reject it: the agent reads the reason."
    )
    approval.get_by_label("Why you reject it").fill("not to that account")
    approval.get_by_role("button", name="Reject", exact=True).click()
    request = held.decided()
    assert (request.status, request.reject_reason) == (
        PendingInputStatus.REJECTED,
        "not to that account",
    )
    expect(held.outcome().locator(".settled-how")).to_have_text(
        "Rejected by you: not to that account"
    )


def test_answer_instead_sends_the_text_as_the_tools_result(hold_call: HoldCall) -> None:
    held = hold_call()
    approval = held.card
    approval.get_by_role("button", name="Answer instead…").click()
    approval.get_by_label("Your answer instead").fill("I paid Bob in cash")
    approval.get_by_role("button", name="Send instead of running").click()
    request = held.decided()
    assert request.result == approvals.respond("I paid Bob in cash")
    outcome = held.outcome()
    expect(outcome.locator(".settled-how")).to_have_text("Answered instead by you")
    expect(outcome.locator(".settled-answer")).to_have_text("I paid Bob in cash")
