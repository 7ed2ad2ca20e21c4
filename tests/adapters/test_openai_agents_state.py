"""A durable OpenAI Agents run's ``RunState``, kept in parts in roomkit's store: a read joins
the parts of one writing only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from roomkit.adapters import openai_agents as oa
from roomkit.adapters._asking import asking
from roomkit.adapters._pauses import Pause
from roomkit.adapters.openai_agents._saved import PART_CHARS, SavedRuns
from roomkit.models.pending_input import PendingInput
from roomkit.stores import new_entry
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def mailer(sent: list[str]) -> Agent[Any]:
    """An agent whose scripted model calls ``send`` (held for approval) twice, then ends."""

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    steps: list[Any] = [
        [function_call("send", {"to": f"bob{n}"}, call_id=f"call-{n}")] for n in range(2)
    ]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    return Agent(name="mailer", model=model, tools=[send])


async def test_parts_another_resumer_left_are_never_joined_to_the_kept_state(
    handler: HumanInputHandler,
) -> None:
    """A resumer died part-way through keeping the run's second pause (two of its state's
    three parts written, the pause not marked kept), and one still writes another: the
    resumer that took over keeps a shorter state, and only its parts are read."""
    sent: list[str] = []
    (first,) = await oa.start(mailer(sent), "go", handler=handler, run_key="r-parts")
    assert await handler.aresolve(first, approve())
    asker, _ = asking(handler, oa.CHANNEL, {}, where="test")
    saved = SavedRuns(asker, "r-parts")

    async def left_part_way(attempt: str) -> None:
        # What a resumer keeping the second pause writes before it is cut short.
        call = {"to": "bob1"}
        pause = Pause("oa:r-parts:call-1", "approval", "send", call, tool_call_id="call-1")
        opened: list[PendingInput] = []
        await saved.open(1, [pause], opened)
        (anchor,) = opened
        for part in range(2):
            entry = new_entry(
                "saved",
                run="r-parts",
                attempt=attempt,
                part=part,
                parts=3,
                generation=1,
                pending=[anchor.pending_id],
                state="{" * PART_CHARS,
            )
            await handler.record(anchor.pending_id, entry)

    await left_part_way("dead")
    (second,) = await oa.resume(mailer(sent), "r-parts", handler=handler)
    assert await oa.resume(mailer(sent), "r-parts", handler=handler) == [second]
    await left_part_way("still-writing")
    assert await oa.resume(mailer(sent), "r-parts", handler=handler) == [second]
    assert await handler.aresolve(second, approve())
    assert await oa.resume(mailer(sent), "r-parts", handler=handler) == []
    assert sent == ["bob0", "bob1"]
    assert await oa.final_output("r-parts", handler=handler) == "done"
