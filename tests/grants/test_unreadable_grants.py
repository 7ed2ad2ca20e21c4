"""A grant a hand edit left unreadable in the store is skipped where grants are listed, and
named where it is read alone: the grants beside it still list and still cover their calls."""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
import redis
from tests.desk.desk_harness import bearer, world_at
from tests.grants.conftest import HandlerMaker
from tests.servers.stores import DURABLE, StoreSite

from roomkit.cli import main
from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.policy.grants import use_grant
from roomkit.stores.grants import Grant, MemoryGrants
from roomkit.stores.redis._layout import Layout
from roomkit.stores.sqlite import SQLiteStore

BODIES = ["not json", "[1]", '{"granted_by": 5}']


def _grant(grant_id: str, **fields: object) -> Grant:
    values: dict[str, object] = {
        "grant_id": grant_id,
        "tool": "pay",
        "granted_by": ("ann",),
        "expires_at": 1_800_000_100.0,
        "digest": None,
        "schema": {"type": "object"},
        "actor_id": "bob",
    }
    values.update(fields)
    return Grant(**values)  # type: ignore[arg-type]


def _set_body(site: StoreSite, grant_id: str, body: str) -> None:
    """Write ``body`` over the grant's stored body, as a person with write access would."""
    if site.kind == "sqlite":
        with closing(sqlite3.connect(site.url.removeprefix("sqlite:///"))) as db, db:
            db.execute("UPDATE roomkit_grants SET body = ? WHERE grant_id = ?", (body, grant_id))
    elif site.kind == "redis":
        with closing(redis.Redis.from_url(site.url)) as db:
            db.hset(Layout(site.prefix).grant_items + grant_id, "body", body)
    else:
        with psycopg.connect(site.url, autocommit=True) as db:
            db.execute(
                f'UPDATE "{site.prefix}".roomkit_grants SET body = %s WHERE grant_id = %s',
                (body, grant_id),
            )


@pytest.mark.parametrize("store_kind", DURABLE, indirect=True)
@pytest.mark.parametrize("body", BODIES)
async def test_an_unreadable_grant_is_skipped_and_the_others_still_cover(
    handlers: HandlerMaker,
    store_site: StoreSite,
    body: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = handlers()
    await handler.grants.add(_grant("g-kept"))
    await handler.grants.add(_grant("g-broken"))
    _set_body(store_site, "g-broken", body)
    grants = handlers().grants
    with caplog.at_level(logging.WARNING, logger="roomkit.stores.grants"):
        assert [grant.grant_id for grant in await grants.list()] == ["g-kept"]
    assert "g-broken" in caplog.text
    with pytest.raises(CorruptRecordError, match="g-broken"):
        await grants.get("g-broken")
    request = await handlers().create_approval("pay", {"a": 1}, approvers=["ann"], actor_id="bob")
    assert request.status is PendingInputStatus.RESOLVED
    assert request.settled_by == "grant:g-kept"
    # The look a handler without a store's own insert makes: the kept grant still covers.
    used = await use_grant(grants, request)
    assert used is not None
    assert used.grant_id == "g-kept"


@pytest.mark.parametrize(
    "column",
    ["body = 'not json'", "uses = 'x'", "expires_at = 9e999", "expires_at = 1e300"],
)
def test_the_cli_lists_the_others_and_revokes_an_unreadable_grant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str
) -> None:
    path = tmp_path / "desk.db"

    async def add() -> None:
        async with SQLiteStore(path) as store:
            await store.grants.add(_grant("g-kept", expires_at=4_000_000_000.0))
            await store.grants.add(_grant("g-broken", expires_at=4_000_000_000.0))

    asyncio.run(add())
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(f"UPDATE roomkit_grants SET {column} WHERE grant_id = 'g-broken'")
    assert main(["grants", "list", "--store", f"sqlite:///{path}"]) == 0
    out = capsys.readouterr().out
    assert "g-kept  live  pay" in out
    # The unreadable one is revoked all the same, and said so.
    assert main(["grants", "revoke", "g-broken", "--store", f"sqlite:///{path}"]) == 0
    assert "Revoked grant g-broken" in capsys.readouterr().out


@pytest.mark.parametrize("field", ["expires_at", "created_at", "revoked_at"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
async def test_a_grant_time_that_is_no_finite_number_is_refused(field: str, value: float) -> None:
    """A grant that would never end (or that no store reads back) is never made."""
    grants = MemoryGrants()

    with pytest.raises(ValueError, match=f"^{field} must be a finite time in seconds"):
        await grants.add(_grant("g-1", **{field: value}))
    assert await grants.list() == []


@pytest.mark.parametrize("revoked_at", ["9e999", "-9e999"])
async def test_a_stored_revoke_time_that_is_no_finite_number_is_unreadable(
    tmp_path: Path, revoked_at: str
) -> None:
    path = tmp_path / "grants.db"
    async with SQLiteStore(path) as store:
        await store.grants.add(_grant("g-kept", expires_at=4_000_000_000.0))
        await store.grants.add(_grant("g-broken", expires_at=4_000_000_000.0))
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            f"UPDATE roomkit_grants SET revoked_at = {revoked_at} WHERE grant_id = 'g-broken'"
        )

    async with SQLiteStore(path) as store:
        with pytest.raises(CorruptRecordError, match=r"g-broken.*revoked_at"):
            await store.grants.get("g-broken")
        assert [grant.grant_id for grant in await store.grants.list()] == ["g-kept"]


async def test_the_desk_revokes_an_unreadable_grant_for_an_administrator(tmp_path: Path) -> None:
    """As ``roomkit grants revoke`` does; who granted it cannot be read, so no one else may."""
    site = StoreSite("sqlite", f"sqlite:///{tmp_path / 'desk.db'}", "")
    async with world_at(site) as world:
        await world.handler.grants.add(_grant("g-broken", expires_at=4_000_000_000.0))
        _set_body(site, "g-broken", "not json")
        async with world.client() as client:
            revoke = "/api/grants/g-broken/revoke"
            by_granter = await client.post(revoke, headers=bearer("ann"))
            assert by_granter.status_code == 404
            revoked = await client.post(revoke, headers=bearer("root", admin=True))
            assert revoked.status_code == 200, revoked.text
            shown = revoked.json()
            assert (shown["grant_id"], shown["state"], shown["revoked_by"]) == (
                "g-broken",
                "revoked",
                "root",
            )
            assert "cannot be read" in shown["detail"]
            again = await client.post(revoke, headers=bearer("root", admin=True))
            assert again.status_code == 409


async def test_the_desk_shows_a_grant_text_with_a_lone_surrogate_with_a_replacement(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An earlier version stored the JSON escape ``"\\ud800"`` in the grant's schema."""
    site = StoreSite("sqlite", f"sqlite:///{tmp_path / 'desk.db'}", "")
    async with world_at(site) as world:
        await world.handler.grants.add(_grant("g-1", expires_at=4_000_000_000.0))
        body = '{"actor_id":"bob","granted_by":["ann"],"schema":{"type":"obj\\ud800"}}'
        _set_body(site, "g-1", body)
        async with world.client() as client:
            with caplog.at_level(logging.WARNING, logger="roomkit.desk"):
                listed = await client.get("/api/grants", headers=bearer("ann"))
                revoked = await client.post("/api/grants/g-1/revoke", headers=bearer("ann"))

    assert listed.status_code == 200, listed.text
    assert [grant["schema"] for grant in listed.json()["grants"]] == [{"type": "obj\ufffd"}]
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["schema"] == {"type": "obj\ufffd"}
    assert "Grant g-1 holds a lone surrogate (U+D800)" in caplog.text
