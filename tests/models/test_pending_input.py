"""A request made by the handler reads as one built with ``PendingInput(...)``."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import pickle
import time
from datetime import UTC, datetime

from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, new_request
from roomkit.tools.human_input import HumanInputHandler


def test_new_request_sets_every_field_as_the_constructor_does() -> None:
    stamp = time.time()
    made = new_request(
        "p1", "ask", {"q": "?"}, "r", "call", "c", True, stamp, "alice", ChannelType.AI
    )
    built = PendingInput(
        "p1",
        "ask",
        made.arguments,
        "r",
        "call",
        "c",
        detached=True,
        created_at=datetime.fromtimestamp(stamp, UTC),
        actor_id="alice",
    )
    for name in PendingInput.__slots__:
        assert getattr(made, name) == getattr(built, name), name
    assert repr(made) == repr(built)


def test_created_at_reads_as_one_aware_datetime() -> None:
    before = datetime.now(UTC)
    request = new_request("p1", "ask", {}, "", "", "", False, time.time(), None, ChannelType.AI)
    first = request.created_at
    assert type(first) is datetime
    assert first.tzinfo is UTC
    assert before <= first <= datetime.now(UTC)
    assert request.created_at is first


def test_a_datetime_given_is_kept_as_given() -> None:
    at = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    request = PendingInput("p1", "ask", {}, "", "", "", created_at=at)
    assert request.created_at is at
    later = datetime(2025, 1, 1, tzinfo=UTC)
    request.created_at = later
    assert request.created_at is later


def test_a_handler_request_copies_pickles_and_replaces_with_its_datetime() -> None:
    async def made() -> PendingInput:
        return await HumanInputHandler().create("ask", {"q": "?"}, room_id="r")

    request = asyncio.run(made())
    for other in (
        copy.copy(request),
        pickle.loads(pickle.dumps(request)),
        dataclasses.replace(request),
    ):
        assert type(other.created_at) is datetime
        assert other.created_at == request.created_at
    assert dataclasses.asdict(request)["created_at"] == request.created_at
