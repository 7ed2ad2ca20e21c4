"""ToolCallEvent: the report of one tool call, and the outcome it reads as."""

from __future__ import annotations

import dataclasses
from datetime import UTC

import pytest

from roomkit.models.enums import ChannelType
from roomkit.models.tool_call import ToolCallEvent, ToolCallOutcome


def _event(**overrides: object) -> ToolCallEvent:
    fields: dict[str, object] = {
        "channel_id": "agent",
        "channel_type": ChannelType.AI,
        "tool_call_id": "tc-1",
        "name": "AskUserQuestion",
        "arguments": {"question": "Colour?"},
        "result": '{"answer": "blue"}',
        "room_id": "room-1",
    }
    fields.update(overrides)
    return ToolCallEvent(**fields)  # type: ignore[arg-type]


def test_fields_keep_their_order() -> None:
    names = [f.name for f in dataclasses.fields(ToolCallEvent)]
    assert names == [
        "channel_id",
        "channel_type",
        "tool_call_id",
        "name",
        "arguments",
        "result",
        "room_id",
        "session",
        "timestamp",
        "is_error",
        "cancelled",
        "structured_content",
        "error_detail",
        "refused",
        "refused_but_ran",
        "actor_id",
    ]


def test_positional_construction_follows_the_field_order() -> None:
    event = ToolCallEvent("agent", ChannelType.AI, "tc-1", "Ask", {}, None, "room-1")
    assert (event.channel_id, event.name, event.room_id, event.result) == (
        "agent",
        "Ask",
        "room-1",
        None,
    )
    assert event.session is None
    assert event.actor_id is None


def test_timestamp_is_aware_utc() -> None:
    assert _event().timestamp.tzinfo is UTC


def test_event_is_frozen() -> None:
    event = _event()
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.result = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("flags", "outcome"),
    [
        ({}, "served"),
        ({"is_error": True}, "failed"),
        ({"is_error": True, "error_detail": "TimeoutError: late"}, "failed"),
        ({"is_error": True, "refused": True}, "refused"),
        ({"is_error": True, "refused": True, "refused_but_ran": True}, "refused"),
        ({"is_error": True, "cancelled": True}, "cancelled"),
        ({"is_error": True, "cancelled": True, "refused": True}, "cancelled"),
    ],
)
def test_outcome_reads_the_flags(flags: dict[str, object], outcome: str) -> None:
    assert _event(**flags).outcome == outcome


def test_outcome_is_a_plain_string_too() -> None:
    outcome = _event(refused=True, is_error=True).outcome
    assert outcome is ToolCallOutcome.REFUSED
    assert isinstance(outcome, str)
    assert f"{outcome}" == "refused"


def test_replace_keeps_the_other_fields() -> None:
    before = _event(result=None, actor_id="alice")
    after = dataclasses.replace(before, result="ok")
    assert after.result == "ok"
    assert after.actor_id == "alice"
    assert after.timestamp == before.timestamp
