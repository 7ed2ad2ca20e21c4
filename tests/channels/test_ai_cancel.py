"""Cutting a turn (the channel closes) and stopping one (a steering Cancel)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ai_harness import DONE, LOOKUP, Build, ask, new_human, round_of, tool_call

from roomkit import (
    HookTrigger,
    HumanInputHandler,
    InboundMessage,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.models.steering import Cancel
from roomkit.providers.ai.mock import MockAIProvider

INPUT = HookTrigger.ON_USER_INPUT_REQUIRED
CLOSED = "The channel closed before its result."


def cancelled_body(name: str) -> str:
    return json.dumps({"error": "Tool call cancelled", "tool": name, "hint": CLOSED})


async def test_closing_the_channel_withdraws_the_request_and_reports_it_cancelled(
    build: Build,
) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    asked = asyncio.Event()
    pending: list[str] = []

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        pending.append(event.pending_id)
        asked.set()

    turn = asyncio.create_task(h.say())
    await asked.wait()
    await h.ai.close()
    result = await turn

    assert result.responses == ()
    assert h.delivered == []
    assert handler.resolve(pending[0], "too late") is False
    report = h.report()
    assert (report.cancelled, report.is_error) == (True, True)
    assert report.result == cancelled_body("Ask")
    assert len(h.provider.calls) == 1
    assert h.ai.running_turns() == []


async def test_closing_the_channel_cuts_every_call_of_the_round_once(build: Build) -> None:
    h = await build(round_of(ask(id="tc-1"), tool_call("lookup", id="tc-2")), tools=[LOOKUP])
    never = asyncio.Event()
    started = asyncio.Event()
    asked = asyncio.Event()

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        started.set()
        await never.wait()
        return "late"  # pragma: no cover - never reached

    h.ai.tool_handler = lookup

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        asked.set()

    turn = asyncio.create_task(h.say())
    await asked.wait()
    await started.wait()
    await h.ai.close()
    await turn

    assert h.report("tc-1").result == cancelled_body("Ask")
    assert h.report("tc-2").result == cancelled_body("lookup")
    assert len(h.reports) == 2


async def test_a_closed_channel_answers_no_more_turns(build: Build) -> None:
    h = await build()
    await h.ai.close()

    result = await h.say()

    assert result.responses == ()
    assert h.provider.calls == []


async def test_a_steering_cancel_lets_the_pending_answer_finish_then_stops(build: Build) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    asked = asyncio.Event()
    pending: list[str] = []

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        pending.append(event.pending_id)
        asked.set()

    turn = asyncio.create_task(h.say())
    await asked.wait()
    assert h.ai.steer(Cancel(reason="user left"), room_id="r1") is True
    assert handler.resolve(pending[0], "blue") is True
    result = await turn

    report = h.report()
    assert report.outcome == "served"
    assert report.result == "blue"
    assert len(h.provider.calls) == 1
    assert result.responses == ()


async def test_steering_another_room_finds_no_turn(build: Build) -> None:
    h = await build()

    assert h.ai.steer(Cancel(), room_id="elsewhere") is False
    with pytest.raises(TypeError, match="Cancel"):
        h.ai.steer("stop", room_id="r1")  # type: ignore[arg-type]


async def test_closing_one_channel_leaves_the_other_channels_requests_alone() -> None:
    shared = HumanInputHandler()
    kit = RoomKit()
    ws = WebSocketChannel("ws")
    kit.register_channel(ws)
    channels = {}
    for name in ("a", "b"):
        provider = MockAIProvider(ai_responses=[round_of(ask(id=f"tc-{name}")), DONE])
        channels[name] = AIChannel(
            name, provider=provider, human_input_handler=new_human(handler=shared)
        )
        kit.register_channel(channels[name])
        await kit.create_room(f"room-{name}")
        await kit.attach_channel(f"room-{name}", name)
        await kit.attach_channel(f"room-{name}", "ws")
    asked = {name: asyncio.Event() for name in channels}
    pending: dict[str, str] = {}

    @kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        pending[event.channel_id] = event.pending_id
        asked[event.channel_id].set()

    async def turn(name: str) -> Any:
        message = InboundMessage("ws", "alice", TextContent("hi"))
        return await kit.process_inbound(message, room_id=f"room-{name}")

    turns = {name: asyncio.create_task(turn(name)) for name in channels}
    await asked["a"].wait()
    await asked["b"].wait()

    await channels["a"].close()
    cut = await turns["a"]

    assert cut.responses == ()
    assert list(shared.pending) == [pending["b"]]
    assert shared.is_closed_for("a")
    assert not shared.is_closed_for("b")
    assert shared.resolve(pending["b"], "blue") is True
    served = await turns["b"]
    assert [reply.content.body for reply in served.responses] == ["Done."]
    await kit.close()


async def test_closing_the_kit_cuts_the_running_turns(build: Build) -> None:
    h = await build(round_of(ask()))
    asked = asyncio.Event()

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        asked.set()

    turn = asyncio.create_task(
        h.kit.process_inbound(InboundMessage("ws", "alice", TextContent("hi")))
    )
    await asked.wait()
    await h.kit.close()
    result = await turn

    assert result.responses == ()
    assert h.human is not None
    assert h.human.handler.pending == {}


async def test_a_cancelled_caller_cuts_its_turn_and_the_turn_is_forgotten(build: Build) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    asked = asyncio.Event()
    pending: list[str] = []

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        pending.append(event.pending_id)
        asked.set()

    message = InboundMessage("ws", "alice", TextContent("hi"))
    turn = asyncio.create_task(h.kit.process_inbound(message))
    await asked.wait()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    await h.kit.hooks.drain()

    hint = "The turn ended before its result."
    assert h.report().result == json.dumps(
        {"error": "Tool call cancelled", "tool": "Ask", "hint": hint}
    )
    assert handler.resolve(pending[0], "too late") is False
    assert h.ai.running_turns() == []
    assert h.ai.steer(Cancel(), room_id="r1") is False


@pytest.mark.parametrize("closes", ["channel", "kit"])
async def test_a_hook_of_the_turn_may_close_the_channel_or_the_kit(
    build: Build, closes: str
) -> None:
    """A close from inside the turn it cuts ends the turn, reported cancelled, once."""
    h = await build(round_of(ask()), DONE)
    close = h.ai.close if closes == "channel" else h.kit.close
    cut: list[BaseException] = []

    @h.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def shut_down(event: Any, ctx: Any) -> None:
        try:
            await close()
        except asyncio.CancelledError as error:
            cut.append(error)
            raise

    result = await h.say()

    assert result.responses == ()
    assert len(cut) == 1
    assert h.report().cancelled is True
    assert h.ai.running_turns() == []
    assert len(h.provider.calls) == 1
    await h.kit.close()  # a second close finds everything closed
