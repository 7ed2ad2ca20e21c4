"""An ``approvals`` entry naming no tool of the framework's agent (``"wrie"`` for ``wire``) is
logged once per run, with the tools the agent has, on each framework's own test doubles;
nothing is logged when every entry names a tool, nor when the tools cannot be known."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterator
from typing import Any, TypedDict

import pytest
from agents import Agent, HostedMCPTool, function_tool, handoff, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import RunContext
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.toolsets import FunctionToolset
from tests.adapters.conftest import Desk

from roomkit.adapters import langgraph as lg
from roomkit.adapters import openai_agents as oa
from roomkit.adapters import pydantic_ai as pa
from roomkit.tools.approvals import Approval, approve
from roomkit.tools.human_input import HumanInputHandler

TYPO = {"wrie": Approval(approvers=["bob"])}
RIGHT = {"wire": Approval(approvers=["bob"])}


def unmatched(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings about approvals naming no tool."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "roomkit.adapters" and record.levelno == logging.WARNING
    ]


async def approved_by_alice(handler: HumanInputHandler, run: Awaitable[Any], *, calls: int) -> None:
    """Await ``run`` while alice approves the ``calls`` tool calls it holds, each asked of
    her alone: the misspelt rule holds nothing, so the default rule asks the actor."""
    desk = Desk(handler)
    running = asyncio.create_task(run)
    for _ in range(calls):
        held = await desk.next()
        assert held.approvers == ("alice",)
        assert await handler.aresolve(held.pending_id, approve(), by="alice")
    await running


@pytest.fixture(autouse=True)
def warnings_caught(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="roomkit.adapters")


# OpenAI Agents SDK


@pytest.fixture
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def mailer(calls: int = 0, *, extra: list[Any] | None = None, **agent: Any) -> Agent[Any]:
    """An agent with the tool ``wire`` (held for approval), whose model calls it ``calls``
    times, then says done."""

    @function_tool(needs_approval=True)
    def wire(to: str) -> str:
        """Wire money."""
        return f"wired {to}"

    steps: list[Any] = [
        [function_call("wire", {"to": f"bob{n}"}, call_id=f"call-{n}")] for n in range(calls)
    ]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    return Agent(name="mailer", model=model, tools=[wire, *(extra or [])], **agent)


@pytest.mark.usefixtures("no_tracing")
async def test_openai_agents_warns_once_per_run_naming_the_stray_entry_and_the_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    run = oa.run(mailer(2), "go", handler=handler, run_key="r-1", actor="alice", approvals=TYPO)
    await approved_by_alice(handler, run, calls=2)
    (message,) = unmatched(caplog)
    assert message.startswith("openai_agents.run(): approvals names 'wrie'")
    assert "its tools: 'wire'" in message
    caplog.clear()
    pending = await oa.start(mailer(), "go", handler=handler, run_key="r-2", approvals=TYPO)
    assert pending == []
    (message,) = unmatched(caplog)
    assert message.startswith("openai_agents.start(): approvals names 'wrie'")


@pytest.mark.usefixtures("no_tracing")
async def test_openai_agents_takes_the_tools_of_agents_handed_to_or_run_as_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @function_tool(needs_approval=True)
    def refund(order: str) -> str:
        """Refund an order."""
        return order

    @function_tool(needs_approval=True)
    def close(account: str) -> str:
        """Close an account."""
        return account

    def agent() -> Agent[Any]:
        refunds = Agent(name="refunds", tools=[refund])
        closing = Agent(name="closing", tools=[close])
        helper = refunds.as_tool(tool_name="ask_refunds", tool_description="Refunds.")
        return mailer(extra=[helper], handoffs=[handoff(closing)])

    rules = {name: Approval() for name in ("wire", "refund", "close", "ask_refunds")}
    await oa.run(agent(), "go", handler=HumanInputHandler(), run_key="r-1", approvals=rules)
    assert unmatched(caplog) == []
    await oa.run(agent(), "go", handler=HumanInputHandler(), run_key="r-2", approvals=TYPO)
    (message,) = unmatched(caplog)
    assert "its tools: 'ask_refunds', 'close', 'refund', 'wire'" in message


@pytest.mark.usefixtures("no_tracing")
async def test_openai_agents_says_nothing_when_every_entry_names_a_tool_or_tools_come_from_mcp(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    await oa.run(mailer(), "go", handler=handler, run_key="r-1", approvals=RIGHT)
    hosted = HostedMCPTool(
        tool_config={"type": "mcp", "server_label": "bank", "server_url": "https://bank.test"}
    )
    # A hosted MCP server's approvals name the server's tools: those are not known here.
    await oa.run(mailer(extra=[hosted]), "go", handler=handler, run_key="r-2", approvals=TYPO)
    assert unmatched(caplog) == []


# LangGraph


class Scripted(GenericFakeChatModel):
    """A chat model that says what it is given, tools bound or not."""

    def bind_tools(self, tools: Any, **options: Any) -> Any:
        return self


@tool
def wire(to: str) -> str:
    """Wire money."""
    return f"wired {to}"


def banker(calls: int = 0) -> Any:
    """``create_agent`` holding ``wire`` for approval, whose model calls it ``calls`` times in
    one message, then says done."""
    tool_calls = [{"name": "wire", "args": {"to": f"bob{n}"}, "id": f"c-{n}"} for n in range(calls)]
    messages = [AIMessage(content="", tool_calls=tool_calls)] if calls else []
    model = Scripted(messages=iter([*messages, AIMessage("done")]))
    middleware = HumanInTheLoopMiddleware(interrupt_on={"wire": True, "audit": True})
    return create_agent(model, tools=[wire], middleware=[middleware], checkpointer=InMemorySaver())


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


GO = {"messages": [{"role": "user", "content": "go"}]}


async def test_langgraph_warns_once_per_run_naming_the_stray_entry_and_the_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    run = lg.run(banker(2), GO, thread("t-1"), handler=handler, actor="alice", approvals=TYPO)
    await approved_by_alice(handler, run, calls=2)
    (message,) = unmatched(caplog)
    assert message.startswith("langgraph.run(): approvals names 'wrie'")
    # The tools it runs, and those its middleware interrupts on.
    assert "its tools: 'audit', 'wire'" in message
    caplog.clear()
    assert await lg.start(banker(), GO, thread("t-2"), handler=handler, approvals=TYPO) == []
    (message,) = unmatched(caplog)
    assert message.startswith("langgraph.start(): approvals names 'wrie'")


class State(TypedDict, total=False):
    answer: str


async def test_langgraph_says_nothing_when_every_entry_names_a_tool_or_no_middleware_holds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    rules = {**RIGHT, "audit": Approval()}
    await lg.start(banker(), GO, thread("t-1"), handler=handler, approvals=rules)

    def ask(state: State) -> State:
        return {"answer": str(interrupt("Ship it?"))}

    # A graph of its own nodes: an approval there is an interrupt no graph names.
    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    assert await lg.start(graph, {}, thread("t-2"), handler=handler, approvals=TYPO)
    assert unmatched(caplog) == []


# Pydantic AI


def clerk(handle: Any, *, tools: list[str] | None = None) -> PydanticAgent[None, Any]:
    """An agent whose TestModel calls ``tools`` (none by default); ``wire`` needs approval."""
    agent: PydanticAgent[None, Any] = PydanticAgent(
        TestModel(call_tools=tools or []),
        output_type=[str, DeferredToolRequests],
        capabilities=[HandleDeferredToolCalls(handler=handle)],
    )

    @agent.tool_plain(requires_approval=True)
    def wire(to: str) -> str:
        return f"wired {to}"

    @agent.tool_plain(requires_approval=True)
    def audit(to: str) -> str:
        return f"audited {to}"

    return agent


async def test_pydantic_ai_warns_once_per_run_naming_the_stray_entry_and_the_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    agent = clerk(pa.deferred_handler(handler, actor="alice", approvals=TYPO), tools=["wire"])
    for _ in range(2):
        await approved_by_alice(handler, agent.run("go"), calls=1)
    first, second = unmatched(caplog)
    assert first == second
    assert first.startswith("pydantic_ai.deferred_handler(): approvals names 'wrie'")
    assert "its tools: 'audit', 'wire'" in first


async def test_pydantic_ai_says_nothing_when_every_entry_names_a_tool_or_tools_are_dynamic(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    desk = Desk(handler)

    async def answer() -> None:
        held = await desk.next()
        assert await handler.aresolve(held.pending_id, approve(), by="alice")

    agent = clerk(pa.deferred_handler(handler, actor="alice", approvals=RIGHT), tools=["wire"])
    await asyncio.gather(agent.run("go"), answer())
    dynamic = clerk(pa.deferred_handler(handler, actor="alice", approvals=TYPO), tools=["wire"])

    @dynamic.toolset
    def more(ctx: RunContext[None]) -> FunctionToolset[None]:
        return FunctionToolset()

    await asyncio.gather(dynamic.run("go"), answer())
    assert unmatched(caplog) == []
