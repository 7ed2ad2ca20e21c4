"""A durable OpenAI Agents run resumed on an agent changed since it started."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, RunConfig, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from roomkit.adapters import openai_agents as oa
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def mailer(sent: list[str], *, tools: bool = True) -> Agent[Any]:
    """An agent whose scripted model calls ``send`` (held for approval), then ends; without
    ``tools``, the same agent once ``send`` was taken from it."""

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    model = ScriptedModel(
        [[function_call("send", {"to": "bob"}, call_id="call-0")], [assistant_message("done")]]
    )
    return Agent(name="mailer", model=model, tools=[send] if tools else [])


async def test_an_approved_tool_the_agent_lost_is_named_and_the_decision_kept(
    handler: HumanInputHandler,
) -> None:
    """The SDK's own error would end the resume; the run resumes on the agent with the tool."""
    sent: list[str] = []
    (pending_id,) = await oa.start(mailer(sent), "go", handler=handler, run_key="r")
    assert await handler.aresolve(pending_id, approve())
    with pytest.raises(ValueError, match=r"run_key 'r' was approved to call 'send', which agent"):
        await oa.resume(mailer(sent, tools=False), "r", handler=handler)
    assert await oa.resume(mailer(sent), "r", handler=handler) == []
    assert sent == ["bob"]
    assert await oa.final_output("r", handler=handler) == "done"


async def test_a_run_config_that_tells_the_model_of_a_missing_tool_is_followed(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    (pending_id,) = await oa.start(mailer(sent), "go", handler=handler, run_key="r")
    assert await handler.aresolve(pending_id, approve())
    told = RunConfig(tool_not_found_behavior="return_error_to_model")
    assert await oa.resume(mailer(sent, tools=False), "r", handler=handler, run_config=told) == []
    assert sent == []
