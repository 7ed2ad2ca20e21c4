"""The Apprise surface, through the real ``apprise`` library and its ``json://`` scheme, posting
to a receiver on loopback."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from tests.notify.slack_api import free_port

from roomkit._extras import install_command
from roomkit.models.pending_input import PendingInput
from roomkit.notify import Apprise, DeliveryError, Notice, NoticeType, Surface
from roomkit.tools.human_input import HumanInputHandler

LINK = "https://desk.example.com/#token=abc.def"


class Receiver:
    """An HTTP server on loopback that keeps the JSON bodies posted to it."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[str | None] = []
        """Each POST's X-Token header."""
        self.status = 200
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hook", self._take)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"json://127.0.0.1:{port}/hook"

    async def _take(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.json())
        self.headers.append(request.headers.get("X-Token"))
        return web.Response(status=self.status, text="")

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    made = Receiver()
    await made.start()
    yield made
    await made.close()


async def _ask(arguments: dict[str, Any]) -> PendingInput:
    return await HumanInputHandler().create_detached(
        "AskUserQuestion", arguments, room_id="trip", actor_id="alice"
    )


def _notice(request: PendingInput, type: NoticeType = "question_pending", **fields: Any) -> Notice:
    fields.setdefault("recipient", "alice")
    return Notice(type=type, delivery_id="d-1", request=request, **fields)


def test_apprise_is_a_surface_that_reaches_everyone(receiver: Receiver) -> None:
    surface = Apprise(receiver.url)
    assert isinstance(surface, Surface)
    assert surface.name == "apprise"
    assert surface.reaches(None, None)
    assert surface.reaches("alice", None)
    assert repr(Apprise([receiver.url, receiver.url])) == "Apprise(2 URLs)"


@pytest.mark.parametrize(
    ("urls", "words"),
    [
        ([], "at least one Apprise URL"),
        ("nothing-at-all", "URL #1 (no scheme://)"),
        (["json://127.0.0.1/", "nosuchscheme://secret-token@host"], "URL #2 (nosuchscheme://...)"),
        ([42], "URL #1 (not text but int)"),
    ],
)
def test_apprise_refuses_urls_it_cannot_use(urls: Any, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)) as raised:
        Apprise(urls)
    assert "secret-token" not in str(raised.value)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("+X-Token=abc%0D%0AX-Evil:1", "the header 'X-Token' a value that holds a line break"),
        ("+X-Token=abc%0Ax", "the header 'X-Token' a value that holds a line break"),
        ("+X-Token=%E2%82%AC", "the header 'X-Token' a value that holds a letter outside ASCII"),
    ],
)
def test_a_header_in_a_url_that_http_cannot_carry_is_refused(
    receiver: Receiver, query: str, words: str
) -> None:
    """A json:// URL's +Header= parameter decoded to a line break would fail every notice in
    the HTTP client, retried for a day: it is refused when the surface is made, naming it."""
    with pytest.raises(ValueError, match=re.escape(f"URL #1 (json://...) gives {words}")):
        Apprise(f"{receiver.url}?{query}")


async def test_a_header_in_a_url_is_sent(receiver: Receiver) -> None:
    request = await _ask({"question": "Window or aisle?"})
    surface = Apprise(f"{receiver.url}?+X-Token=abc")
    assert await surface.send(_notice(request, answer_url=LINK)) is None
    await surface.aclose()
    assert receiver.headers == ["abc"]


async def test_a_question_is_posted_with_the_desk_link(receiver: Receiver) -> None:
    request = await _ask({"question": "Window or aisle?", "options": ["Window", "Aisle"]})
    surface = Apprise(receiver.url)
    assert await surface.send(_notice(request, answer_url=LINK)) is None
    await surface.aclose()
    [body] = receiver.bodies
    assert body["title"] == "A question for alice: Window or aisle?"
    assert body["message"] == (
        "Window or aisle?\n• Window\n• Aisle\n\nroom trip · AskUserQuestion\n"
        f"Answer in the desk: {LINK}"
    )
    assert body["type"] == "info"


async def test_without_an_answer_link_the_desk_s_address_is_given(receiver: Receiver) -> None:
    request = await _ask({"question": "Any wishes?"})
    await Apprise(receiver.url).send(
        _notice(request, "question_reminder", desk_url="https://desk.example.com")
    )
    [body] = receiver.bodies
    assert body["title"] == "Still waiting: a question for alice: Any wishes?"
    assert body["message"].endswith("Answer in the desk: https://desk.example.com")


async def test_the_ending_is_told_too(receiver: Receiver) -> None:
    handler = HumanInputHandler()
    request = await handler.create_detached(
        "AskUserQuestion", {"question": "Window or aisle?"}, room_id="trip", actor_id="alice"
    )
    assert await handler.aresolve(request.pending_id, "Aisle", by="alice")
    settled = await handler.get_request(request.pending_id)
    assert settled is not None
    notice = _notice(
        settled, "question_settled", outcome="resolved", answered_by="alice", answered_via="slack"
    )
    await Apprise(receiver.url).send(notice)
    [body] = receiver.bodies
    assert body["title"] == "Answered by alice in Slack: Window or aisle?"
    assert body["type"] == "success"


async def test_a_refusing_service_is_worth_retrying(receiver: Receiver) -> None:
    receiver.status = 500
    request = await _ask({"question": "Window or aisle?"})
    with pytest.raises(DeliveryError, match="Apprise could not deliver to every URL") as raised:
        await Apprise(receiver.url).send(_notice(request))
    assert raised.value.retry
    assert "error=500" in str(raised.value)


async def test_an_unreachable_service_is_worth_retrying() -> None:
    request = await _ask({"question": "Window or aisle?"})
    surface = Apprise(f"json://127.0.0.1:{free_port()}/hook")
    with pytest.raises(DeliveryError) as raised:
        await surface.send(_notice(request))
    assert raised.value.retry


def test_roomkit_notify_imports_without_apprise() -> None:
    script = (
        "import sys\n"
        "sys.modules['apprise'] = None\n"
        "import roomkit.notify\n"
        "try:\n"
        "    roomkit.notify.Apprise\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == (
        "roomkit.notify.apprise needs the apprise extra (apprise is not installed): "
        f"{install_command('apprise')}"
    )


async def test_what_would_change_how_the_text_reads_shows_as_replaced(receiver: Receiver) -> None:
    """``Amount: <RLO>0001`` would read ``Amount: 1000``: each bidi override, isolate, mark and
    control character shows as a replacement character, in the title and the body."""
    steering = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\x1b\x85"
    request = await _ask({"question": f"Pay \u202e0001?{steering}", "options": ["\u2067yes"]})
    await Apprise(receiver.url).send(_notice(request, answer_url=LINK))
    [body] = receiver.bodies
    assert body["title"] == "A question for alice: Pay \ufffd0001?" + "\ufffd" * len(steering)
    assert body["message"].startswith(
        "Pay \ufffd0001?" + "\ufffd" * len(steering) + "\n• \ufffdyes"
    )
    assert not any(ch in steering for ch in body["title"] + body["message"])
