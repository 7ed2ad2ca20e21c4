"""Who decides an approval on the desk page: an actor who is no approver, a decision on a
request settled meanwhile, a quorum's votes and arguments edited between them, and a grant
made by approving with the same again."""

from __future__ import annotations

import json
from typing import Any

import httpx
from approval_cards import ARGUMENTS, HoldCall, hold, stored
from desk_page import OpenPage, card, settled, wait_live
from desk_server import DeskServer
from playwright.sync_api import WebSocketRoute, expect

from roomkit.desk.demo import DEMO_PERSON
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools import approvals


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
    expect(outcome.locator(".settled-how")).to_have_text("Already approved by alice")
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
