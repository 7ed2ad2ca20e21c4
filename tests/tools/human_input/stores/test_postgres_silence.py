"""A PostgreSQL server that stops answering on open connections (frozen, or cut off with no
reset, which no connect timeout sees): each call fails as unavailable after the store's
silence bound instead of waiting for ever, and the store works again once it answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import psycopg
import pytest
from tests.postgres_server import PostgresServer
from tests.servers.stores import Ahead

from roomkit import HumanInputHandler
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.postgres import PostgresStore, _link, _requests

SILENCE = 1.0
"""The store's bound on a silent server, made short here (60 s by default)."""
SLACK = 5.0
"""Seconds a loaded machine may add to the calls' bounds."""


@pytest.fixture
def server(postgres_restartable: PostgresServer) -> Iterator[PostgresServer]:
    """The session's cluster; a test that pauses it lets it run again before it ends."""
    try:
        yield postgres_restartable
    finally:
        if postgres_restartable.running:
            postgres_restartable.resume()


async def test_a_frozen_server_fails_each_call_in_bounded_time_then_answers_again(
    server: PostgresServer, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_link, "SILENCE", SILENCE)
    async with PostgresStore(
        server.dsn, schema=postgres_schema, settle_retry=0.5, connect_timeout=SILENCE
    ) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("ask", {"question": "Which hotel?"}, room_id="r")
        server.pause()
        try:
            # A settle tries again once (another pooled connection, as silent, or none within
            # the connect timeout): two bounds.
            async with asyncio.timeout(3 * SILENCE + SLACK):
                with pytest.raises(StoreUnavailableError, match="no answer within 1 s on an open"):
                    await store.fetch(request.pending_id)
                with pytest.raises(StoreUnavailableError):
                    await handler.aresolve(request.pending_id, "Lisboa", by="alice")
        finally:
            server.resume()
        assert await handler.aresolve(request.pending_id, "Lisboa", by="alice")
        assert await handler.wait(request.pending_id) == "Lisboa"


async def test_a_purge_held_up_never_fails_the_create_that_made_it(
    server: PostgresServer, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create purges what expired now and then; a purge that takes longer than its bound
    (here: a row it would delete is locked by another transaction) is logged and tried
    again later, and the create goes through."""
    monkeypatch.setattr(_requests, "_PURGE_BOUND", SILENCE)
    clock, schema = Ahead(), postgres_schema
    async with PostgresStore(server.dsn, schema=schema, retention_seconds=60, clock=clock) as store:
        handler = HumanInputHandler(store=store)
        old = await handler.create("ask", {"question": "Which hotel?"}, room_id="r")
        assert await handler.aresolve(old.pending_id, "Lisboa", by="alice")
        clock.ahead = 3600.0  # the settled request is past its retention
        async with await psycopg.AsyncConnection.connect(server.dsn) as holder:
            await holder.execute(
                f"SELECT 1 FROM {schema}.roomkit_pending WHERE pending_id = %s FOR UPDATE",
                (old.pending_id,),
            )
            async with asyncio.timeout(SILENCE + SLACK):
                made = await handler.create("ask", {"question": "Which train?"}, room_id="r")
            await holder.rollback()
        assert await store.fetch(made.pending_id) is not None
