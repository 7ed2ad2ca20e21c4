"""Two deployments starting one durable OpenAI Agents run, each through a store of its own on
one durable database, at the same moment or one after the other was cut off: the model runs
once, and people are asked once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from agents import Agent, RunHooks, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, function_call
from tests.core.room_stores import Place

from roomkit.adapters import openai_agents as oa
from roomkit.core.exceptions import RunUnderWayError
from roomkit.policy import Abstain
from roomkit.tools.approvals import Approval
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def mailer(deployment: str) -> Agent[Any]:
    """An agent whose model calls ``send`` twice in one turn, each held for approval, with
    call ids of the deployment's own (a model mints new ones on every run)."""

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    calls = [
        function_call("send", {"to": to}, call_id=f"{deployment}-{to}") for to in ("bob", "carol")
    ]
    return Agent(name="mailer", model=ScriptedModel([calls]), tools=[send])


class HeldModel(RunHooks[Any]):
    """Hooks that say when the model is called, then hold it until told to go on."""

    def __init__(self) -> None:
        self.called, self.go = asyncio.Event(), asyncio.Event()

    async def on_llm_start(self, *args: Any) -> None:
        self.called.set()
        await self.go.wait()


@contextlib.asynccontextmanager
async def deployment(place: Place) -> AsyncIterator[HumanInputHandler]:
    """A handler on a store of its own, on the database ``place`` names."""
    async with place.questions() as store:  # type: ignore[attr-defined]
        yield HumanInputHandler(store=store)


async def test_a_start_racing_another_runs_nothing_and_then_re_attaches(place: Place) -> None:
    """While one start runs the model, a second start of the same run raises saying so;
    once the first kept its pause, the second re-attaches to its requests: nobody is asked
    twice about a call."""
    held = HeldModel()
    async with deployment(place) as first, deployment(place) as second:
        starting = asyncio.create_task(
            oa.start(mailer("one"), "go", handler=first, run_key="r", hooks=held)
        )
        await held.called.wait()
        with pytest.raises(RunUnderWayError, match="start\\(\\) it again"):
            await oa.start(mailer("two"), "go", handler=second, run_key="r")
        held.go.set()
        opened = await starting
        assert await oa.start(mailer("two"), "go", handler=second, run_key="r") == opened
        pending = await second.store.list_pending()
        assert sorted(request.pending_id for request in pending) == sorted(opened)
        assert sorted(str(request.tool_call_id) for request in pending) == [
            "one-bob",
            "one-carol",
        ]


class HeldRuling:
    """A policy that says when it rules the call sending to ``to``, then holds it for ever;
    it leaves every other call to the tool's rule."""

    def __init__(self, to: str) -> None:
        self.to = to
        self.reached = asyncio.Event()

    async def decide(self, call: Any) -> Any:
        if call.arguments.get("to") == self.to:
            self.reached.set()
            await asyncio.Event().wait()
        return Abstain()


async def test_a_start_cut_off_while_opening_its_requests_is_kept_by_the_next(
    place: Place,
) -> None:
    """A start cancelled after it opened the first of its pause's two requests: another
    start, through another store object, opens the second from the state the first one's
    model decided; nobody is asked twice about a call."""
    ruling = HeldRuling("carol")
    rules = {"send": Approval(policy=ruling)}
    async with deployment(place) as first, deployment(place) as second:
        starting = asyncio.create_task(
            oa.start(mailer("one"), "go", handler=first, run_key="r", approvals=rules)
        )
        await ruling.reached.wait()
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
        opened = await oa.start(mailer("two"), "go", handler=second, run_key="r")
        pending = await second.store.list_pending()
        assert sorted(request.pending_id for request in pending) == sorted(opened)
        assert sorted(str(request.tool_call_id) for request in pending) == [
            "one-bob",
            "one-carol",
        ]
