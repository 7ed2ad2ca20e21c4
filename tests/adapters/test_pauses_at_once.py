"""The pauses of one stop are asked at once; a lone pause is asked in the run's own task; a
pause that fails cuts the others."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from roomkit.adapters import pydantic_ai as pa
from roomkit.adapters._asking import all_at_once
from roomkit.core.exceptions import ArgumentsTooLargeError
from roomkit.tools.approvals import Approval
from roomkit.tools.human_input import HumanInputHandler


async def test_a_lone_call_runs_in_the_callers_task() -> None:
    async def which() -> asyncio.Task[object] | None:
        return asyncio.current_task()

    assert await all_at_once([which()]) == [asyncio.current_task()]


async def test_several_calls_run_at_once_and_come_back_in_order() -> None:
    second_started = asyncio.Event()

    async def first() -> str:
        # Ends only once the second has started: the calls run at once, not in turn.
        await second_started.wait()
        return "first"

    async def second() -> str:
        second_started.set()
        return "second"

    assert await all_at_once([first(), second()]) == ["first", "second"]


async def test_a_pause_that_fails_cuts_the_others_of_its_stop() -> None:
    """A call no request can keep failed the run while another call of the same stop went on
    waiting, for an hour, for a person whose decision no run would read; the wait is cut
    with the run, and its request withdrawn."""
    handler = HumanInputHandler()
    told = asyncio.Event()

    async def announce(event: object) -> None:
        told.set()

    handler.on_input_required = announce

    async def when(name: str, arguments: dict[str, Any]) -> bool:
        if len(arguments["to"]) > 10:
            await told.wait()  # the other call is asked first
        return True

    def model(messages: list[Any], info: Any) -> ModelResponse:
        if len(messages) == 1:
            calls = {"small": "bob", "large": "x" * 100_000}
            return ModelResponse(
                parts=[
                    ToolCallPart("send", {"to": to}, tool_call_id=cid) for cid, to in calls.items()
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    handle = pa.deferred_handler(handler, approvals={"send": Approval(when=when)})
    agent: Agent[None, Any] = Agent(
        FunctionModel(model), capabilities=[HandleDeferredToolCalls(handler=handle)]
    )

    @agent.tool_plain(requires_approval=True)
    def send(to: str) -> str:
        return f"sent to {to}"

    with pytest.raises(ArgumentsTooLargeError):
        await agent.run("mail them")
    assert told.is_set()
    assert handler.statistics().parked_waits == 0
    assert await handler.list_pending() == []
