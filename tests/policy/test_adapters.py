"""A policy rules the frameworks' pauses as it rules the pipeline's calls: LangGraph, the
OpenAI Agents SDK and Pydantic AI, each on its own test double."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from agents import Agent, function_tool, set_tracing_disabled
from agents.items import ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests
from tests.adapters.conftest import Desk

from roomkit.adapters import langgraph as lg
from roomkit.adapters import openai_agents as oa
from roomkit.adapters import pydantic_ai as pa
from roomkit.adapters._pauses import Asker, Pause
from roomkit.core.exceptions import ArgumentsTooLargeError, InvalidTextError
from roomkit.people import Directory, Person, Role
from roomkit.policy import Allow, Ask, Deny, PolicyCall, PolicyDecision
from roomkit.tools.approvals import Approval, approve
from roomkit.tools.human_input import HumanInputHandler


class Fixed:
    """Decides every call the same way."""

    def __init__(self, decision: PolicyDecision, *, shadow: bool = False) -> None:
        self.decision = decision
        self.shadow = shadow
        self.name = "fixed"

    async def decide(self, call: PolicyCall) -> PolicyDecision:
        return self.decision


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def rules(decision: PolicyDecision, *, shadow: bool = False) -> dict[str, Approval]:
    return {"send": Approval(policy=Fixed(decision, shadow=shadow))}


async def chain(handler: HumanInputHandler) -> list[tuple[str, Any]]:
    """The one request's history: each entry's type and who made it."""
    (request,) = await handler.list_settled()
    return [
        (entry["type"], entry.get("actor")) for entry in await handler.history(request.pending_id)
    ]


UNASKED = ["created", "policy_decided", "decided", "settled"]


# -- Pydantic AI ---------------------------------------------------------------------------


def pydantic_agent(handle: Any, sent: list[str]) -> PydanticAgent[None, Any]:
    agent: PydanticAgent[None, Any] = PydanticAgent(
        TestModel(call_tools=["send"]),
        output_type=[str, DeferredToolRequests],
        capabilities=[HandleDeferredToolCalls(handler=handle)],
    )

    @agent.tool_plain(requires_approval=True)
    def send(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    return agent


async def test_pydantic_ai_allow_runs_unasked_and_deny_rejects_with_the_reason(
    handler: HumanInputHandler, desk: Desk
) -> None:
    sent: list[str] = []
    allowed = pa.deferred_handler(handler, actor="alice", approvals=rules(Allow("routine")))
    result = await pydantic_agent(allowed, sent).run("go")
    assert sent == ["a"]
    assert "sent to a" in json.loads(result.output)["send"]
    # The run that took the decision marks it (a saved entry): no other run takes it again.
    assert [kind for kind, _ in await chain(handler)] == [*UNASKED, "saved"]
    assert desk.asked.empty()

    denied = pa.deferred_handler(handler, actor="alice", approvals=rules(Deny("too risky")))
    result = await pydantic_agent(denied, sent).run("go")
    assert sent == ["a"]
    assert "too risky" in json.loads(result.output)["send"]
    assert desk.asked.empty()


async def test_pydantic_ai_ask_holds_the_pause_for_the_asks_approvers(
    handler: HumanInputHandler, desk: Desk
) -> None:
    sent: list[str] = []
    asked = pa.deferred_handler(
        handler, actor="alice", approvals=rules(Ask(approvers=["bob", "carol"], quorum=2))
    )
    running = asyncio.create_task(pydantic_agent(asked, sent).run("go"))
    held = await desk.next()
    request = await handler.get_request(held.pending_id)
    assert request is not None
    assert (request.approvers, request.quorum) == (("bob", "carol"), 2)
    assert await handler.aresolve(held.pending_id, approve(), by="bob")
    assert await handler.aresolve(held.pending_id, approve(), by="carol")
    await running
    assert sent == ["a"]
    history = await handler.history(held.pending_id)
    assert [e["type"] for e in history][:2] == ["created", "policy_decided"]


# -- OpenAI Agents SDK ---------------------------------------------------------------------


def openai_agent(sent: list[str]) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    model = ScriptedModel(
        [[function_call("send", {"to": "bob"}, call_id="call-1")], [assistant_message("done")]]
    )
    return Agent(name="mailer", model=model, tools=[send])


def outputs(result: Any) -> list[Any]:
    return [item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)]


async def test_openai_agents_deny_rejects_with_the_reason_and_nobody_is_asked(
    handler: HumanInputHandler, desk: Desk
) -> None:
    sent: list[str] = []
    result = await oa.run(
        openai_agent(sent),
        "go",
        handler=handler,
        run_key="r-1",
        approvals=rules(Deny("not on weekends")),
    )
    assert sent == []
    assert outputs(result) == ["not on weekends"]
    assert desk.asked.empty()
    assert await chain(handler) == [
        ("created", None),
        ("policy_decided", "policy:fixed"),
        ("decided", "policy:fixed"),
        ("settled", "policy:fixed"),
    ]


async def test_openai_agents_ask_takes_its_timeout_and_a_shadow_deny_asks_as_today(
    handler: HumanInputHandler, desk: Desk
) -> None:
    sent: list[str] = []
    result = await oa.run(
        openai_agent(sent),
        "go",
        handler=handler,
        run_key="r-1",
        approvals=rules(Ask(approvers=["bob"], timeout=0.05)),
    )
    assert sent == []
    assert "expired" in outputs(result)[0]

    running = asyncio.create_task(
        oa.run(
            openai_agent(sent),
            "go",
            handler=handler,
            run_key="r-2",
            actor="alice",
            approvals=rules(Deny("no"), shadow=True),
        )
    )
    await desk.next()  # the Ask's request
    held = await desk.next()
    assert await handler.aresolve(held.pending_id, approve(), by="alice")
    await running
    assert sent == ["bob"]
    history = await handler.history(held.pending_id)
    (entry,) = [e for e in history if e["type"] == "policy_decided"]
    assert (entry["decision"], entry["enforced"]) == ("deny", False)


# -- LangGraph -----------------------------------------------------------------------------


class State(TypedDict, total=False):
    decision: Any


def held_for(args: dict[str, Any]) -> Any:
    """A graph whose one node pauses on ``send`` with ``args``."""

    def hold(state: State) -> State:
        call = {"type": "tool_approval", "tool_call_id": "c-1", "name": "send", "args": args}
        return {"decision": interrupt(call)}

    built = StateGraph(State)
    built.add_node("hold", hold)
    built.add_edge(START, "hold")
    built.add_edge("hold", END)
    return built.compile(checkpointer=InMemorySaver())


def graph() -> Any:
    return held_for({"to": "b"})


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


async def test_langgraph_allow_approves_deny_rejects_and_ask_names_the_approvers(
    handler: HumanInputHandler, desk: Desk
) -> None:
    allowed = await lg.run(graph(), {}, config("t-1"), handler=handler, approvals=rules(Allow()))
    assert allowed["decision"] == {"type": "approve"}
    assert [kind for kind, _ in await chain(handler)] == UNASKED

    denied = await lg.run(
        graph(), {}, config("t-2"), handler=handler, approvals=rules(Deny("out of hours"))
    )
    assert denied["decision"] == {"type": "reject", "message": "out of hours"}
    assert desk.asked.empty()

    running = asyncio.create_task(
        lg.run(graph(), {}, config("t-3"), handler=handler, approvals=rules(Ask(approvers="dan")))
    )
    held = await desk.next()
    request = await handler.get_request(held.pending_id)
    assert request is not None
    assert request.approvers == ("dan",)
    assert await handler.aresolve(held.pending_id, approve(), by="dan")
    assert (await running)["decision"] == {"type": "approve"}


@pytest.mark.parametrize(
    ("args", "error"),
    [({"to": "b\ud800"}, InvalidTextError), ({"to": {"b"}}, TypeError)],
    ids=["surrogate", "set"],
)
async def test_a_pause_whose_arguments_no_store_takes_is_refused_alike_with_a_policy(
    handler: HumanInputHandler, args: dict[str, Any], error: type[Exception]
) -> None:
    """Arguments a framework gave that no request can hold are refused with the message that
    says where and what to send, whether or not a policy reads them first."""
    messages = []
    for approvals in ({"send": Approval(approvers="dan")}, rules(Allow())):
        with pytest.raises(error) as raised:
            await lg.run(held_for(args), {}, config("t"), handler=handler, approvals=approvals)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    assert "'to'" in messages[1]


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"to": nested(5_000)}, "more than 24 levels deep"),
        ({"to": "b" * 100_000, "n": math.nan}, "over the 56,000 a request keeps"),
    ],
    ids=["deeper-than-the-stack", "too-large-and-nan"],
)
async def test_a_pause_whose_arguments_are_too_large_is_refused_as_such_with_a_policy(
    handler: HumanInputHandler, args: dict[str, Any], said: str
) -> None:
    """Arguments larger than a request holds are refused as too large with a policy as
    without one, however else they are wrong, and before the policy's copy of them (which
    overflowed Python's stack on arguments nested deeper)."""
    pause = Pause(key="k", kind="approval", tool_name="send", arguments=args)
    for approvals in ({"send": Approval(approvers="dan")}, rules(Allow())):
        asker = Asker(handler, approvals=approvals, timeout=60, actor="amy", room="r", channel="c")
        with pytest.raises(ArgumentsTooLargeError, match=said):
            await asker.open(pause)


async def test_a_pause_asked_of_a_group_the_directory_lacks_asks_the_others() -> None:
    """The framework's pause is held for the approvers the directory has, not refused."""
    handler = HumanInputHandler(
        directory=Directory({"dan": Person()}, roles={"kyc": Role(["dan"])})
    )
    pause = Pause(key="k", kind="approval", tool_name="send", arguments={"to": "bob"})
    approvals = rules(Ask(approvers=["role:kcy", "dan"]))
    asker = Asker(handler, approvals=approvals, timeout=60, actor="amy", room="r", channel="c")
    request = await asker.open(pause)
    assert tuple(request.approvers) == ("dan",)
