"""Single use and revocation when the desk's clock runs behind the store's.

The desk reads a credential's expiry on its own clock; the store forgets ledger entries on
its own (a PostgreSQL store keeps the server's time). A desk whose clock runs behind still
takes a credential the store's clock has seen expire, and must still find it spent or
revoked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.desk.desk_harness import SECRET, World, bearer, token
from tests.servers.plugin import site_url
from tests.servers.stores import DURABLE, Ahead, StoreSite, fresh_prefix

from roomkit.auth import issue_answer_link, issue_sign_in_link
from roomkit.auth.ledger import LINK_USED, REVOKED, SIGN_IN_USED
from roomkit.cli import main
from roomkit.tools.human_input import HumanInputHandler

AHEAD = 120.0
"""Seconds by which the store's clock runs ahead of the desk's."""
LIFE = 60.0
"""Seconds each credential has to live on the desk's clock: less than the gap."""


@pytest.fixture(params=DURABLE)
async def desk(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    """A desk whose store's clock runs :data:`AHEAD` of the desk's; its room has alice."""
    url = site_url(request.param, tmp_path, request)
    clock = Ahead()
    await clock.move(AHEAD)
    store = StoreSite(request.param, url, fresh_prefix()).open(clock=clock)  # type: ignore[arg-type]
    world = World(handler=HumanInputHandler(store=store))
    await world.room("room", "alice", "bob")
    yield world
    await store.close()


async def test_a_sign_in_link_signs_in_once(desk: World) -> None:
    link = bearer(issue_sign_in_link(SECRET, "alice", ttl=LIFE))
    async with desk.client() as client:
        first = await client.post("/api/sign-in", headers=link)
        again = await client.post("/api/sign-in", headers=link)
    assert first.status_code == 200
    assert (again.status_code, again.json()["detail"]) == (401, SIGN_IN_USED)


async def test_a_spent_answer_link_does_nothing_more(desk: World) -> None:
    pending_id = await desk.ask(actor_id="alice")
    link = bearer(issue_answer_link(SECRET, pending_id, "alice", LIFE))
    async with desk.client() as client:
        answered = await client.post(
            f"/api/requests/{pending_id}/answer", json={"answer": "blue"}, headers=link
        )
        listed = await client.get("/api/history", headers=link)
    assert answered.status_code == 200
    assert (listed.status_code, listed.json()["detail"]) == (401, LINK_USED)


async def test_a_revoked_token_stays_revoked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``roomkit revoke`` on the file a desk shares, whose clock runs ahead: the token it
    revoked is refused until it expires on the desk's clock."""
    url = f"sqlite:///{tmp_path / 'desk.db'}"
    clock = Ahead()
    await clock.move(AHEAD)
    store = StoreSite("sqlite", url, "").open(clock=clock)  # type: ignore[arg-type]
    world = World(handler=HumanInputHandler(store=store))
    await world.room("room", "alice")
    await world.ask(actor_id="alice")  # the desk's file is made
    data_dir = tmp_path / "desk-data"
    data_dir.mkdir(mode=0o700)
    (data_dir / "desk.key").write_text(SECRET)
    (data_dir / "desk.key").chmod(0o600)
    revoked = token("alice", ttl=LIFE)
    argv = ["revoke", revoked, "--store", url, "--data-dir", str(data_dir)]
    code = await asyncio.to_thread(main, argv)
    capsys.readouterr()
    async with world.client() as client:
        seen = await client.get("/api/me", headers=bearer(revoked))
    await store.close()
    assert code == 0
    assert (seen.status_code, seen.json()["detail"]) == (401, REVOKED)
