"""The trip-booking example runs as shipped (on the session's dev server)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from tests.adapters.temporal.temporal_server import TemporalServer

ROOT = Path(__file__).resolve().parents[3]


async def test_the_trip_waits_for_two_approvals_on_the_desk(
    temporal_server: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Temporal's sandbox imports the workflow's module again by name, as a script's run does.
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    example = importlib.import_module("temporal_trip")
    transcript = await example.main(
        f"sqlite:///{tmp_path / 'trip.db'}", address=temporal_server.address, demo=True
    )
    assert transcript == [
        "[workflow] asks alice, bob and carol to approve book {'to': 'Lisbon', 'amount': 900}",
        "[bob approves on the desk] 200",
        "[carol approves on the desk] 200",
        "[workflow] booked Lisbon for 900 EUR",
    ]
