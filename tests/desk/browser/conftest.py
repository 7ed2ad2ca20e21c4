"""Fixtures for the page tests: the demo desk on a free port, and a headless Chromium.

The browser is Debian's ``chromium`` driven by Playwright (the Playwright browser download
is not used). A page opened through :func:`open_page` carries a trap: ``window.__xss()``
counts its calls, and every dialog is recorded and dismissed. When a test fails, each of
its pages is saved as a screenshot in ``test-artifacts/``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from approval_cards import Held, HoldCall, hold
from desk_page import ARTIFACTS, TRAP, OpenedPage, OpenPage, card, wait_live
from desk_server import DeskServer
from playwright.sync_api import Browser, BrowserContext, Playwright, sync_playwright


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of Debian's chromium; the tests fail (never skip) without it."""
    path = shutil.which("chromium")
    if path is None:
        pytest.fail(
            "chromium is not installed: run `make test`, which installs it "
            "(apt-get install chromium)",
            pytrace=False,
        )
    return path


# Module scope, not session: while Playwright's synchronous driver runs, the main thread
# counts as running an event loop, which the async tests of other modules cannot share.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright, chromium: str) -> Iterator[Browser]:
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    launched = playwright.chromium.launch(executable_path=chromium, args=args, headless=True)
    yield launched
    launched.close()


@pytest.fixture(scope="session")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeskServer]:
    """The demo desk (agent, chat, SQLite stores) shared by the page tests."""
    server = DeskServer(tmp_path_factory.mktemp("demo-data"))
    yield server
    server.close()


@pytest.fixture
def room(desk: DeskServer) -> Iterator[str]:
    """A room of this test's own, with the agent and ``demo-user`` in it.

    Its questions still open at the end are withdrawn, so the next test's page shows only
    its own.
    """
    room_id = desk.new_room()
    yield room_id
    desk.withdraw_open(room_id)


@pytest.fixture
def opened_pages() -> list[OpenedPage]:
    """Every page the test opened (the failure hook screenshots them)."""
    return []


@pytest.fixture
def open_page(browser: Browser, opened_pages: list[OpenedPage]) -> Iterator[OpenPage]:
    """``open_page(url, **context_options)``: a fresh browser context on ``url``."""
    contexts: list[BrowserContext] = []

    def open_(url: str | None = None, **options: Any) -> OpenedPage:
        context = browser.new_context(**options)
        contexts.append(context)
        context.add_init_script(TRAP)
        opened = OpenedPage(context.new_page())
        opened_pages.append(opened)
        page = opened.page

        def on_dialog(dialog: Any) -> None:
            opened.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on(
            "console",
            lambda message: (
                opened.console_errors.append(message.text) if message.type == "error" else None
            ),
        )
        page.on(
            "websocket",
            lambda ws: ws.on("framereceived", lambda frame: opened.frames.append(str(frame))),
        )
        if url is not None:
            page.goto(url)
        return opened

    yield open_
    for context in contexts:
        context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        pages: list[OpenedPage] = getattr(item, "funcargs", {}).get("opened_pages") or []
        folder = Path(item.config.rootpath) / ARTIFACTS
        folder.mkdir(exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid)
        for index, opened in enumerate(pages):
            try:
                opened.page.screenshot(path=folder / f"{name}-{index}.png", full_page=True)
            except Exception as error:  # a closed page must not hide the test's own failure
                report.sections.append(("screenshot", f"page {index}: {error!r}"))
    return report


@pytest.fixture
def hold_call(desk: DeskServer, room: str, open_page: OpenPage) -> HoldCall:
    def held(**options: Any) -> Held:
        pending_id = hold(desk, room, **options)
        page = open_page(desk.link(room)).page
        wait_live(page)
        return Held(desk, room, pending_id, page, card(page, "approval"))

    return held
