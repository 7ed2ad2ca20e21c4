"""The records of the primitive: PendingInputStatus, PendingInput and PendingInputEvent."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from enum import StrEnum

import roomkit
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, PendingInputEvent, PendingInputStatus


def test_statuses_are_string_values() -> None:
    assert issubclass(PendingInputStatus, StrEnum)
    assert {status.name: status.value for status in PendingInputStatus} == {
        "PENDING": "pending",
        "RESOLVED": "resolved",
        "REJECTED": "rejected",
        "TIMED_OUT": "timed_out",
    }


def test_the_doors_have_their_channel_types() -> None:
    assert (ChannelType.AI, ChannelType.REALTIME_VOICE, ChannelType.CONFERENCE) == (
        "ai",
        "realtime_voice",
        "conference",
    )


def test_the_records_are_exported_from_roomkit() -> None:
    assert roomkit.PendingInput is PendingInput
    assert roomkit.PendingInputEvent is PendingInputEvent
    assert roomkit.PendingInputStatus is PendingInputStatus


def test_pending_input_keeps_its_positional_order() -> None:
    created = datetime(2024, 1, 2, tzinfo=UTC)
    request = PendingInput(
        "p1",
        "Ask",
        {"q": 1},
        "r1",
        "tc1",
        "ch1",
        PendingInputStatus.RESOLVED,
        "yes",
        None,
        True,
        created,
        "alice",
    )

    assert (request.pending_id, request.tool_name, request.arguments) == ("p1", "Ask", {"q": 1})
    assert (request.room_id, request.tool_call_id, request.channel_id) == ("r1", "tc1", "ch1")
    assert (request.status, request.result, request.reject_reason) == ("resolved", "yes", None)
    assert (request.detached, request.created_at, request.actor_id) == (True, created, "alice")


def test_a_new_pending_input_is_pending_and_stamped_in_utc() -> None:
    request = PendingInput("p1", "Ask", {}, "", "", "")

    assert request.status is PendingInputStatus.PENDING
    assert (request.result, request.reject_reason, request.detached) == (None, None, False)
    assert request.actor_id is None
    assert request.created_at.utcoffset() == timedelta(0)


def test_requests_are_equal_only_to_themselves() -> None:
    first = PendingInput("p1", "Ask", {}, "", "", "")
    twin = PendingInput("p1", "Ask", {}, "", "", "")

    assert first == first
    assert first != twin


def test_pending_input_event_keeps_its_positional_order() -> None:
    stamp = datetime(2024, 1, 2, tzinfo=UTC)
    event = PendingInputEvent(
        "p1", "Ask", {"q": 1}, "r1", "tc1", "ch1", ChannelType.CONFERENCE, stamp, "bob"
    )

    assert dataclasses.astuple(event)[9:] == ("question", None, ())
    assert dataclasses.astuple(event)[:9] == (
        "p1",
        "Ask",
        {"q": 1},
        "r1",
        "tc1",
        "ch1",
        ChannelType.CONFERENCE,
        stamp,
        "bob",
    )


def test_an_event_defaults_to_no_actor_and_a_utc_timestamp() -> None:
    event = PendingInputEvent("p1", "Ask", {}, "r", "", "", ChannelType.AI)

    assert event.actor_id is None
    assert event.timestamp.utcoffset() == timedelta(0)


def test_the_event_for_a_request_carries_its_fields() -> None:
    request = PendingInput(
        "p1",
        "Ask",
        {"q": 1},
        "r1",
        "tc1",
        "ch1",
        actor_id="carol",
        channel_type=ChannelType.REALTIME_VOICE,
    )

    event = PendingInputEvent.for_request(request)

    assert (event.pending_id, event.tool_name, event.arguments) == ("p1", "Ask", {"q": 1})
    assert (event.room_id, event.tool_call_id, event.channel_id) == ("r1", "tc1", "ch1")
    assert (event.channel_type, event.actor_id) == (ChannelType.REALTIME_VOICE, "carol")
