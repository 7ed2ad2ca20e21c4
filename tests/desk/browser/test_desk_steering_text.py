"""What the desk page shows of text a model wrote: nothing in it may change how the rest reads
(``Amount: <RLO>0001`` reads ``Amount: 1000`` in a browser), while what a click sends, and the
request it decides, keep every character."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from desk_page import OpenPage, card, settled, wait_live
from desk_server import DeskServer
from playwright.sync_api import expect
from test_desk_approvals_page import Held, hold

from roomkit.desk.demo import DEMO_PERSON
from roomkit.models.pending_input import PendingInputStatus, arguments_digest
from roomkit.notify.wording import STEERING
from roomkit.tools import approvals

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
CONTROLS = "".join(chr(c) for c in [*range(0x01, 0x09), *range(0x0B, 0x20), 0x7F, 0x85, 0x9F])
ARGUMENTS: dict[str, Any] = {
    "to": "bob",
    "amount": "\u202e0001",
    "memo": {"text": f"ok{BIDI}{CONTROLS}done"},
    "tags": ["\u2067rent\u2069", "march"],
}
SHOWN_TEXT = """node => Array.from(node.querySelectorAll('*'))
  .filter(child => child.children.length === 0)
  .map(child => child.textContent)
  .join('\\n')"""


def steered(text: str) -> list[str]:
    """The characters of ``text`` that would change how it reads."""
    return [f"U+{ord(ch):04X}" for ch in text if ch in BIDI + CONTROLS]


def test_the_page_keeps_the_rule_every_notification_surface_uses() -> None:
    dom = files("roomkit.desk") / "static" / "dom.js"
    assert f"/{STEERING.pattern}/g" in dom.read_text(encoding="utf-8")


def test_an_approval_shows_steering_characters_as_replaced_and_runs_as_stored(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """The card's tool name, table and raw JSON show ``Amount: �0001``; Approve decides on the
    arguments as stored, the digest unchanged."""
    pending_id = hold(desk, room, tool="pay\u202e", arguments=ARGUMENTS, schema={"type": "object"})
    page = open_page(desk.link(room)).page
    wait_live(page)
    approval = card(page, "approval")
    approval.locator(".raw-arguments").get_by_text("Show as JSON").click()
    expect(approval.locator(".raw-arguments .arguments")).to_be_visible()
    shown: str = approval.evaluate(SHOWN_TEXT)
    assert steered(shown) == []
    expect(approval.locator(".tool-name")).to_have_text("pay\ufffd")
    assert "\ufffd0001" in shown
    assert "\ufffdrent\ufffd" in shown
    approval.get_by_role("button", name="Approve", exact=True).click()
    held = Held(desk, room, pending_id, page, approval)
    request = held.decided()
    assert (request.status, request.result) == (PendingInputStatus.RESOLVED, approvals.approve())
    assert (request.tool_name, request.arguments) == ("pay\u202e", ARGUMENTS)
    assert request.arguments_digest == arguments_digest("pay\u202e", ARGUMENTS)
    assert steered(held.outcome().evaluate(SHOWN_TEXT)) == []


def test_an_option_shows_as_replaced_and_answers_as_written(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    question = f"Pay \u202e0001?{CONTROLS}"
    request = desk.run(
        desk.demo.handler.create_detached(
            "AskUserQuestion",
            {"question": question, "options": ["\u202eyes", "no\u200f"]},
            room_id=room,
            actor_id=DEMO_PERSON,
        )
    )
    page = open_page(desk.link(room)).page
    wait_live(page)
    asked = card(page, "question")
    shown: str = asked.evaluate(SHOWN_TEXT)
    assert steered(shown) == []
    assert "Pay \ufffd0001?" in shown
    choices = asked.locator(".choice")
    expect(choices).to_have_text(["\ufffdyes", "no\ufffd"])
    choices.first.click()
    expect(settled(page, room).first).to_have_attribute("data-request-id", request.pending_id)
    answered = desk.run(desk.demo.handler.get_request(request.pending_id))
    assert answered is not None
    assert (answered.result, answered.arguments["question"]) == ("\u202eyes", question)
    assert steered(settled(page, room).first.evaluate(SHOWN_TEXT)) == []
