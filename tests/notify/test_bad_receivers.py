"""Receivers that fail: each failed attempt is one log line, and no traceback."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest
from tests.notify.misbehaving import GARBAGE, Misbehaving
from tests.notify.receiver import SECRET, Receiver

from roomkit.notify import Notifier, Retry, Webhook
from roomkit.tools.human_input import HumanInputHandler


class Watch(logging.Handler):
    """Keeps the notifier's records, and says when one at warning or above came."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.warned = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if record.levelno >= logging.WARNING:
            self.warned.set()


@pytest.fixture
def watch() -> Any:
    found = Watch()
    log = logging.getLogger("roomkit.notify")
    log.addHandler(found)
    yield found
    log.removeHandler(found)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("how", ["500", "reset", "tls", "refused", "timeout", *GARBAGE])
async def test_a_receivers_failure_is_one_line_without_a_traceback(how: str, watch: Watch) -> None:
    """Refused, reset, timed out, a 500, TLS that does not verify, answers that are not
    HTTP: each attempt is one line saying what went wrong, and no traceback."""
    handler = HumanInputHandler()
    release = asyncio.Event()

    async def hold(attempt: int) -> None:
        await release.wait()

    async with Misbehaving(how if how in ("500", "reset", "tls", *GARBAGE) else "500") as bad:
        url = bad.url
        if how == "refused":
            url = f"http://127.0.0.1:{closed_port()}/hooks"
        async with Receiver(before_reply=hold) as hanging:
            if how == "timeout":
                url = hanging.url
            timeout = 0.2 if how == "timeout" else 10.0
            webhook = Webhook(url, SECRET, retry=Retry(first=60.0), timeout=timeout)
            async with Notifier(handler, [webhook]) as notifier:
                await handler.create("ask", {"question": "Anyone there?"}, actor_id="alice")
                await watch.warned.wait()
            release.set()
    assert notifier.statistics().failed["webhook"] == 1
    [line] = [r for r in watch.records if r.levelno >= logging.WARNING]
    assert line.exc_info is None
    message = line.getMessage()
    assert "\n" not in message
    assert f"webhook {url} " in message
    assert "retrying in" in message
