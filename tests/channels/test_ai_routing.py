"""Who a call belongs to: the actor, the channel a shared handler routes to, framework events."""

from __future__ import annotations

from typing import Any

import pytest
from ai_harness import DONE, LOOKUP, Build, ask, new_human, round_of, tool_call

from roomkit import (
    HookResult,
    HookTrigger,
    HumanInputHandler,
    InboundMessage,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools import current_tool_actor_id, current_tool_call, current_tool_room_id

INPUT = HookTrigger.ON_USER_INPUT_REQUIRED
BEFORE = HookTrigger.BEFORE_TOOL_USE


async def test_a_host_tool_reads_the_sender_as_its_actor(build: Build) -> None:
    h = await build(round_of(tool_call("lookup", id="tc-9")), tools=[LOOKUP], human=None)
    seen: list[Any] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        seen.append((current_tool_actor_id(), current_tool_room_id(), current_tool_call()))
        return "found"

    h.ai.tool_handler = lookup

    await h.say(sender="bob")

    [(actor, room_id, call)] = seen
    assert (actor, room_id) == ("bob", "r1")
    assert call is not None
    assert (call.room_id, call.tool_call_id, call.channel_id) == ("r1", "tc-9", "agent")
    assert h.report("tc-9").actor_id == "bob"


async def test_the_request_and_its_event_carry_the_sender(build: Build) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    seen: list[Any] = []

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        seen.append((event, handler.pending[event.pending_id]))
        handler.resolve(event.pending_id, "blue")

    await h.say(sender="alice")

    [(event, request)] = seen
    assert (event.actor_id, request.actor_id) == ("alice", "alice")
    assert (event.room_id, event.channel_id, event.tool_call_id) == ("r1", "agent", "tc-1")
    assert event.channel_type == "ai"
    assert "alice" in {
        participant.id for participant in (await h.kit.room_context("r1")).participants
    }


async def test_an_authorless_turn_has_no_actor(build: Build) -> None:
    h = await build(round_of(ask(id="tc-1"), tool_call("lookup", id="tc-2")), tools=[LOOKUP])
    assert h.human is not None
    handler = h.human.handler
    actors: list[Any] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        actors.append(("tool", current_tool_actor_id()))
        return "found"

    h.ai.tool_handler = lookup

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        actors.append(("event", event.actor_id))
        actors.append(("request", handler.pending[event.pending_id].actor_id))
        handler.resolve(event.pending_id, "blue")

    await h.say(sender="")

    assert sorted(actors) == [("event", None), ("request", None), ("tool", None)]
    assert {report.actor_id for report in h.reports} == {None}


async def test_a_shared_handler_routes_each_request_to_its_channels_hooks() -> None:
    shared = HumanInputHandler()
    kit = RoomKit()
    kit.register_channel(WebSocketChannel("ws"))
    for name in ("a", "b"):
        provider = MockAIProvider(ai_responses=[round_of(ask()), DONE])
        human = new_human(handler=shared)
        kit.register_channel(AIChannel(name, provider=provider, human_input_handler=human))
        await kit.create_room(f"room-{name}")
        await kit.attach_channel(f"room-{name}", name)
        await kit.attach_channel(f"room-{name}", "ws")
    heard: list[tuple[str, str]] = []

    def register(name: str) -> None:
        @kit.hook(INPUT, channel_ids={name}, name=f"notify-{name}")
        async def notify(event: Any, ctx: Any) -> HookResult:
            heard.append((name, event.channel_id))
            shared.resolve(event.pending_id, f"answered on {name}")
            return HookResult.allow()

    register("a")
    register("b")

    for name in ("a", "b"):
        message = InboundMessage("ws", "alice", TextContent("hi"))
        await kit.process_inbound(message, room_id=f"room-{name}")

    assert heard == [("a", "a"), ("b", "b")]
    for name in ("a", "b"):
        channel = kit.get_channel(name)
        assert isinstance(channel, AIChannel)
        assert isinstance(channel.provider, MockAIProvider)
        parts = channel.provider.calls[1].messages[-1].tool_result_parts
        assert parts[0].content == f"answered on {name}"
    await kit.close()


async def test_before_tool_use_is_announced_as_a_framework_event(build: Build) -> None:
    h = await build(
        round_of(ask(id="tc-1"), tool_call("lookup", id="tc-2")), tools=[LOOKUP], human=new_human()
    )
    h.answer_from_hook("blue")
    events: list[dict[str, Any]] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        return "found"

    h.ai.tool_handler = lookup

    @h.kit.hook(BEFORE)
    async def no_lookups(event: Any, ctx: Any) -> HookResult:
        if event.name == "lookup":
            return HookResult.block("no lookups today")
        return HookResult.allow()

    @h.kit.on("before_tool_use")
    async def listen(event: Any) -> None:
        assert event.room_id == "r1"
        events.append(event.data)

    await h.say()

    assert sorted(events, key=lambda data: data["tool_call_id"]) == [
        {"tool_name": "Ask", "tool_call_id": "tc-1", "allowed": True, "reason": None},
        {
            "tool_name": "lookup",
            "tool_call_id": "tc-2",
            "allowed": False,
            "reason": "no lookups today",
        },
    ]


async def test_user_input_required_is_announced_even_without_hooks(build: Build) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    events: list[dict[str, Any]] = []

    @h.kit.on("user_input_required")
    async def listen(event: Any) -> None:
        events.append(event.data)
        handler.resolve(event.data["pending_id"], "blue")

    await h.say()

    [data] = events
    assert set(data) == {"pending_id", "tool_name", "tool_call_id", "allowed", "reason"}
    assert (data["tool_name"], data["tool_call_id"], data["allowed"], data["reason"]) == (
        "Ask",
        "tc-1",
        True,
        None,
    )
    assert h.read() == [("blue", False)]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("tool_loop_timeout_seconds", None),
        ("tool_loop_timeout_seconds", 0),
        ("tool_timeout_seconds", -1),
        ("tool_timeout_seconds", True),
    ],
)
def test_a_bad_bound_is_refused_with_its_name(option: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"{option} must be a positive number of seconds"):
        AIChannel("ai", provider=MockAIProvider(), **{option: value})  # type: ignore[arg-type]
