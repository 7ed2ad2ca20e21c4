"""Rounds of calls: concurrency, result order, bounds on calls, rounds and history."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ai_harness import LOOKUP, Build, ask, new_human, round_of, tool_call

from roomkit import HookTrigger, InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.exceptions import ProviderTimeoutError
from roomkit.providers.ai.base import AIContext, AIResponse
from roomkit.providers.ai.mock import MockAIProvider

INPUT = HookTrigger.ON_USER_INPUT_REQUIRED


def error(message: str) -> str:
    return json.dumps({"error": message})


async def test_a_human_call_waits_while_a_plain_tool_finishes(build: Build) -> None:
    h = await build(round_of(ask(id="tc-1"), tool_call("lookup", id="tc-2")), tools=[LOOKUP])
    assert h.human is not None
    handler = h.human.handler
    looked_up = asyncio.Event()
    order: list[str] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        order.append("lookup finished")
        looked_up.set()
        return "found"

    h.ai.tool_handler = lookup

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        async def person() -> None:
            await looked_up.wait()
            order.append("person answered")
            handler.resolve(event.pending_id, "blue")

        asyncio.create_task(person())  # noqa: RUF006 - the turn below outlives it

    await h.say()

    assert order == ["lookup finished", "person answered"]
    assert h.read() == [("blue", False), ("found", False)]
    assert [part.tool_call_id for part in h.provider.calls[1].messages[-1].tool_result_parts] == [
        "tc-1",
        "tc-2",
    ]


async def test_calls_of_one_round_run_concurrently(build: Build) -> None:
    """The first call can only finish once the second one has asked its question."""
    h = await build(round_of(tool_call("lookup", id="tc-1"), ask(id="tc-2")), tools=[LOOKUP])
    assert h.human is not None
    handler = h.human.handler
    asked = asyncio.Event()
    pending: list[str] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        await asked.wait()
        handler.resolve(pending[0], "blue")
        return "found"

    h.ai.tool_handler = lookup

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        pending.append(event.pending_id)
        asked.set()

    await h.say()

    assert h.read() == [("found", False), ("blue", False)]


async def test_tool_timeout_seconds_bounds_a_host_tool(build: Build) -> None:
    h = await build(
        round_of(tool_call("lookup")), tools=[LOOKUP], human=None, tool_timeout_seconds=5
    )
    never = asyncio.Event()

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        await never.wait()
        return "late"  # pragma: no cover - never reached

    h.ai.tool_handler = lookup

    await h.say()

    body = error("tool 'lookup' did not answer within 5 s")
    assert h.read() == [(body, True)]
    report = h.report()
    assert (report.is_error, report.refused) == (True, False)
    assert report.error_detail == "ToolTimeoutError: tool 'lookup' did not answer within 5 s"


async def test_tool_timeout_seconds_does_not_bound_a_human_tool(build: Build) -> None:
    h = await build(round_of(ask()), tool_timeout_seconds=5)
    assert h.human is not None
    handler = h.human.handler

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        # The person answers 60 s later, well past the channel's 5 s bound for host tools.
        asyncio.get_running_loop().call_later(60, handler.resolve, event.pending_id, "blue")

    await h.say()

    assert h.read() == [("blue", False)]


async def test_tool_timeouts_bound_a_human_tool_as_its_deadline(build: Build) -> None:
    h = await build(round_of(ask()), tool_timeouts={"Ask": 5})
    assert h.human is not None
    handler = h.human.handler
    pending: list[str] = []

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        pending.append(event.pending_id)

    await h.say()

    assert h.read() == [(error("Human input timed out after 5.0s for tool 'Ask'"), True)]
    assert h.report().outcome == "failed"
    assert handler.resolve(pending[0], "too late") is False


async def test_max_tool_rounds_ends_a_turn_that_keeps_calling(build: Build) -> None:
    looping = round_of(tool_call("lookup"))
    h = await build(looping, looping, looping, tools=[LOOKUP], human=None, max_tool_rounds=2)
    ran: list[str] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        ran.append(name)
        return "again"

    h.ai.tool_handler = lookup

    result = await h.say()

    assert ran == ["lookup", "lookup"]
    assert len(h.provider.calls) == 3
    assert result.responses == ()


async def test_the_calls_a_turn_stops_at_its_round_limit_are_reported_cut(build: Build) -> None:
    """The calls of the response that reaches ``max_tool_rounds`` never run, and each is
    reported to ON_TOOL_CALL as cancelled, once."""
    h = await build(
        round_of(tool_call("lookup")),
        round_of(tool_call("lookup", id="tc-2"), ask(id="tc-3")),
        tools=[LOOKUP],
        max_tool_rounds=1,
    )
    asked: list[Any] = []
    h.kit.hook(INPUT)(_record(asked))

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        return "again"

    h.ai.tool_handler = lookup

    await h.say()

    assert asked == []
    assert [(r.tool_call_id, r.outcome) for r in h.reports] == [
        ("tc-1", "served"),
        ("tc-2", "cancelled"),
        ("tc-3", "cancelled"),
    ]
    hint = "The turn ended before its result."
    assert json.loads(str(h.report("tc-3").result))["hint"] == hint


def _record(into: list[Any]) -> Any:
    async def hook(event: Any, ctx: Any) -> None:
        into.append(event)

    return hook


async def test_tool_loop_timeout_stops_new_rounds_on_the_loop_clock(build: Build) -> None:
    looping = round_of(tool_call("lookup"))
    h = await build(
        looping,
        looping,
        looping,
        tools=[LOOKUP],
        human=None,
        tool_timeout_seconds=10,
        tool_loop_timeout_seconds=15,
    )
    never = asyncio.Event()
    ran: list[str] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        ran.append(name)
        await never.wait()
        return "late"  # pragma: no cover - never reached

    h.ai.tool_handler = lookup

    await h.say()

    # Two rounds of 10 s each; the third would start after the 15 s budget.
    assert ran == ["lookup", "lookup"]


async def test_the_model_sees_at_most_history_limit_recent_events(build: Build) -> None:
    h = await build(human=None, history_limit=3)

    await h.say("one")
    await h.say("two")
    await h.say("three")

    seen = [(message.role, message.text) for message in h.provider.calls[2].messages]
    assert seen == [("user", "two"), ("assistant", "Done."), ("user", "three")]
    assert h.provider.calls[2].messages[0].name == "alice"


async def test_the_reply_reaches_the_websocket_connection(build: Build) -> None:
    h = await build(round_of(ask()))
    h.answer_from_hook("blue")

    result = await h.say()

    assert [event.content.body for event in h.delivered] == ["Done."]
    assert h.delivered[0] is result.responses[0]
    assert h.delivered[0].channel_id == "agent"


async def test_the_turn_tools_and_prompt_reach_the_model(build: Build) -> None:
    h = await build(human=new_human(), tools=[LOOKUP])

    await h.say()

    context = h.provider.calls[0]
    assert context.system_prompt == "You help."
    assert sorted(tool.name for tool in context.tools) == ["Ask", "lookup"]
    assert context.room.id == "r1"


async def test_two_questions_in_one_round_are_answered_in_any_order(build: Build) -> None:
    h = await build(round_of(ask("First?", id="tc-1"), ask("Second?", id="tc-2")))
    assert h.human is not None
    handler = h.human.handler
    both_asked = asyncio.Event()
    pending: dict[str, str] = {}

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        pending[event.arguments["question"]] = event.pending_id
        if len(pending) == 2:
            both_asked.set()

    async def person() -> None:
        await both_asked.wait()
        handler.resolve(pending["Second?"], "two")
        handler.resolve(pending["First?"], "one")

    answering = asyncio.create_task(person())
    await h.say()
    await answering

    assert h.read() == [("one", False), ("two", False)]


async def test_an_answer_and_the_channel_bound_in_one_instant_agree(
    build: Build,
) -> None:
    h = await build(round_of(ask()), tool_timeouts={"Ask": 5})
    assert h.human is not None
    handler = h.human.handler
    told: list[bool] = []

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        # The person answers at the very instant the channel's 5 s bound expires.
        def answer() -> None:
            told.append(handler.resolve(event.pending_id, "blue"))

        asyncio.get_running_loop().call_later(5, answer)

    await h.say()

    # Exactly one of them wins, and the model reads the winner.
    if told == [True]:
        assert h.read() == [("blue", False)]
    else:
        assert told == [False]
        assert h.read() == [(error("Human input timed out after 5.0s for tool 'Ask'"), True)]


class SilentOnceModel(MockAIProvider):
    """A model whose first call never answers; later calls read the script."""

    def __init__(self, *responses: AIResponse) -> None:
        super().__init__(ai_responses=list(responses))
        self.silent = True

    async def generate(self, context: AIContext) -> AIResponse:
        if self.silent:
            self.silent = False
            await asyncio.Event().wait()
        return await super().generate(context)


async def test_a_model_call_that_never_answers_fails_at_the_turn_budget() -> None:
    """The room's next message gets its turn and its reply."""
    kit = RoomKit()
    model = SilentOnceModel(AIResponse(content="Here now."))
    kit.register_channel(AIChannel("agent", provider=model, tool_loop_timeout_seconds=15))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    try:
        with pytest.raises(ProviderTimeoutError, match=r"SilentOnceModel\.generate\(\) did not"):
            await kit.process_inbound(
                InboundMessage("ws", "alice", TextContent("hi")), room_id="r1"
            )

        result = await kit.process_inbound(
            InboundMessage("ws", "alice", TextContent("still there?")), room_id="r1"
        )
    finally:
        await kit.close()
    assert [reply.content.body for reply in result.responses] == ["Here now."]
