"""The desk inside your own FastAPI app: ``mount_desk`` serves the page, the chat and the API
under a path of the app, signs people in with the app's own accounts, and starts and stops
with the app."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn
from desk_page import OpenPage
from fastapi import FastAPI
from playwright.sync_api import expect

from roomkit import RoomKit
from roomkit.auth import Principal
from roomkit.core.exceptions import DeskAuthError
from roomkit.desk import mount_desk
from roomkit.tools.human_input import HumanInputHandler

T = TypeVar("T")
SESSIONS = {"session-of-alice": "alice"}
"""The app's own sign-ins: a session id to its person."""


class AppSessions:
    """The app's own accounts: a session id, as its pages hold it, speaks for its person."""

    async def authenticate(self, token: str) -> Principal:
        actor = SESSIONS.get(token)
        if actor is None:
            raise DeskAuthError("not signed in to the app")
        return Principal(actor)


class Served:
    """An ASGI app on ``127.0.0.1:<free port>``, on a loop of its own in a thread."""

    def __init__(self, build: Coroutine[Any, Any, tuple[FastAPI, HumanInputHandler]]) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="app-server")
        self._thread.start()
        self.app, self.handler = self.run(build)
        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        listening.listen(64)
        self.url = f"http://127.0.0.1:{listening.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_config=None, lifespan="on"))
        self._serving = asyncio.run_coroutine_threadsafe(
            self.server.serve(sockets=[listening]), self.loop
        )

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def close(self) -> None:
        self.server.should_exit = True
        try:
            self._serving.result(30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            self.loop.close()


async def build_app() -> tuple[FastAPI, HumanInputHandler]:
    kit = RoomKit()
    handler = HumanInputHandler()
    app = FastAPI()

    @app.get("/")
    async def home() -> dict[str, str]:
        return {"app": "mine"}

    mount_desk(app, kit, path="/desk", handler=handler, auth=AppSessions())
    return app, handler


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served(build_app())
    yield server
    server.close()


def test_the_page_answers_under_the_apps_path_as_the_apps_user(
    served: Served, open_page: OpenPage
) -> None:
    request = served.run(
        served.handler.create("AskUserQuestion", {"question": "Ship it?"}, actor_id="alice")
    )
    assert httpx.get(f"{served.url}/").json() == {"app": "mine"}
    assert httpx.get(f"{served.url}/desk/api/me").status_code == 401
    page = open_page(f"{served.url}/desk/#token=session-of-alice").page
    question = page.locator(f'.card[data-request-id="{request.pending_id}"]')
    expect(question).to_contain_text("Ship it?")
    question.get_by_label("Your answer").fill("Yes, today")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_have_count(0)
    assert served.run(served.handler.wait(request.pending_id)) == "Yes, today"
    assert page.evaluate("location.pathname") == "/desk/"


def test_a_path_that_is_no_path_is_refused() -> None:
    for path in ("", "/", "desk"):
        with pytest.raises(ValueError, match="path under '/'"):
            mount_desk(FastAPI(), RoomKit(), path=path, handler=HumanInputHandler())
