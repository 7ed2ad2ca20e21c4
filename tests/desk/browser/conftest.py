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


class _Tab:
    """A tab whose events go to the test's :class:`OpenedPage` of the moment."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self.page = context.new_page()
        self.opened: OpenedPage | None = None
        self.page.on("dialog", self._on_dialog)
        self.page.on("console", self._on_console)
        self.page.on("websocket", self._on_websocket)

    def open(self) -> OpenedPage:
        self.opened = OpenedPage(self.page)
        return self.opened

    def _on_dialog(self, dialog: Any) -> None:
        if self.opened is not None:
            self.opened.dialogs.append(dialog.message)
        dialog.dismiss()

    def _on_console(self, message: Any) -> None:
        if self.opened is not None and message.type == "error":
            self.opened.console_errors.append(message.text)

    def _on_websocket(self, ws: Any) -> None:
        # A socket's frames belong to the test whose page opened it.
        if (opened := self.opened) is not None:
            ws.on("framereceived", lambda frame: opened.frames.append(str(frame)))


def _new_tab(browser: Browser, **options: Any) -> _Tab:
    context = browser.new_context(**options)
    context.add_init_script(TRAP)
    return _Tab(context)


@pytest.fixture(scope="module")
def module_tabs(browser: Browser) -> Iterator[list[_Tab]]:
    """The module's reusable tabs, each in a browser context of its own (made on first use;
    one is dropped after a test that failed).

    Loading the page in a tab the browser already runs costs a fraction of a new context:
    no renderer process to start. Between tests each tab is emptied (its sessionStorage, where
    the page keeps the token and the room, cleared) and left on ``about:blank``, so every test
    starts from a fresh load with nothing of the last one.
    """
    tabs: list[_Tab] = []
    yield tabs
    for tab in tabs:
        tab.context.close()


_failed = pytest.StashKey[bool]()


@pytest.fixture
def open_page(
    request: pytest.FixtureRequest,
    browser: Browser,
    module_tabs: list[_Tab],
    opened_pages: list[OpenedPage],
) -> Iterator[OpenPage]:
    """``open_page(url, **context_options)``: the page on ``url``.

    A page on a URL with no context options is one of the module's tabs, a tab the test has
    not taken yet; any other (options, or no URL so that the test can set the page up before
    it loads) has a fresh browser context of its own.
    """
    contexts: list[BrowserContext] = []
    taken: list[_Tab] = []

    def open_(url: str | None = None, **options: Any) -> OpenedPage:
        if url is not None and not options:
            if len(module_tabs) == len(taken):
                module_tabs.append(_new_tab(browser))
            tab = module_tabs[len(taken)]
            taken.append(tab)
        else:
            tab = _new_tab(browser, **options)
            contexts.append(tab.context)
        opened = tab.open()
        opened_pages.append(opened)
        if url is not None:
            opened.page.goto(url)
        return opened

    yield open_
    for context in contexts:
        context.close()
    passed = not request.node.stash.get(_failed, True)
    for tab in taken:
        tab.opened = None
        if not (passed and _emptied(tab)):
            # Whatever state a failed test left the tab in, the next test gets a new one.
            module_tabs.remove(tab)
            tab.context.close()


def _emptied(tab: _Tab) -> bool:
    """Clear the tab's sessionStorage and leave it on ``about:blank``; whether it could."""
    try:
        tab.page.evaluate("() => { try { sessionStorage.clear(); } catch (e) {} }")
        tab.page.goto("about:blank")
    except Exception:  # a crashed or closed tab: the caller drops it
        return False
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_failed] = report.failed
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
