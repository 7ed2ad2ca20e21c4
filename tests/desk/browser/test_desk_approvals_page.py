"""Approvals on the desk page: every decision, the edit form and the JSON editor, the checks
in the page and on the server, who may decide, and the request's history."""

from __future__ import annotations

import json
from typing import Any

import httpx
from desk_page import OpenPage, card, settled, wait_live
from desk_server import DeskServer
from playwright.sync_api import Locator, Page, WebSocketRoute, expect

from roomkit.desk.demo import DEMO_PERSON
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools import approvals

DESCRIPTION = "Send money to someone. It runs only once a person approves it."
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "description": "Who gets the money"},
        "amount": {"type": "number", "minimum": 1, "maximum": 5000},
        "splits": {"type": "integer", "minimum": 1, "maximum": 4},
        "urgent": {"type": "boolean"},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "memo": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    "required": ["to", "amount", "currency"],
    "additionalProperties": False,
}
ARGUMENTS: dict[str, Any] = {
    "to": "bob",
    "amount": 120,
    "splits": 1,
    "urgent": False,
    "currency": "EUR",
    "tags": ["rent", "march"],
    "memo": {"text": "March rent"},
}


def hold(
    desk: DeskServer,
    room: str,
    *,
    tool: str = "transfer_money",
    arguments: dict[str, Any] | None = None,
    schema: dict[str, Any] | None = None,
    approvers: tuple[str, ...] = (DEMO_PERSON,),
    description: str | None = DESCRIPTION,
) -> str:
    """Hold a call for a decision in ``room``, as the agent's pipeline does; its id."""
    request = desk.run(
        desk.demo.handler.create_approval(
            tool,
            dict(ARGUMENTS if arguments is None else arguments),
            approvers=approvers,
            tool_schema=SCHEMA if schema is None else schema,
            room_id=room,
            actor_id=DEMO_PERSON,
            channel_id="agent",
            description=description,
        )
    )
    return request.pending_id


def stored(desk: DeskServer, pending_id: str) -> PendingInput:
    request = desk.run(desk.demo.handler.get_request(pending_id))
    assert request is not None
    return request


def decided(desk: DeskServer, page: Page, room: str, pending_id: str) -> PendingInput:
    """The request once the page has taken its card away."""
    expect(page.locator(f'.card[data-request-id="{pending_id}"]')).to_have_count(0)
    expect(settled(page, room).first).to_have_attribute("data-request-id", pending_id)
    return stored(desk, pending_id)


def open_card(desk: DeskServer, room: str, open_page: OpenPage) -> tuple[Page, Locator]:
    page = open_page(desk.link(room)).page
    wait_live(page)
    return page, card(page, "approval")


def test_the_card_shows_the_tool_its_description_arguments_and_history(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = hold(desk, room)
    _, approval = open_card(desk, room, open_page)
    expect(approval.locator(".tool-name")).to_have_text("transfer_money")
    expect(approval.locator(".tool-description")).to_have_text(DESCRIPTION)
    assert json.loads(approval.locator(".arguments").text_content() or "") == ARGUMENTS
    for name in ("Approve", "Edit…", "Reject…", "Answer instead…"):
        expect(approval.get_by_role("button", name=name, exact=True)).to_be_visible()
    approval.locator(".history summary").click()
    created = approval.locator(".history-list li[data-type=created]")
    expect(created).to_contain_text(f"by {DEMO_PERSON}")
    expect(created).to_contain_text(f"approvers: {DEMO_PERSON}")
    digest = stored(desk, pending_id).arguments_digest
    assert digest is not None
    expect(created).to_contain_text(f"digest {digest[:12]}")


def test_approve_settles_with_the_approval(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = hold(desk, room)
    page, approval = open_card(desk, room, open_page)
    approval.get_by_role("button", name="Approve").click()
    request = decided(desk, page, room, pending_id)
    assert (request.status, request.result) == (PendingInputStatus.RESOLVED, approvals.approve())
    assert request.settled_by == DEMO_PERSON
    expect(settled(page, room).first.locator(".settled-how")).to_have_text("Approved by you")
    history = desk.run(desk.demo.handler.history(pending_id))
    decisions = [entry for entry in history if entry["type"] == "decided"]
    assert [(entry["decision"], entry["surface"]) for entry in decisions] == [("approve", "desk")]


def test_an_edit_through_the_form_sends_every_field_as_its_type(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = hold(desk, room)
    page, approval = open_card(desk, room, open_page)
    approval.get_by_role("button", name="Edit…").click()
    form = approval.locator(".edit-panel")
    expect(form.locator("input[data-field=to]")).to_have_value("bob")
    expect(form.locator("input[data-field=amount]")).to_have_attribute("max", "5000")
    form.locator("input[data-field=to]").fill("carol")
    form.locator("input[data-field=amount]").fill("99.5")
    form.locator("input[data-field=splits]").fill("2")
    form.locator("input[data-field=urgent]").check()
    form.get_by_label("USD").check()
    form.locator("textarea[data-field=tags]").fill("rent\napril\n")
    form.locator("input[data-field=text]").fill("April rent")
    form.get_by_role("button", name="Run with these arguments").click()
    request = decided(desk, page, room, pending_id)
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
    expect(settled(page, room).first.locator(".settled-how")).to_have_text(
        "Approved with changes by you"
    )


def test_an_edit_leaves_out_what_the_model_left_out_and_the_person_left_empty(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """Optional fields absent from the call (a nested object with required fields among
    them) stay absent unless the person fills them in."""
    pending_id = hold(desk, room, arguments={"to": "bob", "amount": 5, "currency": "EUR"})
    page, approval = open_card(desk, room, open_page)
    approval.get_by_role("button", name="Edit…").click()
    form = approval.locator(".edit-panel")
    expect(form.locator("input[data-field=splits]")).to_have_value("")
    form.locator("input[data-field=amount]").fill("6")
    form.get_by_role("button", name="Run with these arguments").click()
    request = decided(desk, page, room, pending_id)
    assert request.result == approvals.edit({"to": "bob", "amount": 6, "currency": "EUR"})


def test_an_edit_as_json_sends_the_object_written(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = hold(desk, room)
    page, approval = open_card(desk, room, open_page)
    approval.get_by_role("button", name="Edit…").click()
    form = approval.locator(".edit-panel")
    form.locator("input[data-field=amount]").fill("300")
    form.get_by_role("button", name="Edit as JSON").click()
    editor = form.get_by_label("Arguments as JSON")
    written = json.loads(editor.input_value())
    assert written == {**ARGUMENTS, "amount": 300}
    editor.fill(json.dumps({"to": "dave", "amount": 42, "currency": "GBP"}))
    form.get_by_role("button", name="Run with these arguments").click()
    request = decided(desk, page, room, pending_id)
    assert request.result == approvals.edit({"to": "dave", "amount": 42, "currency": "GBP"})


def test_a_schema_the_form_cannot_draw_is_edited_as_json(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    schema = {
        "type": "object",
        "properties": {"target": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["target"],
    }
    pending_id = hold(desk, room, tool="ping", arguments={"target": "db-1"}, schema=schema)
    page, approval = open_card(desk, room, open_page)
    approval.get_by_role("button", name="Edit…").click()
    form = approval.locator(".edit-panel")
    expect(form).to_contain_text("the form cannot draw")
    expect(form.get_by_role("button", name="Back to the form")).to_be_hidden()
    form.get_by_label("Arguments as JSON").fill('{"target": 7}')
    form.get_by_role("button", name="Run with these arguments").click()
    assert decided(desk, page, room, pending_id).result == approvals.edit({"target": 7})


def test_an_invalid_edit_is_refused_by_the_page_and_then_by_the_desk(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """The page checks required fields, types and bounds; the desk checks the whole schema
    (here a pattern the page leaves to it) and its message is shown; nothing is decided."""
    schema = {
        **SCHEMA,
        "properties": {**SCHEMA["properties"], "to": {"type": "string", "pattern": "^[a-z]+$"}},
    }
    pending_id = hold(desk, room, schema=schema)
    page, approval = open_card(desk, room, open_page)
    approval.get_by_role("button", name="Edit…").click()
    form = approval.locator(".edit-panel")
    send = form.get_by_role("button", name="Run with these arguments")
    error = approval.locator(".error[role=alert]")
    form.locator("input[data-field=amount]").fill("9000")
    form.locator("input[data-field=to]").fill("")
    send.click()
    expect(error).to_have_text("Fix the edit first: to is required; amount must be at most 5000.")
    form.locator("input[data-field=to]").fill("Bob Smith")
    form.locator("input[data-field=amount]").fill("10")
    form.get_by_role("button", name="Edit as JSON").click()
    form.get_by_label("Arguments as JSON").fill('{"to": "bob", "amount": "ten", "currency": "EUR"}')
    send.click()
    expect(error).to_have_text("Fix the edit first: amount must be a number.")
    form.get_by_label("Arguments as JSON").fill("{not json")
    send.click()
    expect(error).to_contain_text("the JSON does not parse")
    history = desk.run(desk.demo.handler.history(pending_id))
    assert [entry for entry in history if entry["type"] == "decided"] == []

    editor = form.get_by_label("Arguments as JSON")
    editor.fill('{"to": "Bob Smith", "amount": 10, "currency": "EUR"}')
    send.click()
    expect(error).to_contain_text("Invalid edit for 'transfer_money'")
    expect(error).to_contain_text("Bob Smith")
    expect(approval).to_be_visible()
    assert stored(desk, pending_id).status is PendingInputStatus.PENDING
    form.get_by_label("Arguments as JSON").fill('{"to": "bob", "amount": 10, "currency": "EUR"}')
    send.click()
    request = decided(desk, page, room, pending_id)
    assert request.result == approvals.edit({"to": "bob", "amount": 10, "currency": "EUR"})


def test_reject_takes_a_reason_and_the_agent_reads_it(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = hold(desk, room)
    page, approval = open_card(desk, room, open_page)
    approval.get_by_role("button", name="Reject…").click()
    approval.get_by_role("button", name="Reject", exact=True).click()
    expect(approval.locator(".error[role=alert]")).to_have_text(
        "Say why you reject it: the agent reads the reason."
    )
    approval.get_by_label("Why you reject it").fill("not to that account")
    approval.get_by_role("button", name="Reject", exact=True).click()
    request = decided(desk, page, room, pending_id)
    assert (request.status, request.reject_reason) == (
        PendingInputStatus.REJECTED,
        "not to that account",
    )
    outcome = settled(page, room).first
    expect(outcome.locator(".settled-how")).to_have_text("Rejected by you: not to that account")


def test_answer_instead_sends_the_text_as_the_tools_result(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = hold(desk, room)
    page, approval = open_card(desk, room, open_page)
    approval.get_by_role("button", name="Answer instead…").click()
    approval.get_by_label("Your answer instead").fill("I paid Bob in cash")
    approval.get_by_role("button", name="Send instead of running").click()
    request = decided(desk, page, room, pending_id)
    assert request.result == approvals.respond("I paid Bob in cash")
    outcome = settled(page, room).first
    expect(outcome.locator(".settled-how")).to_have_text("Answered instead by you")
    expect(outcome.locator(".settled-answer")).to_have_text("I paid Bob in cash")


def test_someone_who_is_not_an_approver_sees_it_but_cannot_decide(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    pending_id = hold(desk, room, approvers=("alice", "bob"))
    page, approval = open_card(desk, room, open_page)
    expect(approval.locator(".waiting")).to_have_text("Waiting for a decision by alice, bob.")
    expect(approval.get_by_role("button")).to_have_count(0)
    headers = {"Authorization": f"Bearer {desk.token(DEMO_PERSON)}"}
    with httpx.Client(base_url=desk.url, headers=headers) as api:
        answered = api.post(f"/api/requests/{pending_id}/answer", json={"decision": "approve"})
        refused = api.post(f"/api/requests/{pending_id}/reject", json={"reason": "no"})
    assert (answered.status_code, refused.status_code) == (403, 403)
    assert "approvers" in answered.json()["detail"]
    assert stored(desk, pending_id).status is PendingInputStatus.PENDING

    admin = open_page(f"{desk.url}/#token={desk.token('root', admin=True)}&room={room}").page
    wait_live(admin)
    seen = admin.locator(f'.card[data-request-id="{pending_id}"]')
    expect(seen.locator(".waiting")).to_be_visible()
    expect(seen.get_by_role("button")).to_have_count(0)
    alice = open_page(f"{desk.url}/#token={desk.token('alice')}&room={room}").page
    wait_live(alice)
    mine = alice.locator(f'.card[data-request-id="{pending_id}"]')
    mine.get_by_role("button", name="Approve").click()
    expect(mine).to_have_count(0)
    expect(page.locator(".card")).to_have_count(0)
    assert stored(desk, pending_id).settled_by == "alice"


def test_a_decision_on_an_approval_settled_meanwhile_says_who_settled_it(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """The page has not heard that alice approved (the settle frame is held back), so the
    card is still up: the desk's 409 takes it away and says how it ended."""
    pending_id = hold(desk, room, approvers=(DEMO_PERSON, "alice"))
    page = open_page().page

    def hold_back_settles(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        server.on_message(
            lambda message: None if "question_settled" in str(message) else ws.send(message)
        )

    page.route_web_socket("**/api/ws", hold_back_settles)
    page.goto(desk.link(room))
    wait_live(page)
    approval = card(page, "approval")
    assert desk.run(desk.demo.handler.aresolve(pending_id, approvals.approve(), by="alice"))
    approval.get_by_role("button", name="Approve").click()
    outcome = settled(page, room).first
    expect(outcome).to_have_attribute("data-outcome", "conflict")
    expect(outcome.locator(".settled-how")).to_have_text("Already answered by alice")
    expect(page.locator(".card")).to_have_count(0)
