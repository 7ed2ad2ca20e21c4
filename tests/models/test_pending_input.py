"""A request made by the handler reads as one built with ``PendingInput(...)``."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import pickle
from datetime import UTC, datetime

from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input._announce import Announcer
from roomkit.tools.human_input._requests import RequestMaker


async def _no_reject(pending_id: str, reason: str) -> bool:
    return False


def made_request(actor_id: str | None = None, *, detached: bool = False) -> PendingInput:
    """A request as the handler's maker makes it."""
    make = RequestMaker(Announcer(_no_reject)).make
    return make("ask", {"q": "?"}, "r", "call", "c", ChannelType.AI, actor_id, detached)


def test_a_made_request_sets_every_field_as_the_constructor_does() -> None:
    made = made_request("alice", detached=True)
    built = PendingInput(
        made.pending_id,
        "ask",
        made.arguments,
        "r",
        "call",
        "c",
        detached=True,
        created_at=made.created_at,
        actor_id="alice",
    )
    for name in PendingInput.__slots__:
        assert getattr(made, name) == getattr(built, name), name
    assert repr(made) == repr(built)


def test_created_at_reads_as_one_aware_datetime() -> None:
    before = datetime.now(UTC)
    request = made_request()
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
