"""A durable OpenAI Agents run whose requests went past the store's retention: a finished run
stays finished, a paused one is refused by name, and nobody is told of a look at either."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from roomkit.adapters import openai_agents as oa
from roomkit.core.exceptions import UnknownRequestError
from roomkit.models.pending_input import PendingInputEvent
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

RETENTION = 60.0
"""Seconds the store keeps a settled request."""


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


class Place:
    """A handler on SQLite with a clock the test moves, and the requests it announced."""

    def __init__(self, path: Path) -> None:
        self.now = 1_000_000.0
        self.store = SQLiteStore(path, retention_seconds=RETENTION, clock=lambda: self.now)
        self.handler = HumanInputHandler(store=self.store)
        self.told: list[str] = []

        async def announce(event: PendingInputEvent) -> None:
            self.told.append(event.tool_name)

        self.handler.on_input_required = announce

    async def past_retention(self) -> None:
        """Move the clock past the retention, and let the store purge what it lets go."""
        self.now += RETENTION * 10
        await self.store.purge_expired()


@pytest.fixture
async def place(tmp_path: Path) -> AsyncIterator[Place]:
    found = Place(tmp_path / "requests.db")
    yield found
    await found.store.close()


def mailer(sent: list[str]) -> tuple[Agent[Any], ScriptedModel]:
    """An agent whose scripted model calls ``send`` (held for approval) once, then ends;
    were it run again, it would call ``send`` again."""

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    model = ScriptedModel(
        [
            [function_call("send", {"to": "bob"}, call_id="call-0")],
            [assistant_message("done")],
            [function_call("send", {"to": "bob again"}, call_id="call-1")],
            [assistant_message("done again")],
        ]
    )
    return Agent(name="mailer", model=model, tools=[send]), model


async def test_a_finished_run_stays_finished_past_the_retention(place: Place) -> None:
    """A start under the key of a run that finished, whose requests the store let go, does
    not run the model again; final_output() says where the output went; nobody is told."""
    sent: list[str] = []
    agent, model = mailer(sent)
    handler = place.handler
    (first,) = await oa.start(agent, "go", handler=handler, run_key="r", actor="alice")
    assert await handler.aresolve(first, approve(), by="alice")
    assert await oa.resume(agent, "r", handler=handler, actor="alice") == []
    assert await oa.final_output("r", handler=handler, actor="alice") == "done"
    await place.past_retention()
    ran, told = len(model.calls), list(place.told)

    with pytest.raises(UnknownRequestError, match="finished, and its output went past"):
        await oa.final_output("r", handler=handler, actor="alice")
    for _ in range(2):
        with pytest.raises(ValueError, match="has finished"):
            await oa.start(agent, "go", handler=handler, run_key="r", actor="alice")
    assert await oa.resume(agent, "r", handler=handler, actor="alice") == []
    assert (len(model.calls), sent) == (ran, ["bob"])
    assert place.told == told == ["send"]
    assert await handler.list_pending() == []


async def test_a_paused_run_past_the_retention_is_refused_without_asking_anyone(
    place: Place,
) -> None:
    """A run whose settled anchor the store let go before it was resumed: resume() and
    start() say so, the model does not run again, and nobody is told of the look."""
    sent: list[str] = []
    agent, model = mailer(sent)
    handler = place.handler
    (first,) = await oa.start(agent, "go", handler=handler, run_key="r", actor="alice")
    assert await handler.aresolve(first, approve(), by="alice")
    await place.past_retention()
    ran = len(model.calls)

    for _ in range(2):
        with pytest.raises(UnknownRequestError, match="paused, and its state went past"):
            await oa.resume(agent, "r", handler=handler, actor="alice")
        with pytest.raises(UnknownRequestError, match="nor started again under this run_key"):
            await oa.start(agent, "go", handler=handler, run_key="r", actor="alice")
    assert (len(model.calls), sent) == (ran, [])
    assert place.told == ["send"]
    assert await handler.list_pending() == []
