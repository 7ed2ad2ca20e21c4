"""A Pydantic AI run that deferred calls for people and for the application: resume() takes
the application's results beside the people's, and says what it lacks before anyone waits."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.tools import DeferredToolResults
from tests.adapters.test_pydantic_ai import build as build_agent

from roomkit.adapters import pydantic_ai as pa
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler


def build(handler: HumanInputHandler, sent: list[str]) -> Agent[None, Any]:
    """An agent whose scripted model calls ``send`` (held for approval) and ``render`` (a
    job the application runs elsewhere)."""
    handle = pa.deferred_handler(handler, wait=False)
    agent = build_agent(handle, ["send", "render"], sent)

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


async def resumed(
    handler: HumanInputHandler, agent: Agent[None, Any], first: Any, external: str
) -> Any:
    """The output of the run resumed with the application's result of ``external``."""
    second = await pa.resume(
        agent,
        first.output,
        first.all_messages(),
        handler=handler,
        deferred_tool_results=DeferredToolResults(calls={external: "rendered"}),
    )
    return json.loads(second.output)


async def test_resume_joins_the_applications_results_to_the_peoples(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    agent = build(handler, sent)
    first, external = await paused(handler, agent)
    assert await resumed(handler, agent, first, external) == {
        "send": "sent to a",
        "render": "rendered",
    }
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
    assert await resumed(handler, agent, first, external) is not None
    assert sent == ["a"]
