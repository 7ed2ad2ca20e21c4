"""A run_id the caller gives Pydantic AI twice, with a model that repeats its call ids: a
decision taken by one run is never handed to another."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests
from tests.adapters.conftest import Desk

from roomkit.adapters import pydantic_ai as pa
from roomkit.core.exceptions import KeyConflictError
from roomkit.models.pending_input import PendingInputEvent
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler


def mailer(handler: HumanInputHandler, sent: list[str], *, wait: bool) -> Agent[None, Any]:
    """An agent whose TestModel calls ``send`` (held for approval) with the same call id in
    every run."""
    agent: Agent[None, Any] = Agent(
        TestModel(call_tools=["send"]),
        output_type=[str, DeferredToolRequests],
        capabilities=[
            HandleDeferredToolCalls(handler=pa.deferred_handler(handler, wait=wait, actor="al"))
        ],
    )

    @agent.tool_plain(requires_approval=True)
    def send(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    return agent


async def approved_run(agent: Agent[None, Any], handler: HumanInputHandler) -> tuple[Any, str]:
    """A run under ``job-1`` ended with its request, which is then approved; the run's result
    and the request's id."""
    first = await agent.run("go", run_id="job-1")
    (part,) = first.output.approvals
    held = first.output.metadata[part.tool_call_id][pa.METADATA_KEY]["pending_id"]
    assert await handler.aresolve(held, approve(), by="al")
    return first, held


async def test_a_second_inline_run_under_a_run_id_is_refused_the_first_ones_decision(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """Waiting inline, the second run met the first's approved request and ran the tool again,
    nobody asked."""

    async def approving(event: PendingInputEvent) -> None:
        await desk.asked.put(event)
        await handler.aresolve(event.pending_id, approve(), by="al")

    handler.on_input_required = approving
    sent: list[str] = []
    agent = mailer(handler, sent, wait=True)
    first = await agent.run("go", run_id="job-1")
    assert json.loads(first.output) == {"send": "sent to a"}
    with pytest.raises(KeyConflictError, match="run_id 'job-1', which took its decision"):
        await agent.run("go", run_id="job-1")
    assert sent == ["a"]
    assert desk.asked.qsize() == 1


async def test_a_second_durable_run_under_a_run_id_is_refused_the_first_ones_decision(
    handler: HumanInputHandler,
) -> None:
    """Ending with its requests, the second run named the first's (resumed) request: its
    resume then returned None for good, the run never continued."""
    sent: list[str] = []
    agent = mailer(handler, sent, wait=False)
    first, _ = await approved_run(agent, handler)
    history = first.all_messages()
    resumed = await pa.resume(agent, first.output, history, handler=handler, actor="al")
    assert json.loads(resumed.output) == {"send": "sent to a"}
    with pytest.raises(KeyConflictError, match="run_id 'job-1', which took its decision"):
        await agent.run("go", run_id="job-1")
    assert sent == ["a"]
    assert await handler.list_pending() == []


async def test_a_run_started_again_under_its_run_id_takes_the_decision_it_never_took(
    handler: HumanInputHandler,
) -> None:
    """A run ended with its requests and never resumed (its process stopped): started again
    under its run_id, it re-attaches to them and resumes with the decision."""
    sent: list[str] = []
    agent = mailer(handler, sent, wait=False)
    _, held = await approved_run(agent, handler)
    again = await agent.run("go", run_id="job-1")
    (part,) = again.output.approvals
    assert again.output.metadata[part.tool_call_id][pa.METADATA_KEY]["pending_id"] == held
    history = again.all_messages()
    resumed = await pa.resume(agent, again.output, history, handler=handler, actor="al")
    assert json.loads(resumed.output) == {"send": "sent to a"}
    assert sent == ["a"]


async def test_an_inline_run_on_a_store_keeping_no_outcome_takes_its_decision() -> None:
    """A memory store that keeps no outcome (retention=0) keeps no history to mark either:
    the run goes on, as no later run can meet the request."""
    handler = HumanInputHandler(retention=0)

    async def approving(event: PendingInputEvent) -> None:
        await handler.aresolve(event.pending_id, approve(), by="al")

    handler.on_input_required = approving
    sent: list[str] = []
    result = await mailer(handler, sent, wait=True).run("go", run_id="job-1")
    assert json.loads(result.output) == {"send": "sent to a"}
    assert sent == ["a"]
