"""What a person does on the desk page, as the page tests say it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from playwright.sync_api import Locator, Page, expect

ARTIFACTS = "test-artifacts"

TRAP = """
window.__xssCalls = 0;
Object.defineProperty(window, '__xss', {
  value: function () { window.__xssCalls += 1; },
  writable: false,
  configurable: false,
});
"""


@dataclass
class OpenedPage:
    """A page of the desk, with what its traps caught."""

    page: Page
    """The Playwright page."""
    dialogs: list[str] = field(default_factory=list)
    """The messages of the dialogs the page opened (each dismissed)."""
    console_errors: list[str] = field(default_factory=list)
    """Console errors (a CSP violation shows up here)."""
    frames: list[str] = field(default_factory=list)
    """Every WebSocket frame the page received."""

    def xss_calls(self) -> int:
        """How many times a payload reached ``window.__xss()``."""
        calls: int = self.page.evaluate("window.__xssCalls")
        return calls


OpenPage = Callable[..., OpenedPage]

TRIP_ANSWERS = {
    "Dates": "Next month",
    "Budget": "500-1500 EUR",
    "Travellers": "Two of us",
}


def wait_live(page: Page) -> None:
    """Wait until the page is signed in and its WebSocket has its snapshot."""
    expect(page.locator("#link-state")).to_have_text("live")


def say(page: Page, text: str) -> None:
    """Send ``text`` to the agent from the chat panel."""
    page.locator("#chat-input").fill(text)
    page.locator("#chat-form").get_by_role("button", name="Send").click()


def card(page: Page, kind: str) -> Locator:
    """The one open question of ``kind`` (waits for it to be alone on the page)."""
    cards = page.locator(f".card[data-kind={kind}]")
    expect(cards).to_have_count(1)
    return cards


def settled(page: Page, room: str) -> Locator:
    """The page's recently settled entries of ``room``, newest first (the person's history
    holds other rooms' too)."""
    return page.locator(f'.settled[data-room-id="{room}"]')


def last_reply(page: Page) -> Locator:
    """The agent's latest chat message."""
    return page.locator(".message:not(.mine) .message-body").last


def walk_to_booking(page: Page, *, kind: str = "City break", place: str = "Lisbon") -> None:
    """Start a plan in the chat and answer the four questions before the booking, which
    waits for the person's approval."""
    say(page, "Plan a trip for me")
    card(page, "question").get_by_role("button", name=kind).click()
    free = card(page, "question")
    expect(free).to_contain_text("Where would you like to go?")
    free.get_by_label("Your answer").fill(place)
    free.get_by_role("button", name="Answer").click()
    several = card(page, "question")
    expect(several).to_contain_text("What should I include?")
    several.get_by_label("Flights").check()
    several.get_by_label("Hotel").check()
    several.get_by_role("button", name="Answer").click()
    plan = card(page, "questions")
    for label in TRIP_ANSWERS.values():
        plan.get_by_label(label, exact=True).check()
    plan.get_by_role("button", name="Answer").click()
    expect(card(page, "approval").locator(".tool-name")).to_have_text("book_trip")
