"""The tool context: what a tool knows about the call it serves, and tool_turn_context()."""

from __future__ import annotations

import asyncio
from dataclasses import FrozenInstanceError
from types import SimpleNamespace

import pytest

from roomkit.providers.ai.base import AITool
from roomkit.tools import (
    ToolCallContext,
    current_tool_actor_id,
    current_tool_allowed_names,
    current_tool_call,
    current_tool_requester,
    current_tool_room,
    current_tool_room_id,
    tool_turn_context,
)


def snapshot() -> tuple[object, ...]:
    return (
        current_tool_call(),
        current_tool_room_id(),
        current_tool_room(),
        current_tool_actor_id(),
        current_tool_requester(),
        current_tool_allowed_names(),
    )


def test_every_accessor_returns_none_outside_a_tool_loop() -> None:
    assert snapshot() == (None,) * 6


def test_tool_call_context_defaults_and_positional_order() -> None:
    assert ToolCallContext() == ToolCallContext("", "", "", None)
    call = ToolCallContext("r9", "tc9", "ch9", {"k": 1})

    assert (call.room_id, call.tool_call_id, call.channel_id) == ("r9", "tc9", "ch9")
    assert call.structured_content == {"k": 1}
    with pytest.raises(FrozenInstanceError):
        call.room_id = "other"  # type: ignore[misc]


def test_tool_turn_context_sets_the_turn_and_the_call() -> None:
    room = SimpleNamespace(id="r9")
    requester = object()
    call = ToolCallContext("r9", "tc9", "ch9")

    with tool_turn_context(
        room_id="r9",
        room=room,
        actor_id="carol",
        tools=[AITool(name="Ask"), "Search"],
        call=call,
        requester=requester,
    ):
        assert current_tool_call() is call
        assert current_tool_room_id() == "r9"
        assert current_tool_room() is room
        assert current_tool_actor_id() == "carol"
        assert current_tool_requester() is requester
        assert current_tool_allowed_names() == frozenset({"Ask", "Search"})

    assert snapshot() == (None,) * 6


def test_tool_turn_context_restores_the_outer_turn_even_on_error() -> None:
    inside: list[tuple[str | None, str | None]] = []

    def fail_inside() -> None:
        with tool_turn_context(room_id="inner", actor_id="bob"):
            inside.append((current_tool_room_id(), current_tool_actor_id()))
            raise RuntimeError("boom")

    with tool_turn_context(room_id="outer", actor_id="alice"):
        with pytest.raises(RuntimeError, match="boom"):
            fail_inside()
        assert (current_tool_room_id(), current_tool_actor_id()) == ("outer", "alice")
    assert inside == [("inner", "bob")]


def test_an_authorless_turn_has_no_actor() -> None:
    with tool_turn_context(room_id="r1"):
        assert current_tool_actor_id() is None
        assert current_tool_call() is None
        assert current_tool_allowed_names() is None


def test_the_room_id_comes_from_the_room_or_the_call() -> None:
    with tool_turn_context(room=SimpleNamespace(id="from-room")):
        assert current_tool_room_id() == "from-room"
    with tool_turn_context(room=SimpleNamespace(room_id="from-room-id")):
        assert current_tool_room_id() == "from-room-id"
    with tool_turn_context(call=ToolCallContext("from-call", "tc1")):
        assert current_tool_room_id() == "from-call"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"room_id": "r1", "room": SimpleNamespace(id="r2")},
        {"room_id": "r1", "call": ToolCallContext("r2")},
        {"room": SimpleNamespace(id="r1"), "call": ToolCallContext("r2")},
    ],
)
def test_tool_turn_context_refuses_different_rooms(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="different rooms"), tool_turn_context(**kwargs):  # type: ignore[arg-type]
        pytest.fail("the context must not be entered")

    assert snapshot() == (None,) * 6


def test_agreeing_rooms_are_accepted() -> None:
    with tool_turn_context(
        room_id="r1", room=SimpleNamespace(id="r1"), call=ToolCallContext("r1", "tc1")
    ):
        assert current_tool_room_id() == "r1"


async def test_gathered_calls_each_read_their_own_call() -> None:
    async def serve(call: ToolCallContext, actor: str) -> tuple[str | None, str | None]:
        with tool_turn_context(actor_id=actor, call=call):
            await asyncio.sleep(0)
            served = current_tool_call()
            return (served.tool_call_id if served else None, current_tool_actor_id())

    results = await asyncio.gather(
        serve(ToolCallContext("r1", "tc1"), "alice"),
        serve(ToolCallContext("r1", "tc2"), "bob"),
    )

    assert results == [("tc1", "alice"), ("tc2", "bob")]
    assert current_tool_call() is None


async def test_a_task_started_inside_the_turn_inherits_it() -> None:
    async def read() -> tuple[str | None, str | None]:
        return current_tool_room_id(), current_tool_actor_id()

    with tool_turn_context(room_id="r1", actor_id="alice"):
        task = asyncio.create_task(read())

    assert await task == ("r1", "alice")
