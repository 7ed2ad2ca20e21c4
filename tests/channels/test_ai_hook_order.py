"""The hooks around a human-input call: their order, the notification beside the wait, and the
SYNC chain's rules (priority, first block, ASYNC after, per-hook timeout)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from ai_harness import ASK, LOOKUP, Build, ask, round_of, tool_call

from roomkit import HookExecution, HookResult, HookTrigger

BEFORE = HookTrigger.BEFORE_TOOL_USE
INPUT = HookTrigger.ON_USER_INPUT_REQUIRED
TOOL_CALL = HookTrigger.ON_TOOL_CALL
ANSWER = '{"answer": "blue"}'


async def test_human_call_runs_before_tool_use_then_input_required_then_on_tool_call(
    build: Build,
) -> None:
    h = await build(round_of(ask()))
    order: list[str] = []
    assert h.human is not None
    handler = h.human.handler

    @h.kit.hook(TOOL_CALL)
    async def observe(event: Any, ctx: Any) -> HookResult:
        order.append(f"on_tool_call:{event.result}")
        return HookResult.allow()

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> HookResult:
        order.append(f"on_user_input_required:{event.arguments['question']}")
        handler.resolve(event.pending_id, ANSWER)
        return HookResult.allow()

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> HookResult:
        order.append(f"before_tool_use:{event.name}")
        return HookResult.allow()

    result = await h.say()

    assert order == [
        "before_tool_use:Ask",
        "on_user_input_required:Color?",
        f"on_tool_call:{ANSWER}",
    ]
    assert h.read() == [(ANSWER, False)]
    assert [reply.content.body for reply in result.responses] == ["Done."]


async def test_an_answer_given_while_the_sync_notification_is_blocked_is_taken(
    build: Build,
) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    release, finished = asyncio.Event(), asyncio.Event()

    @h.kit.hook(INPUT)
    async def slow_broadcast(event: Any, ctx: Any) -> HookResult:
        handler.resolve(event.pending_id, ANSWER)  # the person is faster than the broadcast
        await release.wait()
        finished.set()
        return HookResult.allow()

    result = await h.say()
    assert not finished.is_set()  # the turn ended while the hook was still blocked
    assert h.read() == [(ANSWER, False)]
    assert [reply.content.body for reply in result.responses] == ["Done."]
    release.set()
    await finished.wait()


async def test_a_block_from_the_notification_rejects_the_request(build: Build) -> None:
    h = await build(round_of(ask()))
    framework: list[Any] = []

    @h.kit.hook(INPUT)
    async def deny(event: Any, ctx: Any) -> HookResult:
        return HookResult.block("not now")

    @h.kit.on("user_input_required")
    async def listen(event: Any) -> None:
        framework.append(event.data)

    await h.say()

    body = {"error": "Human input rejected: Denied by ON_USER_INPUT_REQUIRED hook"}
    assert h.read() == [(json.dumps(body), True)]
    report = h.report()
    assert (report.is_error, report.refused, report.error_detail) == (True, True, None)
    assert framework[0]["allowed"] is False
    assert framework[0]["reason"] == "not now"


async def test_a_raising_notification_loses_only_the_notification(build: Build) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    raised = asyncio.Event()
    pending_ids: list[str] = []

    @h.kit.hook(INPUT)
    async def broken(event: Any, ctx: Any) -> HookResult:
        pending_ids.append(event.pending_id)
        raised.set()
        raise ConnectionError("push service down")

    async def person() -> None:
        await raised.wait()
        assert handler.resolve(pending_ids[0], ANSWER)

    answering = asyncio.create_task(person())
    await h.say()
    await answering

    assert h.read() == [(ANSWER, False)]
    assert h.report().outcome == "served"


async def test_hooks_returning_none_allow_silently_on_every_trigger(
    build: Build, caplog: pytest.LogCaptureFixture
) -> None:
    h = await build(round_of(ask(), tool_call("lookup", {"key": "k"}, id="tc-2")), tools=[LOOKUP])
    assert h.human is not None
    handler = h.human.handler
    ran: list[HookTrigger] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        return "found"

    h.ai.tool_handler = lookup

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> None:
        ran.append(BEFORE)

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        ran.append(INPUT)
        handler.resolve(event.pending_id, ANSWER)

    @h.kit.hook(TOOL_CALL)
    async def observe(event: Any, ctx: Any) -> None:
        ran.append(TOOL_CALL)

    with caplog.at_level(logging.DEBUG, logger="roomkit"):
        await h.say()

    assert h.read() == [(ANSWER, False), ("found", False)]
    assert sorted(ran) == sorted([BEFORE, BEFORE, INPUT, TOOL_CALL, TOOL_CALL])
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_sync_hooks_run_lowest_priority_first_ties_in_registration_order(
    build: Build,
) -> None:
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)
    ran: list[str] = []

    def register(label: str, priority: int) -> None:
        @h.kit.hook(BEFORE, priority=priority, name=label)
        async def hook(event: Any, ctx: Any) -> HookResult:
            ran.append(label)
            return HookResult.allow()

    register("late", 10)
    register("first-tie", 0)
    register("early", -5)
    register("second-tie", 0)

    await h.say()

    assert ran == ["early", "first-tie", "second-tie", "late"]


async def test_the_first_block_stops_the_chain_and_skips_the_observers(build: Build) -> None:
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)
    ran: list[str] = []

    @h.kit.hook(BEFORE, priority=1)
    async def blocker(event: Any, ctx: Any) -> HookResult:
        ran.append("blocker")
        return HookResult.block("rate limited")

    @h.kit.hook(BEFORE, priority=2)
    async def after(event: Any, ctx: Any) -> HookResult:
        ran.append("after")
        return HookResult.allow()

    @h.kit.hook(BEFORE, execution=HookExecution.ASYNC)
    async def watcher(event: Any, ctx: Any) -> None:
        ran.append("watcher")

    await h.say()

    assert ran == ["blocker"]
    assert h.read() == [(json.dumps({"error": "rate limited"}), True)]


async def test_async_hooks_observe_after_the_sync_chain(build: Build) -> None:
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)
    ran: list[str] = []

    @h.kit.hook(BEFORE, execution=HookExecution.ASYNC, priority=-100)
    async def watcher(event: Any, ctx: Any) -> None:
        ran.append(f"watcher saw {list(ran)}")

    @h.kit.hook(BEFORE, priority=5)
    async def gate(event: Any, ctx: Any) -> HookResult:
        ran.append("gate")
        return HookResult.allow()

    await h.say()

    assert ran == ["gate", "watcher saw ['gate']"]


async def test_each_sync_hook_has_its_own_timeout_budget(build: Build) -> None:
    """A notification hook over its budget is skipped; the next hook still gets its own."""
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    never = asyncio.Event()
    ran: list[str] = []

    @h.kit.hook(INPUT, timeout=5, priority=0)
    async def stuck(event: Any, ctx: Any) -> HookResult:
        ran.append("stuck")
        await never.wait()
        return HookResult.allow()  # pragma: no cover - never reached

    @h.kit.hook(INPUT, timeout=5, priority=1)
    async def answer(event: Any, ctx: Any) -> HookResult:
        ran.append("answer")
        handler.resolve(event.pending_id, ANSWER)
        return HookResult.allow()

    await h.say()

    assert ran == ["stuck", "answer"]
    assert h.read() == [(ANSWER, False)]


async def test_a_human_tool_declared_only_by_the_handler_is_offered(build: Build) -> None:
    h = await build(round_of(ask()))
    h.answer_from_hook()

    await h.say()

    assert [tool.name for tool in h.provider.calls[0].tools] == [ASK.name]
