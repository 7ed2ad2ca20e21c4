"""A PostgreSQL server that stops answering on open connections (frozen, or cut off with no
reset, which no connect timeout sees): each call fails as unavailable after the store's
silence bound instead of waiting for ever, and the store works again once it answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from tests.postgres_server import PostgresServer, running_postgres
from tests.tools.human_input.stores.postgres_kit import new_schema

from roomkit import HumanInputHandler
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.postgres import PostgresStore, _link

SILENCE = 1.0
"""The store's bound on a silent server, made short here (60 s by default)."""
PSYCOPG_CANCEL = 10.0
"""What psycopg adds to a cut query: a cancel request, then a wait for it, 5 s each."""


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


async def test_a_frozen_server_fails_each_call_in_bounded_time_then_answers_again(
    server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_link, "_SILENCE", SILENCE)
    async with PostgresStore(server.dsn, schema=new_schema(), settle_retry=0.5) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("ask", {"question": "Which hotel?"}, room_id="r")
        server.pause()
        try:
            # A settle tries again once (another pooled connection, as silent): two bounds.
            async with asyncio.timeout(3 * (SILENCE + PSYCOPG_CANCEL) + 5):
                with pytest.raises(StoreUnavailableError, match="no answer for 1 s on an open"):
                    await store.fetch(request.pending_id)
                with pytest.raises(StoreUnavailableError):
                    await handler.aresolve(request.pending_id, "Lisboa", by="alice")
        finally:
            server.resume()
        assert await handler.aresolve(request.pending_id, "Lisboa", by="alice")
        assert await handler.wait(request.pending_id) == "Lisboa"
