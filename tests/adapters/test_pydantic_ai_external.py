"""A Pydantic AI run that deferred calls for people and for the application: resume() takes
the application's results beside the people's, and says what it lacks before anyone waits."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from roomkit.adapters import pydantic_ai as pa
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler


def build(handler: HumanInputHandler, sent: list[str]) -> Agent[None, Any]:
    """An agent whose scripted model calls ``send`` (held for approval) and ``render`` (a
    job the application runs elsewhere)."""
    agent: Agent[None, Any] = Agent(
        TestModel(call_tools=["send", "render"]),
        output_type=[str, DeferredToolRequests],
        capabilities=[HandleDeferredToolCalls(handler=pa.deferred_handler(handler, wait=False))],
    )

    @agent.tool_plain(requires_approval=True)
    def send(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    @agent.tool_plain
    def render(job: str) -> str:
        raise CallDeferred()

    return agent


async def paused(handler: HumanInputHandler, agent: Agent[None, Any]) -> tuple[Any, str]:
    """The run's first result, and the id of the external call it deferred, once a person
    approved its held call."""
    first = await agent.run("go")
    requests = first.output
    (held,) = requests.approvals
    (external,) = requests.calls
    pending_id = requests.metadata[held.tool_call_id]["roomkit"]["pending_id"]
    assert await handler.aresolve(pending_id, approve(), by="alice")
    return first, external.tool_call_id


async def test_resume_joins_the_applications_results_to_the_peoples(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    agent = build(handler, sent)
    first, external = await paused(handler, agent)
    given = DeferredToolResults(calls={external: "rendered"})
    second = await pa.resume(
        agent, first.output, first.all_messages(), handler=handler, deferred_tool_results=given
    )
    assert json.loads(second.output) == {"send": "sent to a", "render": "rendered"}
    assert sent == ["a"]


async def test_resume_lacking_the_applications_results_says_so_and_keeps_the_decisions(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    agent = build(handler, sent)
    first, external = await paused(handler, agent)
    with pytest.raises(ValueError, match=r"'render'.*deferred_tool_results=DeferredToolResults"):
        await pa.resume(agent, first.output, first.all_messages(), handler=handler)
    (held,) = first.output.approvals
    overriding = DeferredToolResults(
        calls={external: "rendered"}, approvals={held.tool_call_id: True}
    )
    with pytest.raises(ValueError, match="names calls that roomkit asks people about"):
        await pa.resume(
            agent,
            first.output,
            first.all_messages(),
            handler=handler,
            deferred_tool_results=overriding,
        )
    assert sent == []
    given = DeferredToolResults(calls={external: "rendered"})
    second = await pa.resume(
        agent, first.output, first.all_messages(), handler=handler, deferred_tool_results=given
    )
    assert second is not None
    assert sent == ["a"]
