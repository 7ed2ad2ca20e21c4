"""Resumers in a process of their own, for the crash tests:
``python framework_resumers.py openai_agents|openai_agents_next|openai_agents_start|
openai_agents_opened|pydantic_ai FOLDER``; the tests run ``main`` in a process forked from
one that imported this module (:mod:`tests.forked_processes`).

Each agent holds one tool call for approval; the tool kills this process (SIGKILL) when it
runs, so the resumer dies after it claimed the resume and before the run moved on. The
tests build the same agents with ``die=False`` to start the run and to resume it later.
``openai_agents_next`` resumes a run whose next turn holds another call: the approval rule
judging that call kills this process, after the run went on and before its next pause was
kept. ``openai_agents_start`` and ``openai_agents_opened`` die while their requests are
being opened (a policy ruling the last call of the turn kills this process): a start after
it opened the first two of three, a resume after it opened the first two of its next
pause's three.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

RUN_KEY = "crash"


def tool_body(ran: Path, die: bool) -> str:
    """The held tool: dies here in the crashing resumer, else notes that it ran."""
    if die:
        os.kill(os.getpid(), signal.SIGKILL)
    with ran.open("a") as written:
        written.write("ran\n")
    return "sent"


def openai_agent(ran: Path, *, die: bool, resumed: bool) -> Any:
    """An agent whose scripted model calls ``send`` once (or, ``resumed``, only finishes)."""
    from agents import Agent, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        return tool_body(ran, die)

    call = [function_call("send", {"to": "bob"}, call_id="call-1")]
    model = ScriptedModel([[assistant_message("done")]] if resumed else [call])
    return Agent(name="mailer", model=model, tools=[send])


def openai_agent_sending(ran: Path, *recipients: str) -> Any:
    """An agent whose scripted model calls ``send`` to each of ``recipients`` in turn, each
    held for approval, then finishes; the tool notes whom it sent to."""
    return openai_agent_turns(ran, "to", *((to,) for to in recipients))


def openai_agent_turns(ran: Path, prefix: str, *turns: tuple[str, ...]) -> Any:
    """An agent whose scripted model calls ``send`` to every recipient of a turn at once,
    turn after turn, then finishes; each call held for approval, its call id ``prefix``
    and the recipient (a model mints ids of its own on every run). The tool notes whom it
    sent to."""
    from agents import Agent, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        with ran.open("a") as written:
            written.write(f"{to}\n")
        return f"sent to {to}"

    steps = [
        [function_call("send", {"to": to}, call_id=f"{prefix}-{to}") for to in turn]
        for turn in turns
    ]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    return Agent(name="mailer", model=model, tools=[send])


class DiesRuling:
    """A policy that kills this process (SIGKILL) as it rules the call sending to ``to``,
    and leaves every other call to the tool's rule."""

    def __init__(self, to: str) -> None:
        self.to = to

    def decide(self, call: Any) -> Any:
        from roomkit.policy import Abstain

        if call.arguments.get("to") == self.to:
            os.kill(os.getpid(), signal.SIGKILL)
        return Abstain()


def _dies_judging(name: str, arguments: dict[str, Any]) -> bool:
    """An approval rule's ``when=`` that kills this process (SIGKILL)."""
    os.kill(os.getpid(), signal.SIGKILL)
    return True


def pydantic_agent(ran: Path, *, die: bool, handler: HumanInputHandler) -> Any:
    """An agent whose test model calls ``send``, held for approval, ending the run."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import HandleDeferredToolCalls
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tools import DeferredToolRequests

    from roomkit.adapters import pydantic_ai as pa

    handle = pa.deferred_handler(handler, wait=False)
    agent: Any = Agent(
        TestModel(call_tools=["send"]),
        output_type=[str, DeferredToolRequests],
        capabilities=[HandleDeferredToolCalls(handler=handle)],
    )

    @agent.tool_plain(requires_approval=True)
    def send(to: str) -> str:
        return tool_body(ran, die)

    return agent


def paused_run(folder: Path) -> tuple[Any, list[Any]]:
    """The ``DeferredToolRequests`` and the messages a test kept in ``folder``."""
    from pydantic import TypeAdapter
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.tools import DeferredToolRequests

    requests = TypeAdapter(DeferredToolRequests).validate_json(
        (folder / "requests.json").read_bytes()
    )
    messages = ModelMessagesTypeAdapter.validate_json((folder / "messages.json").read_bytes())
    return requests, messages


def keep_paused_run(folder: Path, requests: Any, messages: list[Any]) -> None:
    """Keep a paused run in ``folder`` for :func:`paused_run`."""
    from pydantic import TypeAdapter
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.tools import DeferredToolRequests

    (folder / "requests.json").write_bytes(TypeAdapter(DeferredToolRequests).dump_json(requests))
    (folder / "messages.json").write_bytes(ModelMessagesTypeAdapter.dump_json(messages))


async def main(framework: str, where: str) -> None:
    folder = Path(where)
    store = SQLiteStore(folder / "requests.db")
    handler = HumanInputHandler(store=store)
    ran = folder / "ran.txt"
    if framework == "openai_agents":
        from roomkit.adapters import openai_agents as oa

        agent = openai_agent(ran, die=True, resumed=True)
        await oa.resume(agent, RUN_KEY, handler=handler)
    elif framework == "openai_agents_next":
        from roomkit.adapters import openai_agents as oa
        from roomkit.tools.approvals import Approval

        rules = {"send": Approval(when=_dies_judging)}
        agent = openai_agent_sending(ran, "carol")
        await oa.resume(agent, RUN_KEY, handler=handler, approvals=rules)
    elif framework in ("openai_agents_start", "openai_agents_opened"):
        from roomkit.adapters import openai_agents as oa
        from roomkit.tools.approvals import Approval

        dead = f"dead{os.getpid()}"
        rules = {"send": Approval(policy=DiesRuling("dave"))}
        if framework == "openai_agents_start":
            agent = openai_agent_turns(ran, dead, ("bob", "carol", "dave"))
            await oa.start(agent, "go", handler=handler, run_key=RUN_KEY, approvals=rules)
        else:
            agent = openai_agent_turns(ran, dead, ("carol", "erin", "dave"))
            await oa.resume(agent, RUN_KEY, handler=handler, approvals=rules)
    else:
        from roomkit.adapters import pydantic_ai as pa

        requests, messages = paused_run(folder)
        agent = pydantic_agent(ran, die=True, handler=handler)
        await pa.resume(agent, requests, messages, handler=handler)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
