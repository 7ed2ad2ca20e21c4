"""Shell commands an OpenAI Agents run holds for approval: the person sees the commands, in
every process, and each call has a request of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, Runner, ShellTool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message
from openai.types.responses import ResponseFunctionShellToolCall

from roomkit.adapters import openai_agents as oa
from roomkit.adapters._asking import asking
from roomkit.adapters.openai_agents import _pause
from roomkit.adapters.openai_agents._saved import SavedRuns
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

COMMANDS = (["rm -rf build"], ["echo hi"], ["ls"])


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def shell_agent(ran: list[list[str]], count: int) -> Agent[Any]:
    """An agent whose scripted model runs the first ``count`` of :data:`COMMANDS` in one
    turn, each a shell call held for approval."""

    async def executor(request: Any) -> str:
        ran.append(list(request.data.action.commands))
        return "ok"

    calls = [
        ResponseFunctionShellToolCall(
            id=f"sh-{n}",
            call_id=f"call-{n}",
            type="shell_call",
            status="completed",
            action={"commands": commands},
        )
        for n, commands in enumerate(COMMANDS[:count])
    ]
    model = ScriptedModel([calls, [assistant_message("done")]])
    return Agent(name="ops", model=model, tools=[ShellTool(executor=executor, needs_approval=True)])


async def shown(handler: HumanInputHandler, ids: list[str]) -> list[Any]:
    """The arguments each request of ``ids`` shows, in order."""
    requests = [await handler.get_request(pending_id) for pending_id in ids]
    return [request.arguments for request in requests if request is not None]


async def test_a_shell_call_is_shown_with_the_commands_it_runs(
    handler: HumanInputHandler,
) -> None:
    ran: list[list[str]] = []
    ids = await oa.start(shell_agent(ran, 2), "go", handler=handler, run_key="ops-1")
    assert await shown(handler, ids) == [{"action": {"commands": c}} for c in COMMANDS[:2]]
    for pending_id in ids:
        assert await handler.aresolve(pending_id, approve(), by="alice")
    assert await oa.resume(shell_agent(ran, 0), "ops-1", handler=handler) == []
    assert ran == list(COMMANDS[:2])


async def test_a_pause_of_shell_calls_a_dead_start_marked_asks_about_each_call(
    handler: HumanInputHandler,
) -> None:
    """A start died once it marked its pause of three shell calls, having opened its anchor
    only: the next start opens one request for each other call, from the state loaded again,
    each showing its own commands."""
    ran: list[list[str]] = []
    state = (await Runner.run(shell_agent(ran, 3), "go")).to_state()
    asker, _ = asking(handler, oa.CHANNEL, {}, where="test")
    saved = SavedRuns(asker, "ops-2")
    first = _pause("ops-2", state.get_interruptions()[0])
    await saved.open_anchor(0, first, (state.to_string(), [True, True, True]))
    await saved.mark_kept(0)
    ids = await oa.start(shell_agent(ran, 0), "go", handler=handler, run_key="ops-2")
    assert len(set(ids)) == 3
    assert await shown(handler, ids) == [{"action": {"commands": c}} for c in COMMANDS]
    for pending_id in ids:
        assert await handler.aresolve(pending_id, approve(), by="alice")
    assert await oa.resume(shell_agent(ran, 0), "ops-2", handler=handler) == []
    assert ran == list(COMMANDS)
