"""An approval held on the demo desk, with its card open on the page: the call's schema and
arguments, how to hold one as the agent's pipeline does, and what a test reads of its card."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from desk_page import settled
from desk_server import DeskServer
from playwright.sync_api import Locator, Page, expect

from roomkit.desk.demo import DEMO_PERSON
from roomkit.models.pending_input import PendingInput

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
