"""The pauses of one stop are asked at once; a lone pause is asked in the run's own task; a
pause that fails cuts the others, and in a durable run withdraws the requests its stop
opened when it fails for good."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as AgentsAgent
from agents import function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic_ai import Agent, Tool
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from roomkit.adapters import langgraph as lg
from roomkit.adapters import openai_agents as oa
from roomkit.adapters import pydantic_ai as pa
from roomkit.adapters._asking import all_at_once
from roomkit.core.exceptions import ArgumentsTooLargeError, StoreClosedError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores.sqlite import SQLiteStore
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


def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


def mailer(handler: HumanInputHandler, calls: dict[str, str], **options: Any) -> Agent[None, Any]:
    """An agent whose model sends ``calls`` (call id to address) in one step, each held, and
    whose run ends with its ``DeferredToolRequests``."""

    def model(messages: list[Any], info: Any) -> ModelResponse:
        sends = [ToolCallPart("send", {"to": to}, tool_call_id=c) for c, to in calls.items()]
        return ModelResponse(parts=sends if len(messages) == 1 else [TextPart("done")])

    handle = pa.deferred_handler(handler, wait=False, **options)
    return Agent(
        FunctionModel(model),
        output_type=[str, DeferredToolRequests],
        tools=[Tool(send, requires_approval=True)],
        capabilities=[HandleDeferredToolCalls(handler=handle)],
    )


@pytest.fixture
async def durable(tmp_path: Path) -> AsyncIterator[HumanInputHandler]:
    """A handler on a SQLite store."""
    store = SQLiteStore(tmp_path / "requests.db")
    yield HumanInputHandler(store=store)
    await store.close()


async def withdrawn_by(handler: HumanInputHandler, stop: Awaitable[object]) -> PendingInput:
    """The request that ``stop``, a run stopping at two calls the second of which is too
    large for a request, opened first: withdrawn once the stop has failed."""
    with pytest.raises(ArgumentsTooLargeError):
        await stop
    assert await handler.list_pending() == []
    (request,) = await handler.list_settled()
    assert request.status is PendingInputStatus.REJECTED
    assert request.withdrawn
    return request


async def test_a_durable_stop_that_fails_for_good_withdraws_what_it_opened(
    durable: HumanInputHandler,
) -> None:
    """A stop whose second call no request can keep left its first call's request open on
    the store, announced, for a decision no run would read; it is withdrawn."""
    agent = mailer(durable, {"small": "bob", "large": "x" * 100_000})
    request = await withdrawn_by(durable, agent.run("mail them", run_id="r-1"))
    assert request.tool_call_id == "small"
    assert "could not be asked" in (request.reject_reason or "")


async def test_a_graphs_stop_that_fails_for_good_withdraws_what_it_opened(
    durable: HumanInputHandler,
) -> None:
    def hold(state: dict[str, Any]) -> dict[str, Any]:
        sends = [{"name": "send", "args": {"to": to}} for to in ("bob", "x" * 100_000)]
        interrupt({"action_requests": sends})
        return {"done": True}

    graph = StateGraph(dict)
    graph.add_node("hold", hold)
    graph.add_edge(START, "hold")
    graph.add_edge("hold", END)
    app = graph.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    request = await withdrawn_by(durable, lg.start(app, {}, thread, handler=durable))
    assert request.arguments == {"to": "bob"}


async def test_an_agents_stop_that_fails_for_good_withdraws_what_it_opened(
    durable: HumanInputHandler,
) -> None:
    set_tracing_disabled(True)

    calls = [
        function_call("send", {"to": to}, call_id=c)
        for c, to in (("a", "bob"), ("b", "x" * 100_000))
    ]
    model = ScriptedModel([calls, [assistant_message("done")]])
    agent = AgentsAgent(
        name="mailer", model=model, tools=[function_tool(send, needs_approval=True)]
    )
    request = await withdrawn_by(durable, oa.start(agent, "go", handler=durable, run_key="r-1"))
    assert request.tool_call_id == "a"


async def test_a_durable_stop_cut_by_its_store_is_re_attached_by_a_run_again(
    tmp_path: Path,
) -> None:
    """A store that fails part-way through a stop leaves the requests it opened: the run
    started again re-attaches to them, and nobody is asked twice."""
    path = tmp_path / "requests.db"
    store = SQLiteStore(path)
    handler = HumanInputHandler(store=store)

    async def when(name: str, arguments: dict[str, Any]) -> bool:
        if arguments["to"] == "carol":
            await store.close()  # the store goes away between the stop's two requests
        return True

    calls = {"one": "bob", "two": "carol"}
    with pytest.raises(StoreClosedError):
        await mailer(handler, calls, approvals={"send": Approval(when=when)}).run(
            "mail them", run_id="r-1"
        )
    again = SQLiteStore(path)
    try:
        handler = HumanInputHandler(store=again)
        (first,) = [request.pending_id for request in await handler.list_pending()]
        result = await mailer(handler, calls).run("mail them", run_id="r-1")
        assert isinstance(result.output, DeferredToolRequests)
        opened = result.output.metadata
        assert opened["one"][pa.METADATA_KEY]["pending_id"] == first
        assert {request.pending_id for request in await handler.list_pending()} == {
            first,
            opened["two"][pa.METADATA_KEY]["pending_id"],
        }
    finally:
        await again.close()
