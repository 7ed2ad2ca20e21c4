"""The desk page routes as the handler does: a delegate gets the decision, and whoever sees
the request reads who is deciding while the approver is away.

The desk runs in a thread of its own (uvicorn on a free loopback port) and Debian's
``chromium`` drives its page through Playwright.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Playwright, expect, sync_playwright
from tests.servers.threaded_app import ThreadedApp

from roomkit import RoomKit
from roomkit.auth import issue_token
from roomkit.desk.app import create_desk_app
from roomkit.people import Delegation, Directory, Person, Role, role
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
AWAY = Delegation(
    to="carol",
    starts=datetime(2026, 12, 2, 9, 0, tzinfo=UTC),
    ends=datetime(2026, 12, 12, 9, 0, tzinfo=UTC),
    reason="on leave",
)
LINE = "Alice is away until 12 Dec; Carol is deciding."


async def build_desk(url: str) -> tuple[FastAPI, HumanInputHandler]:
    directory = Directory(
        {"alice": Person(delegations=[AWAY])},
        roles={"kyc": Role(members=["dan", "erin"])},
    )
    handler = HumanInputHandler(directory=directory)
    return create_desk_app(RoomKit(), handler=handler, secret=SECRET), handler


class Served(ThreadedApp):
    """The desk of a handler with a directory, on a loop of its own in a thread."""

    def __init__(self) -> None:
        super().__init__(build_desk)
        assert self.handler.router is not None
        self.handler.router.clock = lambda: NOW

    def page_of(self, actor: str, *, admin: bool = False) -> str:
        return f"{self.url}/#token={issue_token(SECRET, actor, admin=admin)}"


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served()
    yield server
    server.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed (apt-get install chromium)", pytrace=False)
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    driver: Playwright
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=path, args=args, headless=True)
        yield launched
        launched.close()


def test_the_delegate_decides_on_the_page_and_everyone_reads_who_is_deciding(
    served: Served, browser: Browser
) -> None:
    request = served.run(served.handler.create_approval("pay", {"amount": 40}, approvers=["alice"]))
    context = browser.new_context()
    try:
        oversight = context.new_page()
        oversight.goto(served.page_of("ops", admin=True))
        watched = oversight.locator(".card[data-kind=approval]")
        expect(watched.locator(".card-routing")).to_have_text(LINE)
        expect(watched.locator(".waiting")).to_have_text("Waiting for a decision by alice, carol.")
        expect(watched.get_by_role("button", name="Approve")).to_have_count(0)

        page = context.new_page()
        page.goto(served.page_of("carol"))
        card = page.locator(".card[data-kind=approval]")
        expect(card.locator(".card-routing")).to_have_text(LINE)
        card.get_by_role("button", name="Approve").click()
        expect(page.locator(".card[data-kind=approval]")).to_have_count(0)
    finally:
        context.close()
    history = served.run(served.handler.history(request.pending_id))
    [decided] = [entry for entry in history if entry["type"] == "decided"]
    assert (decided["actor"], decided["on_behalf_of"]) == ("carol", "alice")


def test_a_roles_member_gets_the_decision_on_the_page(served: Served, browser: Browser) -> None:
    request = served.run(
        served.handler.create_approval("kyc_check", {"id": 7}, approvers=[role("kyc")])
    )
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(served.page_of("erin"))
        card = page.locator(".card[data-kind=approval]")
        expect(card.locator(".card-routing")).to_have_count(0)
        card.get_by_role("button", name="Approve").click()
        expect(page.locator(".card[data-kind=approval]")).to_have_count(0)
    finally:
        context.close()
    current = served.run(served.handler.get_request(request.pending_id))
    assert current is not None
    assert current.settled_by == "erin"
