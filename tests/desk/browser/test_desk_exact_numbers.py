"""Integers past 2^53 and floats such as ``1.0`` on the desk page: shown with every digit, and
sent back as they came by an edit that leaves them alone (through the form and the JSON
editor), so the tool runs with the numbers the person saw, of the type it sent."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from desk_page import OpenPage, card, wait_live
from desk_server import DeskServer
from playwright.sync_api import Locator, Page, expect

from roomkit.desk.demo import DEMO_PERSON
from roomkit.models.pending_input import PendingInput

ACCOUNT = 12345678901234567890
"""Past 2^53: JSON.parse reads it as 12345678901234567000."""
DEBT = -98765432109876543210
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "account": {"type": "integer", "title": "Account"},
        "debt": {"type": "integer"},
        "refs": {"type": "array", "items": {"type": "integer"}},
        "amount": {"type": "number"},
        "to": {"type": "string"},
    },
    "required": ["account", "amount", "to"],
}
ARGUMENTS: dict[str, Any] = {
    "account": ACCOUNT,
    "debt": DEBT,
    "refs": [9007199254740993, 7],
    "amount": 120,
    "to": "bob",
}


@dataclass
class Held:
    desk: DeskServer
    pending_id: str
    page: Page
    card: Locator

    def decided(self) -> PendingInput:
        """The request once the page has taken its card away."""
        gone = self.page.locator(f'.card[data-request-id="{self.pending_id}"]')
        expect(gone).to_have_count(0)
        request = self.desk.run(self.desk.demo.handler.get_request(self.pending_id))
        assert request is not None
        return request


@pytest.fixture
def held(desk: DeskServer, room: str, open_page: OpenPage) -> Held:
    request = desk.run(
        desk.demo.handler.create_approval(
            "pay",
            dict(ARGUMENTS),
            approvers=(DEMO_PERSON,),
            tool_schema=SCHEMA,
            room_id=room,
            actor_id=DEMO_PERSON,
            channel_id="agent",
        )
    )
    page = open_page(desk.link(room)).page
    wait_live(page)
    return Held(desk, request.pending_id, page, card(page, "approval"))


def digits(text: str | None) -> str:
    """The digits and sign of a number as the page writes it (grouped for the locale)."""
    return re.sub(r"[^0-9-]", "", text or "")


def test_the_card_shows_every_digit(held: Held) -> None:
    table = held.card.locator(".argument-table")
    assert digits(table.locator("tr[data-field=account] td").text_content()) == str(ACCOUNT)
    assert digits(table.locator("tr[data-field=debt] td").text_content()) == str(DEBT)
    refs = table.locator("tr[data-field=refs] td").text_content() or ""
    assert [digits(ref) for ref in refs.split(", ")] == ["9007199254740993", "7"]
    raw = held.card.locator(".arguments").text_content() or ""
    assert json.loads(raw) == ARGUMENTS


def test_an_edit_through_the_form_keeps_the_integers_it_left(held: Held) -> None:
    held.card.get_by_role("button", name="Edit…").click()
    form = held.card.locator(".edit-panel")
    expect(form.locator("input[data-field=account]")).to_have_value(str(ACCOUNT))
    expect(form.locator("textarea[data-field=refs]")).to_have_value("9007199254740993\n7")
    form.locator("input[data-field=amount]").fill("80")
    form.get_by_role("button", name="Run with these arguments").click()
    result = json.loads(held.decided().result or "")
    assert result == {"decision": "edit", "arguments": {**ARGUMENTS, "amount": 80}}


def test_an_integer_typed_in_the_form_is_sent_as_typed(held: Held) -> None:
    held.card.get_by_role("button", name="Edit…").click()
    form = held.card.locator(".edit-panel")
    form.locator("input[data-field=debt]").fill("18446744073709551617")
    form.get_by_role("button", name="Run with these arguments").click()
    result = json.loads(held.decided().result or "")
    assert result["arguments"] == {**ARGUMENTS, "debt": 18446744073709551617}


def test_an_edit_as_json_keeps_the_integers_it_left(held: Held) -> None:
    held.card.get_by_role("button", name="Edit…").click()
    form = held.card.locator(".edit-panel")
    form.get_by_role("button", name="Edit as JSON").click()
    editor = form.get_by_label("Arguments as JSON")
    written = editor.input_value()
    assert json.loads(written) == ARGUMENTS
    editor.fill(written.replace('"bob"', '"carol"'))
    form.get_by_role("button", name="Run with these arguments").click()
    result = json.loads(held.decided().result or "")
    assert result["arguments"] == {**ARGUMENTS, "to": "carol"}


def test_approve_leaves_the_form_untouched_and_runs_the_arguments_shown(held: Held) -> None:
    """An edit form opened and left as shown is no change: Approve approves."""
    held.card.get_by_role("button", name="Edit…").click()
    held.card.get_by_role("button", name="Approve").click()
    assert json.loads(held.decided().result or "") == {"decision": "approve"}


FLOAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "minimum": 0.0, "maximum": 5e3},
        "fee": {"type": "number"},
        "scale": {"type": "number"},
        "tiny": {"type": "number"},
        "rates": {"type": "array", "items": {"type": "number"}},
        "count": {"type": "integer", "minimum": 1.0},
        "to": {"type": "string"},
    },
    "required": ["amount", "to"],
}
FLOATS: dict[str, Any] = {
    "amount": 1.0,
    "fee": -0.0,
    "scale": 1e16,
    "tiny": 1e-07,
    "rates": [2.0, 0.5],
    "count": 3,
    "to": "bob",
}
"""Floats JSON.parse would read as numbers JavaScript writes otherwise: ``1.0`` as ``1``,
``-0.0`` as ``0``, ``1e+16`` as ``10000000000000000``, ``1e-07`` as ``1e-7``."""


def written(value: Any) -> str:
    """``value`` as JSON, a float told from an int (``1.0`` is not ``1``)."""
    return json.dumps(value, sort_keys=True)


@pytest.fixture
def held_floats(desk: DeskServer, room: str, open_page: OpenPage) -> Held:
    request = desk.run(
        desk.demo.handler.create_approval(
            "pay",
            dict(FLOATS),
            approvers=(DEMO_PERSON,),
            tool_schema=FLOAT_SCHEMA,
            room_id=room,
            actor_id=DEMO_PERSON,
            channel_id="agent",
        )
    )
    page = open_page(desk.link(room)).page
    wait_live(page)
    return Held(desk, request.pending_id, page, card(page, "approval"))


def test_an_edit_through_the_form_sends_the_floats_it_left_as_they_came(
    held_floats: Held,
) -> None:
    held = held_floats
    held.card.get_by_role("button", name="Edit…").click()
    form = held.card.locator(".edit-panel")
    expect(form.locator("input[data-field=amount]")).to_have_value("1.0")
    form.locator("input[data-field=to]").fill("carol")
    form.get_by_role("button", name="Run with these arguments").click()
    result = json.loads(held.decided().result or "")
    assert written(result["arguments"]) == written({**FLOATS, "to": "carol"})


def test_an_edit_as_json_sends_the_floats_it_left_as_they_came(held_floats: Held) -> None:
    held = held_floats
    held.card.get_by_role("button", name="Edit…").click()
    form = held.card.locator(".edit-panel")
    form.get_by_role("button", name="Edit as JSON").click()
    editor = form.get_by_label("Arguments as JSON")
    text = editor.input_value()
    assert '"amount": 1.0' in text
    editor.fill(text.replace('"bob"', '"carol"'))
    form.get_by_role("button", name="Run with these arguments").click()
    result = json.loads(held.decided().result or "")
    assert written(result["arguments"]) == written({**FLOATS, "to": "carol"})


def test_schema_bounds_written_as_floats_still_check_the_form(held_floats: Held) -> None:
    held = held_floats
    held.card.get_by_role("button", name="Edit…").click()
    form = held.card.locator(".edit-panel")
    form.locator("input[data-field=amount]").fill("-1")
    form.locator("input[data-field=count]").fill("0")
    form.get_by_role("button", name="Run with these arguments").click()
    expect(held.card.locator(".error[role=alert]")).to_have_text(
        "Fix the edit first: amount must be at least 0; count must be at least 1."
    )
    form.locator("input[data-field=amount]").fill("2.50")
    form.locator("input[data-field=count]").fill("4")
    form.get_by_role("button", name="Run with these arguments").click()
    result = json.loads(held.decided().result or "")
    assert written(result["arguments"]) == written({**FLOATS, "amount": 2.5, "count": 4})
