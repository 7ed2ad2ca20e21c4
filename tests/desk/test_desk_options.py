"""The desk's options: every documented way to pass them builds the same desk, and a wrong
one is refused at once, saying what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from desk_harness import SECRET, bearer
from fastapi import FastAPI

from roomkit import RoomKit
from roomkit.desk import (
    Desk,
    DeskLimits,
    DeskOptions,
    Principal,
    TokenAuthenticator,
    chat_router,
    create_desk_app,
    desk_router,
    metrics_router,
)
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler

LIMITS = DeskLimits(rate=1_000.0, burst=1_000)


class Alice:
    """An authenticator of the application's own: every token speaks for alice."""

    async def authenticate(self, token: str) -> Principal:
        return Principal("alice")


def kit_with_handler() -> tuple[RoomKit, HumanInputHandler]:
    return RoomKit(), HumanInputHandler()


async def me(app: FastAPI, headers: dict[str, str], host: str | None = None) -> httpx.Response:
    """``GET /api/me`` of ``app`` (served as ``desk.test``), with ``Host: host`` if given."""
    transport = httpx.ASGITransport(app=app)
    sent = headers if host is None else {**headers, "Host": host}
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        return await client.get("/api/me", headers=sent)


async def test_create_desk_app_of_a_kit_alone(tmp_path: Path) -> None:
    """README: ``app = create_desk_app(kit)`` (the kit routes one handler)."""
    kit = RoomKit()
    tool = HumanInputToolHandler({"AskUserQuestion"})
    kit.route_human_input(tool.handler, "agent")
    app = create_desk_app(kit, data_dir=tmp_path)
    assert app.state.desk.handler is tool.handler
    assert (tmp_path / "desk.key").exists()


async def test_desk_router_with_an_authenticator_of_ones_own() -> None:
    """README: ``my_app.include_router(desk_router(kit, auth=my_authenticator))``."""
    kit, handler = kit_with_handler()
    app = FastAPI()
    router = desk_router(kit, handler=handler, auth=Alice())
    app.include_router(router)
    app.include_router(chat_router(kit, router.hub, channel_id="web"))
    app.include_router(metrics_router(router.desk))
    response = await me(app, {"Authorization": "Bearer anything"})
    assert response.json() == {"actor_id": "alice", "admin": False}
    assert router.desk.authenticator.__class__ is Alice


@pytest.mark.parametrize("build", ["create_desk_app", "desk_router"])
async def test_allowed_hosts_is_a_keyword_of_both(build: str) -> None:
    """README: ``allowed_hosts=[...]`` to ``create_desk_app`` and ``desk_router``."""
    kit, handler = kit_with_handler()
    options: dict[str, Any] = {"handler": handler, "secret": SECRET, "allowed_hosts": ["a.example"]}
    if build == "create_desk_app":
        app = create_desk_app(kit, **options)
    else:
        app = FastAPI()
        app.include_router(desk_router(kit, **options))
    assert (await me(app, bearer("bob"), host="a.example")).status_code == 200
    assert (await me(app, bearer("bob"), host="b.example")).status_code == 400


async def test_every_option_reaches_the_desk_by_keyword(tmp_path: Path) -> None:
    kit, handler = kit_with_handler()
    options: DeskOptions = {
        "handler": handler,
        "secret": SECRET,
        "data_dir": tmp_path,
        "allowed_origins": ["https://a.example/"],
        "allowed_hosts": ["a.example"],
        "limits": LIMITS,
    }
    desks = [
        Desk(kit, **options),
        desk_router(kit, **options).desk,
        create_desk_app(kit, **options).state.desk,
    ]
    for desk in desks:
        assert desk.handler is handler
        assert desk.limits is LIMITS
        assert desk.allowed_origins == frozenset({"https://a.example"})
        assert desk.hosts.names == frozenset({"a.example"})
        assert isinstance(desk.authenticator, TokenAuthenticator)
    assert not (tmp_path / "desk.key").exists(), "a given secret needs no key file"


async def test_a_desk_built_once_serves_the_router_and_the_app(tmp_path: Path) -> None:
    kit, handler = kit_with_handler()
    desk = Desk(kit, handler=handler, secret=SECRET, limits=LIMITS)
    app = create_desk_app(desk, static_dir=tmp_path / "none")
    assert desk_router(desk) is desk.router
    assert app.state.desk is desk
    assert (await me(app, bearer("bob"))).json() == {"actor_id": "bob", "admin": False}


@pytest.mark.parametrize("build", [Desk, desk_router, create_desk_app])
def test_an_unknown_option_is_refused_with_the_list(build: Any) -> None:
    kit, handler = kit_with_handler()
    with pytest.raises(TypeError, match=r"unknown desk option 'allowed_host'.*allowed_hosts"):
        build(kit, handler=handler, secret=SECRET, allowed_host=["a.example"])


@pytest.mark.parametrize("build", [desk_router, create_desk_app])
def test_a_desk_and_options_both_are_refused(build: Any) -> None:
    kit, handler = kit_with_handler()
    desk = Desk(kit, handler=handler, secret=SECRET)
    with pytest.raises(TypeError, match=r"give the options to Desk\(kit, \.\.\.\)"):
        build(desk, limits=LIMITS)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("allowed_origins", "https://a.example", r"pass \['https://a.example'\]"),
        ("allowed_hosts", "a.example", r"pass \['a.example'\]"),
        ("limits", {"rate": 1}, "limits must be a DeskLimits"),
        ("handler", object(), "handler must be a HumanInputHandler"),
        ("auth", "secret", "auth must have `async authenticate"),
    ],
)
def test_an_option_of_the_wrong_type_is_refused(option: str, value: Any, message: str) -> None:
    kit, handler = kit_with_handler()
    options = {"handler": handler, "secret": SECRET, option: value}
    for build in (Desk, desk_router, create_desk_app):
        with pytest.raises(TypeError, match=message):
            build(kit, **options)


@pytest.mark.parametrize(
    "origin",
    ["https://a.example/app", "https://A.example", "a.example", "https://a.example:443", ""],
)
def test_an_allowed_origin_no_browser_sends_is_refused(origin: str) -> None:
    """An origin the desk could never match (a path, upper case, no scheme, a default
    port) is refused as the desk is made, not left to refuse every browser later."""
    kit, handler = kit_with_handler()
    for build in (Desk, desk_router, create_desk_app):
        with pytest.raises(ValueError, match="allowed_origins holds origins as a browser"):
            build(kit, handler=handler, secret=SECRET, allowed_origins=[origin])


def test_allowed_origins_take_a_star_an_ipv6_address_and_a_port() -> None:
    kit, handler = kit_with_handler()
    origins = ["*", "http://[::1]:8080", "https://a.example:8443/"]
    desk = Desk(kit, handler=handler, secret=SECRET, allowed_origins=origins)
    assert desk.allowed_origins == frozenset({"*", "http://[::1]:8080", "https://a.example:8443"})


@pytest.mark.parametrize("build", [create_desk_app, desk_router, Desk])
def test_a_handler_given_where_the_kit_goes_is_refused_saying_how(build: Any) -> None:
    """A handler (or anything else) first, not a kit: one TypeError saying what goes where,
    not an AttributeError from inside."""
    with pytest.raises(
        TypeError, match=r"takes a RoomKit first, got HumanInputHandler: .*handler="
    ):
        build(HumanInputHandler(), secret=SECRET)
    with pytest.raises(TypeError, match=r"takes a RoomKit first, got str$"):
        build("kit", secret=SECRET)
