"""The desk inside your own FastAPI app: ``mount_desk`` serves the page, the chat and the API
under a path of the app, signs people in with the app's own accounts, and starts and stops
with the app."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from desk_page import OpenPage
from fastapi import FastAPI
from playwright.sync_api import expect
from tests.servers.threaded_app import ThreadedApp

from roomkit import RoomKit
from roomkit.auth import Principal
from roomkit.core.exceptions import DeskAuthError
from roomkit.desk import mount_desk
from roomkit.tools.human_input import HumanInputHandler

SESSIONS = {"session-of-alice": "alice"}
"""The app's own sign-ins: a session id to its person."""


class AppSessions:
    """The app's own accounts: a session id, as its pages hold it, speaks for its person."""

    async def authenticate(self, token: str) -> Principal:
        actor = SESSIONS.get(token)
        if actor is None:
            raise DeskAuthError("not signed in to the app")
        return Principal(actor)


async def build_app(url: str) -> tuple[FastAPI, HumanInputHandler]:
    kit = RoomKit()
    handler = HumanInputHandler()
    app = FastAPI()

    @app.get("/")
    async def home() -> dict[str, str]:
        return {"app": "mine"}

    mount_desk(app, kit, path="/desk", handler=handler, auth=AppSessions())
    return app, handler


@pytest.fixture
def served() -> Iterator[ThreadedApp]:
    server = ThreadedApp(build_app)
    yield server
    server.close()


def test_the_page_answers_under_the_apps_path_as_the_apps_user(
    served: ThreadedApp, open_page: OpenPage
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
