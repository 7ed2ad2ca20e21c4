"""A Pydantic AI run resumed on an agent changed since the run ended with its requests."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests

from roomkit.adapters import pydantic_ai as pa
from roomkit.tools.approvals import approve, reject
from roomkit.tools.human_input import HumanInputHandler


def build(handler: HumanInputHandler, sent: list[str], *, tools: bool = True) -> Agent[None, Any]:
    """An agent whose model calls ``send`` (held for approval); without ``tools``, the same
    agent once ``send`` was taken from it."""
    agent: Agent[None, Any] = Agent(
        TestModel(call_tools=["send"] if tools else []),
        output_type=[str, DeferredToolRequests],
        capabilities=[HandleDeferredToolCalls(handler=pa.deferred_handler(handler, wait=False))],
    )
    if tools:

        @agent.tool_plain(requires_approval=True)
        def send(to: str) -> str:
            sent.append(to)
            return f"sent to {to}"

    return agent


async def test_an_approved_tool_the_agent_lost_is_named_and_the_decision_kept(
    handler: HumanInputHandler,
) -> None:
    """The model would read that the tool is unknown, and the approved call never run."""
    sent: list[str] = []
    first = await build(handler, sent).run("go")
    (part,) = first.output.approvals
    held = first.output.metadata[part.tool_call_id]["roomkit"]["pending_id"]
    assert await handler.aresolve(held, approve())
    history = first.all_messages()
    lost = build(handler, sent, tools=False)
    with pytest.raises(ValueError, match=r"approved to call 'send', which the agent given to"):
        await pa.resume(lost, first.output, history, handler=handler)
    second = await pa.resume(build(handler, sent), first.output, history, handler=handler)
    assert json.loads(second.output) == {"send": "sent to a"}
    assert sent == ["a"]


async def test_a_rejected_call_of_a_lost_tool_reaches_the_model(handler: HumanInputHandler) -> None:
    first = await build(handler, []).run("go")
    (part,) = first.output.approvals
    held = first.output.metadata[part.tool_call_id]["roomkit"]["pending_id"]
    assert await handler.aresolve(held, reject("not today"))
    lost = build(handler, [], tools=False)
    second = await pa.resume(lost, first.output, first.all_messages(), handler=handler)
    assert json.loads(second.output) == {"send": "not today"}
