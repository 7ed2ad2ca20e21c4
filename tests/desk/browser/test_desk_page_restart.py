"""The open page rides out a restart of the demo: it reconnects, keeps the question, and
answering it carries the conversation on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from desk_page import OpenPage, card, say, wait_live
from playwright.sync_api import expect

RECONNECT_MS = 20_000

Demo = subprocess.Popen[str]


@contextmanager
def running_demo(
    data_dir: Path, port: int, log: Path
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The demo as a subprocess on ``port`` (0: any); yields it and the link it printed."""
    with (
        log.open("a") as errors,
        subprocess.Popen(
            [sys.executable, "-m", "roomkit.desk.demo", "--data-dir", str(data_dir)],
            env={**os.environ, "PORT": str(port), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""},
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        ) as process,
    ):
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith("Open http://"), log.read_text()
            yield process, line.removeprefix("Open ").strip()
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                process.wait(timeout=30)


def test_the_page_follows_the_demo_through_a_sigkill(tmp_path: Path, open_page: OpenPage) -> None:
    data, log = tmp_path / "data", tmp_path / "demo.log"
    with running_demo(data, 0, log) as (first, link):
        page = open_page(link).page
        wait_live(page)
        say(page, "Plan a trip")
        card(page, "question").get_by_role("button", name="Mountain hiking").click()
        asked = card(page, "question")
        expect(asked).to_contain_text("Mountain hiking it is. Where would you like to go?")
        request_id = asked.get_attribute("data-request-id")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        expect(page.locator("#link-state")).not_to_have_text("live")

    port = urlsplit(link).port
    assert port is not None
    with running_demo(data, port, log):
        expect(page.locator("#link-state")).to_have_text("live", timeout=RECONNECT_MS)
        still = card(page, "question")
        assert still.get_attribute("data-request-id") == request_id
        still.get_by_label("Your answer").fill("The Alps")
        still.get_by_role("button", name="Answer").click()
        expect(card(page, "question")).to_contain_text("What should I include?")
        expect(page.locator(".settled-how")).to_have_text(["Answered by you", "Answered by you"])
        expect(page.locator(".message.mine .message-body")).to_have_text(["Plan a trip"])
    assert "Traceback" not in log.read_text()


RECORD_RETRIES = """
window.__retryDelays = [];
var realSetTimeout = window.setTimeout.bind(window);
window.setTimeout = function (callback, delay) {
  window.__retryDelays.push(delay);
  return realSetTimeout.apply(window, arguments);
};
"""
"""Records the delay of every timer the page sets (its only timers are the reconnects)."""
RETRIES = 5
"""Reconnects in a row the test lets the page make on a desk that is away."""
MAX_DELAY_MS = 2000
"""The longest the page may wait before it tries the desk again."""


def test_the_page_retries_within_2_s_however_long_the_desk_was_away(
    tmp_path: Path, open_page: OpenPage
) -> None:
    data, log = tmp_path / "data", tmp_path / "demo.log"
    with running_demo(data, 0, log) as (first, link):
        opened = open_page()
        page = opened.page
        # The page's clock runs on as a real one, but the test may run it ahead.
        page.clock.install()
        page.add_init_script(RECORD_RETRIES)
        page.goto(link)
        wait_live(page)
        first.send_signal(signal.SIGINT)
        first.wait(timeout=30)
        # Five attempts in a row on a desk that is away: the backoff has reached its cap.
        # Each wait the page sets is run ahead, once set, rather than sat out.
        for attempts in range(1, RETRIES + 1):
            page.wait_for_function(
                "n => window.__retryDelays.length >= n", arg=attempts, timeout=RECONNECT_MS
            )
            page.clock.fast_forward(MAX_DELAY_MS)
        delays = page.evaluate("window.__retryDelays")
    assert len(delays) >= RETRIES, delays
    assert max(delays) < MAX_DELAY_MS, delays

    port = urlsplit(link).port
    assert port is not None
    with running_demo(data, port, log):
        expect(page.locator("#link-state")).to_have_text("live")
