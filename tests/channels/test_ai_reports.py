"""ON_TOOL_CALL: every call is reported once, marked with how it ended."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ai_harness import LOOKUP, Build, ask, round_of, tool_call

from roomkit import (
    HookExecution,
    HookResult,
    HookTrigger,
    ToolCallEvent,
    ToolFailedError,
    ToolRefusedError,
)

TOOL_CALL = HookTrigger.ON_TOOL_CALL
INPUT = HookTrigger.ON_USER_INPUT_REQUIRED


def error(message: str) -> str:
    return json.dumps({"error": message})


def flags(report: ToolCallEvent) -> tuple[bool, bool, bool]:
    return report.is_error, report.refused, report.cancelled


async def test_an_answer_is_reported_verbatim_as_a_success(build: Build) -> None:
    h = await build(round_of(ask()))
    h.answer_from_hook('{"answer": "blue"}')

    await h.say()

    report = h.report()
    assert report.result == '{"answer": "blue"}'
    assert flags(report) == (False, False, False)
    assert report.error_detail is None
    assert (report.name, report.arguments, report.room_id) == ("Ask", {"question": "Color?"}, "r1")
    assert len(h.reports) == 1


async def test_a_rejection_is_reported_refused(build: Build) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler

    @h.kit.hook(INPUT)
    async def person_declines(event: Any, ctx: Any) -> None:
        handler.reject(event.pending_id, "user declined")

    await h.say()

    body = error("Human input rejected: user declined")
    assert h.read() == [(body, True)]
    report = h.report()
    assert flags(report) == (True, True, False)
    assert (report.result, report.error_detail) == (body, None)


async def test_a_timeout_is_reported_failed_with_the_message(build: Build) -> None:
    h = await build(round_of(ask()))  # nobody answers: the 300 s pass on the virtual clock

    await h.say()

    body = error("Human input timed out after 300s for tool 'Ask'")
    assert h.read() == [(body, True)]
    report = h.report()
    assert flags(report) == (True, False, False)
    assert report.error_detail == body
    assert h.report().outcome == "failed"


async def test_a_tool_that_raises_is_reported_failed_without_its_message(build: Build) -> None:
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        raise KeyError("secret-key")

    h.ai.tool_handler = lookup

    await h.say()

    assert h.read() == [(error("Tool 'lookup' failed (KeyError)"), True)]
    report = h.report()
    assert flags(report) == (True, False, False)
    assert report.error_detail == "KeyError: 'secret-key'"


async def test_a_handler_closed_under_the_wait_takes_the_generic_failure_path(
    build: Build,
) -> None:
    h = await build(round_of(ask()))
    assert h.human is not None
    handler = h.human.handler
    asked = asyncio.Event()

    @h.kit.hook(INPUT)
    async def notify(event: Any, ctx: Any) -> None:
        asked.set()

    async def host_closes() -> None:
        await asked.wait()
        await handler.close(channel_id="agent")

    closing = asyncio.create_task(host_closes())
    await h.say()
    await closing

    [(content, is_error)] = h.read()
    assert is_error
    message = json.loads(content)["error"]
    assert message.startswith("Tool 'Ask' failed (")
    assert "closed" not in message
    report = h.report()
    assert flags(report) == (True, False, False)
    assert report.error_detail is not None
    assert report.error_detail.endswith(": Human input handler closed")


@pytest.mark.parametrize(
    ("raised", "expected_flags"),
    [
        (ToolFailedError(error("disk full")), (True, False, False)),
        (ToolRefusedError(error("not for you")), (True, True, False)),
    ],
)
async def test_a_host_tool_steers_its_outcome_with_the_tool_errors(
    build: Build, raised: Exception, expected_flags: tuple[bool, bool, bool]
) -> None:
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        raise raised

    h.ai.tool_handler = lookup

    await h.say()

    assert h.read() == [(str(raised), True)]
    assert flags(h.report()) == expected_flags


async def test_a_success_runs_the_sync_chain_which_may_replace_the_result(build: Build) -> None:
    h = await build(round_of(ask()))
    h.answer_from_hook('{"answer": "my card is 4242"}')

    @h.kit.hook(TOOL_CALL)
    async def redact(event: ToolCallEvent, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"result": '{"answer": "[redacted]"}'})

    await h.say()

    assert h.read() == [('{"answer": "[redacted]"}', False)]
    assert h.report().result == '{"answer": "[redacted]"}'


async def test_a_sync_block_of_a_success_turns_it_into_an_error(build: Build) -> None:
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        return "classified"

    h.ai.tool_handler = lookup

    @h.kit.hook(TOOL_CALL)
    async def censor(event: ToolCallEvent, ctx: Any) -> HookResult:
        return HookResult.block("withheld")

    await h.say()

    assert h.read() == [(error("withheld"), True)]


@pytest.mark.parametrize("answer", ["reject", "timeout", "undeclared"])
async def test_failures_reach_only_the_async_observers(build: Build, answer: str) -> None:
    call = tool_call("Nope") if answer == "undeclared" else ask()
    h = await build(round_of(call))
    assert h.human is not None
    handler = h.human.handler
    sync_seen: list[ToolCallEvent] = []
    async_seen: list[ToolCallEvent] = []

    @h.kit.hook(INPUT)
    async def person(event: Any, ctx: Any) -> None:
        if answer == "reject":
            handler.reject(event.pending_id, "no")

    @h.kit.hook(TOOL_CALL)
    async def chain(event: ToolCallEvent, ctx: Any) -> HookResult:
        sync_seen.append(event)
        return HookResult.allow()

    @h.kit.hook(TOOL_CALL, execution=HookExecution.ASYNC)
    async def observer(event: ToolCallEvent, ctx: Any) -> None:
        async_seen.append(event)

    await h.say()

    assert sync_seen == []
    assert len(async_seen) == 1
    assert async_seen[0].is_error


async def test_each_call_of_a_round_is_reported_once(build: Build) -> None:
    h = await build(
        round_of(ask(id="tc-1"), tool_call("lookup", id="tc-2"), tool_call("Nope", id="tc-3")),
        tools=[LOOKUP],
    )
    h.answer_from_hook("blue")

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        return "found"

    h.ai.tool_handler = lookup

    await h.say()

    assert sorted(event.tool_call_id for event in h.reports) == ["tc-1", "tc-2", "tc-3"]
    assert [h.report(i).outcome for i in ("tc-1", "tc-2", "tc-3")] == [
        "served",
        "served",
        "refused",
    ]
    assert {event.actor_id for event in h.reports} == {"alice"}
