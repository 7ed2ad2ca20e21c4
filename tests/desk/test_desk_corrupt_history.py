"""A request whose stored history holds an entry roomkit did not write (a damaged disk, a
hand edit): the desk says the record cannot be read and points to ``roomkit audit verify``;
it does not call the store unreachable."""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from desk_harness import bearer, world_on


async def test_a_history_that_cannot_be_read_is_named_not_called_an_outage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with world_on("sqlite", tmp_path) as world:
        pending_id = await world.ask(actor_id="alice")
        with closing(sqlite3.connect(tmp_path / "desk.db")) as db, db:
            db.execute(
                "UPDATE roomkit_history SET entry = CAST(? AS TEXT) WHERE pending_id = ?",
                (b"\xff\xfe not an entry", pending_id),
            )
        async with world.client() as client:
            with caplog.at_level(logging.ERROR, logger="roomkit.desk"):
                response = await client.get(
                    f"/api/requests/{pending_id}/history", headers=bearer("alice")
                )
            # The rest of the desk still serves: the request itself reads.
            shown = await client.get(f"/api/requests/{pending_id}", headers=bearer("alice"))
    assert response.status_code == 500
    detail = response.json()["detail"]
    assert "roomkit audit verify" in detail
    assert "unavailable" not in detail
    assert any(pending_id in record.getMessage() for record in caplog.records)
    assert shown.status_code == 200
