"""A text an earlier version stored with a lone surrogate in it (the JSON escape ``"\\ud800"``,
which no store takes any more), in a request's arguments or its history, on every durable
store: the desk shows it with U+FFFD in its place, logs a warning naming the request, and
changes nothing stored."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from desk_harness import bearer, serve, token, world_at
from tests.servers.stores import DURABLE, StoreSite

from roomkit.cli import main

ASKED = "Which colour?"
ESCAPED = "Which colour\\ud800?"
"""How an earlier version stored the question with a lone surrogate: as a JSON escape."""
SHOWN = "Which colour\ufffd?"


@pytest.fixture(params=DURABLE)
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


class Hand:
    """What a store keeps of a request, read and written directly, as the earlier version
    left it: its record's arguments and its history's entries."""

    def __init__(self, site: StoreSite) -> None:
        self.site = site

    @contextmanager
    def _sql(self) -> Iterator[Any]:
        if self.site.kind == "sqlite":
            with closing(sqlite3.connect(self.site.url.removeprefix("sqlite:///"))) as db, db:
                yield db
        else:
            with psycopg.connect(self.site.url) as db, db.transaction():
                db.execute(f'SET search_path TO "{self.site.prefix}"')
                yield db

    def _redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.site.url, decode_responses=True)

    def entries(self, pending_id: str) -> list[str]:
        if self.site.kind == "redis":
            with closing(self._redis()) as db:
                return list(db.lrange(f"{self.site.prefix}:h:{pending_id}", 0, -1))  # type: ignore[arg-type]
        mark = "?" if self.site.kind == "sqlite" else "%s"
        query = f"SELECT entry FROM roomkit_history WHERE pending_id = {mark} ORDER BY seq"
        with self._sql() as db:
            return [str(text) for (text,) in db.execute(query, (pending_id,)).fetchall()]

    def set_entry(self, pending_id: str, seq: int, text: str) -> None:
        if self.site.kind == "redis":
            with closing(self._redis()) as db:
                db.lset(f"{self.site.prefix}:h:{pending_id}", seq, text)
            return
        mark = "?" if self.site.kind == "sqlite" else "%s"
        with self._sql() as db:
            db.execute(
                f"UPDATE roomkit_history SET entry = {mark} "
                f"WHERE pending_id = {mark} AND seq = {mark}",
                (text, pending_id, seq),
            )

    def set_arguments(self, pending_id: str, text: str) -> None:
        if self.site.kind == "redis":
            with closing(self._redis()) as db:
                db.hset(f"{self.site.prefix}:p:{pending_id}", "arguments", text)
            return
        mark = "?" if self.site.kind == "sqlite" else "%s"
        with self._sql() as db:
            db.execute(
                f"UPDATE roomkit_pending SET arguments = {mark} WHERE pending_id = {mark}",
                (text, pending_id),
            )


def warnings_naming(caplog: pytest.LogCaptureFixture, pending_id: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.WARNING and pending_id in record.getMessage()
    ]


async def test_a_history_entry_holding_one_shows_a_replacement(
    store_site: StoreSite, caplog: pytest.LogCaptureFixture
) -> None:
    hand = Hand(store_site)
    async with world_at(store_site) as world:
        pending_id = await world.ask({"question": ASKED})
        await world.handler.areject(pending_id, "not now", by="alice")
        stored = hand.entries(pending_id)
        assert ASKED in stored[0]
        hand.set_entry(pending_id, 0, stored[0].replace(ASKED, ESCAPED))
        stored = hand.entries(pending_id)
        async with world.client() as client:
            with caplog.at_level(logging.WARNING, logger="roomkit.desk"):
                response = await client.get(
                    f"/api/requests/{pending_id}/history", headers=bearer("alice")
                )

    assert response.status_code == 200, response.text
    entries = response.json()["entries"]
    assert entries[0]["arguments"] == {"question": SHOWN}
    # One entry's text hides none of the others.
    assert len(entries) == len(stored) > 1
    assert entries[-1]["status"] == "rejected"
    [warning] = warnings_naming(caplog, pending_id)
    assert "lone surrogate (U+D800)" in warning
    # What is stored, and so the chain, is as it was.
    assert hand.entries(pending_id) == stored


async def test_a_request_whose_arguments_hold_one_shows_a_replacement(
    store_site: StoreSite, caplog: pytest.LogCaptureFixture
) -> None:
    hand = Hand(store_site)
    async with world_at(store_site) as world:
        pending_id = await world.ask({"question": ASKED})
        settled = await world.ask({"question": ASKED})
        await world.handler.areject(settled, "not now", by="alice")
        for request_id in (pending_id, settled):
            hand.set_arguments(request_id, f'{{"question":"{ESCAPED}"}}')
        async with world.client() as client:
            with caplog.at_level(logging.WARNING, logger="roomkit.desk"):
                listed = await client.get("/api/requests", headers=bearer("alice"))
                one = await client.get(f"/api/requests/{pending_id}", headers=bearer("alice"))
                history = await client.get("/api/history", headers=bearer("alice"))

    assert listed.status_code == 200, listed.text
    assert [view["arguments"] for view in listed.json()["requests"]] == [{"question": SHOWN}]
    assert one.status_code == 200, one.text
    assert one.json()["arguments"] == {"question": SHOWN}
    assert history.status_code == 200, history.text
    assert [view["arguments"] for view in history.json()["requests"]] == [{"question": SHOWN}]
    assert len(warnings_naming(caplog, pending_id)) == 2  # once per response showing it
    assert len(warnings_naming(caplog, settled)) == 1


async def test_the_pending_commands_show_a_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``roomkit pending list --json`` and ``pending show`` read the desk's views."""
    monkeypatch.delenv("ROOMKIT_DESK_URL", raising=False)
    site = StoreSite("sqlite", f"sqlite:///{tmp_path / 'desk.db'}", "")
    async with world_at(site) as world:
        pending_id = await world.ask({"question": ASKED})
        Hand(site).set_arguments(pending_id, f'{{"question":"{ESCAPED}"}}')
        async with serve(world.app) as base:
            reach = ["--url", base, "--token", token("alice")]
            listed = await asyncio.to_thread(main, ["pending", "list", "--json", *reach])
            as_json = capsys.readouterr().out
            shown = await asyncio.to_thread(main, ["pending", "show", pending_id, *reach])
            out = capsys.readouterr().out

    assert (listed, shown) == (0, 0)
    assert [view["arguments"] for view in json.loads(as_json)] == [{"question": SHOWN}]
    assert SHOWN in out
