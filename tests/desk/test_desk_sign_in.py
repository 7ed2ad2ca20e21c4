"""Sign-in links: what ``roomkit desk`` prints signs one browser in, once, within its time,
and is good for nothing else."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from desk_harness import SECRET, World, bearer, serve, token, ws_url
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from roomkit.cli import main
from roomkit.desk import Principal
from roomkit.desk.tokens import issue_sign_in_link
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

USED = "This sign-in link was already used: ask for a fresh one"


def claims_of(credential: str) -> dict[str, Any]:
    payload = credential.split(".")[0]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * 4))
    return decoded


async def trade(client: httpx.AsyncClient, link: str) -> httpx.Response:
    return await client.post("/api/sign-in", headers=bearer(link))


async def test_a_sign_in_link_is_traded_for_a_token_once() -> None:
    world = World()
    link = issue_sign_in_link(SECRET, "admin", admin=True)
    async with world.client() as client:
        first = await trade(client, link)
        again = await trade(client, link)
        me = await client.get("/api/me", headers=bearer(first.json()["token"]))
    assert first.status_code == 200
    assert (first.json()["actor_id"], first.json()["admin"]) == ("admin", True)
    assert first.json()["expires_at"] == pytest.approx(
        claims_of(first.json()["token"])["exp"], abs=1
    )
    assert me.json() == {"actor_id": "admin", "admin": True}
    assert (again.status_code, again.json()["detail"]) == (401, USED)


async def test_a_used_sign_in_link_stays_used_after_a_memory_desk_restarts() -> None:
    """A desk on the memory store forgets its spent links when it stops, so it takes only
    sign-in links issued since it started."""
    first = World()
    link = issue_sign_in_link(SECRET, "admin", admin=True)
    async with first.client() as client:
        traded = await trade(client, link)
    restarted = World()
    fresh = issue_sign_in_link(SECRET, "admin", admin=True)
    async with restarted.client() as client:
        before = await trade(client, link)
        since = await trade(client, fresh)
    assert traded.status_code == 200
    assert before.status_code == 401
    assert "before this desk started" in before.json()["detail"]
    assert since.status_code == 200


async def test_a_sign_in_link_reads_and_answers_nothing_itself() -> None:
    world = World()
    pending_id = await world.ask(actor_id="admin")
    link = issue_sign_in_link(SECRET, "admin", admin=True)
    async with world.client() as client:
        me = await client.get("/api/me", headers=bearer(link))
        answer = await client.post(
            f"/api/requests/{pending_id}/answer", json={"answer": "x"}, headers=bearer(link)
        )
        actor_token = await trade(client, token("admin", admin=True))
        traded = await trade(client, link)
    async with serve(world.app) as base, connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "auth", "token": link}))
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert (me.status_code, answer.status_code) == (401, 401)
    assert "only signs in" in me.json()["detail"]
    assert (actor_token.status_code, actor_token.json()["detail"]) == (
        401,
        "Not a sign-in link: send the token itself with each request",
    )
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert traded.status_code == 200, "refused uses leave the link unspent"


async def test_an_expired_sign_in_link_is_refused() -> None:
    world = World()
    link = issue_sign_in_link(SECRET, "admin", admin=True, ttl=60, now=1_000.0)
    async with world.client() as client:
        traded = await trade(client, link)
    assert traded.status_code == 401
    assert traded.json()["detail"].startswith("Invalid or expired token")


async def test_a_sign_in_link_used_on_one_desk_is_spent_on_the_other(tmp_path: Path) -> None:
    stores = [SQLiteStore(tmp_path / "desk.db"), SQLiteStore(tmp_path / "desk.db")]
    first, second = (World(handler=HumanInputHandler(store=store)) for store in stores)
    link = issue_sign_in_link(SECRET, "admin", admin=True)
    try:
        async with first.client() as client:
            used = await trade(client, link)
        async with second.client() as client:
            again = await trade(client, link)
    finally:
        for store in stores:
            await store.close()
    assert used.status_code == 200
    assert (again.status_code, again.json()["detail"]) == (401, USED)


async def test_a_desk_with_its_own_authenticator_signs_no_tokens() -> None:
    class SignsIn:
        async def authenticate(self, token: str) -> Principal:
            return Principal("alice", link_id="n1", expires_at=None, sign_in=True)

    world = World(auth=SignsIn())
    async with world.client() as client:
        traded = await trade(client, "anything")
    assert (traded.status_code, traded.json()["detail"]) == (404, "This desk signs no tokens")


@pytest.mark.parametrize(("options", "ttl"), [((), 900), (("--sign-in-ttl", "60"), 60)])
async def test_roomkit_desk_prints_a_short_lived_single_use_sign_in_link(
    tmp_path: Path, options: tuple[str, ...], ttl: int
) -> None:
    """The link it prints signs a browser in once, within 15 minutes unless told otherwise,
    and is no admin token itself."""
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0",
        "--data-dir", str(tmp_path / "data"), *options,
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert desk.stdout is not None
        async with asyncio.timeout(30):
            printed = [(await desk.stdout.readline()).decode() for _ in range(2)]
        found = re.match(r"Open (http://\S+)/#token=(\S+)", printed[0])
        assert found, f"the desk printed {printed!r} instead of its link"
        base, link = found.groups()
        async with httpx.AsyncClient(base_url=base) as client:
            as_bearer = await client.get("/api/me", headers=bearer(link))
            first = await trade(client, link)
            again = await trade(client, link)
    finally:
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
    claims = claims_of(link)
    assert claims["exp"] - claims["iat"] == pytest.approx(ttl, abs=1)
    assert as_bearer.status_code == 401
    assert (first.status_code, first.json()["admin"]) == (200, True)
    assert again.status_code == 401
    assert "works once" in printed[1]


def test_roomkit_desk_help_says_what_the_link_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["desk", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "--sign-in-ttl SECONDS" in shown
    assert "signs one browser in as admin" in shown
    assert "it works once" in shown


@pytest.mark.parametrize("ttl", ["0", "-5", "nan", "inf"])
def test_a_bad_sign_in_ttl_exits_2(ttl: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["desk", "--sign-in-ttl", ttl]) == 2
    assert "--sign-in-ttl must be a positive number of seconds" in capsys.readouterr().err
