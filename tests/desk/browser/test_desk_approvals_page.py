"""Approvals on the desk page: every decision, the edit form and the JSON editor, the checks
in the page and on the server, who may decide, and the request's history."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from desk_page import OpenPage, card, settled, wait_live
from desk_server import DeskServer
from playwright.sync_api import Locator, Page, Route, WebSocketRoute, expect

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
    quorum: int | None = None,
    decisions: list[str] | None = None,
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
            description=DESCRIPTION,
            quorum=quorum,
            decisions=decisions,
        )
    )
    return request.pending_id


def stored(desk: DeskServer, pending_id: str) -> PendingInput:
    request = desk.run(desk.demo.handler.get_request(pending_id))
    assert request is not None
    return request


@dataclass
class Held:
    """A call held for a decision, with its card open on the desk page."""

    desk: DeskServer
    room: str
    pending_id: str
    page: Page
    card: Locator

    def request(self) -> PendingInput:
        """The request as the store holds it now."""
        return stored(self.desk, self.pending_id)

    def decided(self) -> PendingInput:
        """The request once the page has taken its card away."""
        expect(self.page.locator(f'.card[data-request-id="{self.pending_id}"]')).to_have_count(0)
        expect(self.outcome()).to_have_attribute("data-request-id", self.pending_id)
        return self.request()

    def outcome(self) -> Locator:
        """The newest settled entry of the room on the page."""
        return settled(self.page, self.room).first

    def decisions(self) -> list[dict[str, Any]]:
        """The request's history entries that record a decision."""
        history = self.desk.run(self.desk.demo.handler.history(self.pending_id))
        return [entry for entry in history if entry["type"] == "decided"]

    def edit_form(self) -> Locator:
        """Open the card's edit panel."""
        self.card.get_by_role("button", name="Edit…").click()
        return self.card.locator(".edit-panel")

    def run_edit(self) -> PendingInput:
        """Send the edit panel's arguments; the request once decided."""
        panel = self.card.locator(".edit-panel")
        panel.get_by_role("button", name="Run with these arguments").click()
        return self.decided()


HoldCall = Callable[..., Held]
"""``hold_call(**options)`` holds a call (:func:`hold`'s options) and opens its card."""


@pytest.fixture
def hold_call(desk: DeskServer, room: str, open_page: OpenPage) -> HoldCall:
    def held(**options: Any) -> Held:
        pending_id = hold(desk, room, **options)
        page = open_page(desk.link(room)).page
        wait_live(page)
        return Held(desk, room, pending_id, page, card(page, "approval"))

    return held


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


def test_someone_who_is_not_an_approver_sees_it_but_cannot_decide(
    desk: DeskServer, room: str, open_page: OpenPage, hold_call: HoldCall
) -> None:
    held = hold_call(approvers=("alice", "bob"))
    pending_id = held.pending_id
    expect(held.card.locator(".waiting")).to_have_text("Waiting for a decision by alice, bob.")
    expect(held.card.get_by_role("button")).to_have_count(0)
    headers = {"Authorization": f"Bearer {desk.token(DEMO_PERSON)}"}
    with httpx.Client(base_url=desk.url, headers=headers) as api:
        answered = api.post(f"/api/requests/{pending_id}/answer", json={"decision": "approve"})
        refused = api.post(f"/api/requests/{pending_id}/reject", json={"reason": "no"})
    assert (answered.status_code, refused.status_code) == (403, 403)
    assert "approvers" in answered.json()["detail"]
    assert held.request().status is PendingInputStatus.PENDING

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
    expect(held.page.locator(".card")).to_have_count(0)
    assert held.request().settled_by == "alice"


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


def test_a_quorum_card_shows_its_progress_and_each_approver_votes(
    desk: DeskServer, room: str, open_page: OpenPage, hold_call: HoldCall
) -> None:
    held = hold_call(approvers=(DEMO_PERSON, "alice", "bob"), quorum=2)
    pending_id = held.pending_id
    progress = held.card.locator(".quorum-progress")
    expect(progress).to_have_text(f"0 of 2 approvals — waiting for {DEMO_PERSON}, alice, bob")
    expect(held.card.get_by_role("button", name="Answer instead…")).to_have_count(0)
    alice = open_page(f"{desk.url}/#token={desk.token('alice')}&room={room}").page
    wait_live(alice)
    theirs = alice.locator(f'.card[data-request-id="{pending_id}"]')
    expect(theirs.locator(".quorum-progress")).to_contain_text("0 of 2 approvals")

    held.card.get_by_role("button", name="Approve").click()
    mine = held.page.locator(f'.card[data-request-id="{pending_id}"]')
    expect(mine.locator(".quorum-progress")).to_have_text(
        "1 of 2 approvals — waiting for alice, bob"
    )
    expect(mine.locator(".waiting")).to_have_text("Your vote is in.")
    expect(mine.get_by_role("button", name="Approve")).to_have_count(0)
    # Alice's card follows the vote through the WebSocket, without a reload.
    expect(theirs.locator(".quorum-progress")).to_have_text(
        "1 of 2 approvals — waiting for alice, bob"
    )
    assert held.request().status is PendingInputStatus.PENDING

    theirs.get_by_role("button", name="Approve").click()
    expect(theirs).to_have_count(0)
    request = held.decided()
    assert request.status is PendingInputStatus.RESOLVED
    assert [vote.actor for vote in request.votes] == [DEMO_PERSON, "alice"]


def test_a_vote_on_arguments_edited_meanwhile_is_refused_and_shows_them(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """The page has not heard of alice's edit (its frame is held back): the Approve button
    names the digest of the arguments the card shows, the desk refuses it, and the card is
    drawn again with the new arguments and why nothing was decided."""
    pending_id = hold(desk, room, approvers=(DEMO_PERSON, "alice", "bob"), quorum=2)
    page = open_page().page

    def hold_back_updates(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        server.on_message(
            lambda message: None if "question_updated" in str(message) else ws.send(message)
        )

    page.route_web_socket("**/api/ws", hold_back_updates)
    page.goto(desk.link(room))
    wait_live(page)
    approval = card(page, "approval")
    edited = {**ARGUMENTS, "amount": 4999}
    assert desk.run(desk.demo.handler.aresolve(pending_id, approvals.edit(edited), by="alice"))
    approval.get_by_role("button", name="Approve").click()
    redrawn = page.locator(f'.card[data-request-id="{pending_id}"]')
    expect(redrawn.locator(".error")).to_contain_text("nothing was decided")
    assert json.loads(redrawn.locator(".arguments").text_content() or "") == edited
    assert [vote.actor for vote in stored(desk, pending_id).votes] == ["alice"]
    redrawn.get_by_role("button", name="Approve").click()
    expect(page.locator(".card")).to_have_count(0)
    request = stored(desk, pending_id)
    assert (request.status, request.arguments) == (PendingInputStatus.RESOLVED, edited)


def test_an_update_the_card_already_shows_keeps_the_edit_the_person_opened(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """A ``question_updated`` frame with the view the card already shows (the desk may send
    one when it looks again) leaves the card alone: the open edit and what was typed stay."""
    hold(desk, room)
    page = open_page().page
    sockets: list[WebSocketRoute] = []
    shown: list[dict[str, Any]] = []

    def pass_through(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def forward(message: str | bytes) -> None:
            frame = json.loads(message)
            if frame.get("type") == "snapshot":
                shown.extend(frame["requests"])
            ws.send(message)

        server.on_message(forward)
        sockets.append(ws)

    page.route_web_socket("**/api/ws", pass_through)
    page.goto(desk.link(room))
    wait_live(page)
    approval = card(page, "approval")
    approval.get_by_role("button", name="Edit…").click()
    amount = approval.locator(".edit-panel input[data-field=amount]")
    amount.fill("130")
    [view] = shown
    sockets[0].send(json.dumps({"type": "question_updated", "request": view}))
    # Frames are handled in order: once the message after it is drawn, the update was handled.
    message = {"id": "marker", "sender_id": "bob", "body": "after the update", "created_at": ""}
    sockets[0].send(json.dumps({"type": "room_message", "room_id": room, "message": message}))
    expect(page.locator('#chat-log [data-message-id="marker"]')).to_have_count(1)
    expect(approval.locator(".edit-panel")).to_be_visible()
    expect(amount).to_have_value("130")


def test_approving_with_the_same_again_makes_a_grant(hold_call: HoldCall) -> None:
    """The box beside Approve grants the same call again for an hour: the next one runs
    unasked."""
    held = hold_call()
    held.card.get_by_label("and the same again for an hour").check()
    held.card.get_by_role("button", name="Approve", exact=True).click()
    assert held.decided().status is PendingInputStatus.RESOLVED
    grants = held.desk.run(held.desk.demo.handler.grants.list(live=True))
    assert [(g.tool, g.granted_by, g.source) for g in grants] == [
        ("transfer_money", (DEMO_PERSON,), held.pending_id)
    ]
    again = stored(held.desk, hold(held.desk, held.room))
    assert again.settled_by == f"grant:{grants[0].grant_id}"
    held.desk.run(held.desk.demo.handler.grants.revoke(grants[0].grant_id))


def test_an_answer_link_approves_without_offering_the_same_again(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """A link speaks for its one question: the grant box is for a person signed in."""
    from roomkit.desk.tokens import issue_answer_link

    pending_id = hold(desk, room)
    token = issue_answer_link(desk.demo.secret, pending_id, DEMO_PERSON)
    page = open_page(f"{desk.url}/#token={token}").page
    approval = card(page, "approval")
    expect(approval.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    expect(approval.get_by_label("and the same again for an hour")).to_have_count(0)
    approval.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#link-outcome")).to_be_visible()
    assert stored(desk, pending_id).status is PendingInputStatus.RESOLVED
