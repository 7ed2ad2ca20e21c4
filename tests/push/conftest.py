"""Fixtures for the push page tests: the desk of :mod:`tests.push.push_page` on a free port,
and a headless Chromium."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright, sync_playwright
from tests.push.push_page import Served


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path)
    yield server
    server.close()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed (apt-get install chromium)", pytrace=False)
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    launched = playwright.chromium.launch(executable_path=path, args=args, headless=True)
    yield launched
    launched.close()
