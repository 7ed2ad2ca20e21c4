"""What the desk page shows of text a model wrote: nothing in it may change how the rest reads
(``Amount: <RLO>0001`` reads ``Amount: 1000`` in a browser), while what a click sends, and the
request it decides, keep every character. The Edit form shows such characters marked
(``⟨U+202E⟩``) with a warning; a field left alone goes back as it came, a changed one as typed."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from approval_cards import ARGUMENTS as PLAIN_ARGUMENTS
from approval_cards import SCHEMA, Held, hold
from desk_page import OpenPage, card, settled, wait_live
from desk_server import DeskServer
from playwright.sync_api import Locator, expect

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


EDIT_SCHEMA: dict[str, Any] = {
    **SCHEMA,
    "properties": {**SCHEMA["properties"], "due": {"type": "string", "format": "date"}},
}
EDIT_ARGUMENTS: dict[str, Any] = {
    **PLAIN_ARGUMENTS,
    "to": "bob\u202e0001",
    "tags": ["\u2067rent\u2069", "march"],
    # A text input drops a carriage return: left in the field, the memo would change.
    "memo": {"text": "March\r\x85rent"},
    "due": "2026-03-01",
}
MARKED_TO = "bob\u27e8U+202E\u27e90001"
WARNING = "invisible direction or control characters"
FIELD_VALUES = """form => Array.from(form.querySelectorAll('input, textarea'))
  .map(field => field.value)"""


def open_edit(
    desk: DeskServer, room: str, open_page: OpenPage, arguments: dict[str, Any]
) -> tuple[Held, Locator]:
    """An approval of ``arguments`` held and its card's edit form open."""
    pending_id = hold(desk, room, arguments=arguments, schema=EDIT_SCHEMA)
    page = open_page(desk.link(room)).page
    wait_live(page)
    held = Held(desk, room, pending_id, page, card(page, "approval"))
    return held, held.edit_form()


def warning_of(form: Locator, field: str) -> Locator:
    """The warning beside the input or text area named ``field``."""
    control = form.page.locator(f"[data-field={field}]")
    return form.locator("label.field", has=control).locator(".field-warning")


def test_the_edit_form_marks_steering_characters_and_warns_beside_them(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """Each steering character shows as its code point, in the input and the text area, with a
    warning beside the field; the fields without any look and behave as before."""
    _, form = open_edit(desk, room, open_page, EDIT_ARGUMENTS)
    expect(form.locator("input[data-field=to]")).to_have_value(MARKED_TO)
    expect(form.locator("textarea[data-field=tags]")).to_have_value(
        "\u27e8U+2067\u27e9rent\u27e8U+2069\u27e9\nmarch"
    )
    expect(form.locator("input[data-field=text]")).to_have_value(
        "March\u27e8U+000D\u27e9\u27e8U+0085\u27e9rent"
    )
    for field in ("to", "tags", "text"):
        expect(warning_of(form, field)).to_be_visible()
        expect(warning_of(form, field)).to_contain_text(WARNING)
    expect(form.locator(".field-warning")).to_have_count(3)
    expect(form.locator("input[data-field=due]")).to_have_attribute("type", "date")
    expect(form.locator("input[data-field=due]")).to_have_value("2026-03-01")
    expect(form.locator("input[data-field=amount]")).to_have_value("120")
    values: list[str] = form.evaluate(FIELD_VALUES)
    assert [steered(value) for value in values if steered(value)] == []


def test_an_edit_of_another_field_sends_the_marked_ones_as_they_came(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """The desk records the untouched fields with every character, and the digest of exactly
    those arguments."""
    held, form = open_edit(desk, room, open_page, EDIT_ARGUMENTS)
    form.locator("input[data-field=amount]").fill("300")
    request = held.run_edit()
    edited = {**EDIT_ARGUMENTS, "amount": 300}
    assert request.result == approvals.edit(edited)
    [decision] = held.decisions()
    assert (decision["decision"], decision["arguments"]) == ("edit", edited)
    assert decision["digest"] == arguments_digest("transfer_money", edited)


def test_a_marked_field_the_person_changes_sends_what_they_typed(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """The marks typed back stay text: no steering character goes out of a changed field."""
    held, form = open_edit(desk, room, open_page, EDIT_ARGUMENTS)
    form.locator("input[data-field=to]").fill(MARKED_TO + "2")
    form.locator("textarea[data-field=tags]").fill("rent\nmarch")
    request = held.run_edit()
    edited = {**EDIT_ARGUMENTS, "to": MARKED_TO + "2", "tags": ["rent", "march"]}
    assert request.result == approvals.edit(edited)
    [decision] = held.decisions()
    assert decision["arguments"] == edited


def test_the_json_editor_writes_steering_characters_as_escapes_and_warns(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    """Escaped, the JSON shows every character and reads back to the same arguments."""
    held, form = open_edit(desk, room, open_page, EDIT_ARGUMENTS)
    form.get_by_role("button", name="Edit as JSON").click()
    editor = form.get_by_label("Arguments as JSON")
    written = editor.input_value()
    assert steered(written) == []
    assert '"bob\\u202e0001"' in written
    assert json.loads(written) == EDIT_ARGUMENTS
    expect(form.locator(".field-warning")).to_contain_text(WARNING)
    editor.fill(written.replace('"amount": 120', '"amount": 300'))
    assert held.run_edit().result == approvals.edit({**EDIT_ARGUMENTS, "amount": 300})


def test_an_edit_form_without_steering_characters_shows_no_warning(
    desk: DeskServer, room: str, open_page: OpenPage
) -> None:
    _, form = open_edit(desk, room, open_page, PLAIN_ARGUMENTS)
    expect(form.locator("input[data-field=to]")).to_have_value("bob")
    expect(form.locator("textarea[data-field=tags]")).to_have_value("rent\nmarch")
    form.get_by_role("button", name="Edit as JSON").click()
    assert json.loads(form.get_by_label("Arguments as JSON").input_value()) == PLAIN_ARGUMENTS
    expect(form.locator(".field-warning")).to_have_count(0)
