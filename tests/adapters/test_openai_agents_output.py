"""The final output of a durable OpenAI Agents run, kept under its key when a resume
finishes it and read by any process on the store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from pydantic import BaseModel

from roomkit.adapters import openai_agents as oa
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


class Receipt(BaseModel):
    to: str
    count: int


def mailer(final: str, *, output_type: Any = None, calls: int = 1) -> Agent[Any]:
    """An agent whose scripted model calls ``send`` (held for approval) ``calls`` times,
    then ends with ``final``."""

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    steps: list[Any] = [
        [function_call("send", {"to": f"bob{n}"}, call_id=f"call-{n}")] for n in range(calls)
    ]
    model = ScriptedModel([*steps, [assistant_message(final)]])
    if output_type is None:
        return Agent(name="mailer", model=model, tools=[send])
    return Agent(name="mailer", model=model, tools=[send], output_type=output_type)


async def test_approve_resume_and_another_process_reads_the_final_output(
    tmp_path: Path,
) -> None:
    """Approved, resumed: the run's final output is kept under its key, and a fresh handler
    on the same SQLite file reads it, as another process would; resume still returns
    ``[]``, and resuming again changes nothing."""
    final = "Sent to bob0. " * 3000  # over one history entry's part
    store = SQLiteStore(tmp_path / "runs.db")
    first = HumanInputHandler(store=store)
    (held,) = await oa.start(mailer(final), "go", handler=first, run_key="r-out", actor="alice")
    with pytest.raises(ValueError, match="has not finished"):
        await oa.final_output("r-out", handler=first, actor="alice")
    assert await first.aresolve(held, approve(), by="alice")
    assert await oa.resume(mailer(final), "r-out", handler=first, actor="alice") == []
    assert await oa.final_output("r-out", handler=first, actor="alice") == final
    await store.close()
    again = SQLiteStore(tmp_path / "runs.db")
    try:
        later = HumanInputHandler(store=again)
        assert await oa.final_output("r-out", handler=later, actor="alice") == final
        assert await oa.resume(mailer("other"), "r-out", handler=later, actor="alice") == []
        assert await oa.final_output("r-out", handler=later, actor="alice") == final
        assert await later.list_pending() == []
    finally:
        await again.close()


async def test_a_structured_output_comes_back_as_its_json_form(handler: HumanInputHandler) -> None:
    """Two pauses, then a ``Receipt``: read back as the JSON object it validates from."""
    agent = mailer('{"to": "bob1", "count": 2}', output_type=Receipt, calls=2)
    (first,) = await oa.start(agent, "go", handler=handler, run_key="r-model", actor="alice")
    assert await handler.aresolve(first, approve(), by="alice")
    (second,) = await oa.resume(agent, "r-model", handler=handler, actor="alice")
    with pytest.raises(ValueError, match="has not finished"):
        await oa.final_output("r-model", handler=handler, actor="alice")
    assert await handler.aresolve(second, approve(), by="alice")
    both = await asyncio.gather(
        oa.resume(agent, "r-model", handler=handler, actor="alice"),
        oa.resume(agent, "r-model", handler=handler, actor="alice"),
    )
    assert both == [[], []]
    kept = await oa.final_output("r-model", handler=handler, actor="alice")
    assert kept == {"to": "bob1", "count": 2}
    assert Receipt.model_validate(kept) == Receipt(to="bob1", count=2)
    # Another actor's run of that key is not this one: nothing is read, nobody is asked.
    with pytest.raises(ValueError, match="the actor and room given to start"):
        await oa.final_output("r-model", handler=handler, actor="mallory")
    assert await handler.list_pending() == []


async def test_a_run_never_started_or_finished_at_once_says_what_to_do(
    handler: HumanInputHandler,
) -> None:
    with pytest.raises(ValueError, match="no run under run_key 'nope'"):
        await oa.final_output("nope", handler=handler)
    assert await oa.start(mailer("done", calls=0), "go", handler=handler, run_key="r-0") == []
    with pytest.raises(ValueError, match=r"run\(\) returns it"):
        await oa.final_output("r-0", handler=handler)
    assert await handler.list_pending() == []


async def test_another_actors_look_under_the_key_finds_no_run_and_asks_nobody(
    handler: HumanInputHandler,
) -> None:
    """A run is named by its key within its actor's scope: bob's resume or read under
    alice's key finds no run, and no request is made (nor announced) for the look."""
    announced: list[str] = []
    first = asyncio.Event()

    async def told(event: Any) -> None:
        announced.append(event.pending_id)
        first.set()

    handler.on_input_required = told
    (held,) = await oa.start(mailer("done"), "go", handler=handler, run_key="r-a", actor="alice")
    await asyncio.wait_for(first.wait(), 10)
    with pytest.raises(ValueError, match="no run paused under run_key 'r-a'"):
        await oa.resume(mailer("done"), "r-a", handler=handler, actor="bob")
    with pytest.raises(ValueError, match="no run under run_key 'r-a'"):
        await oa.final_output("r-a", handler=handler, actor="bob")
    assert await handler.aresolve(held, approve(), by="alice")
    assert await oa.resume(mailer("done"), "r-a", handler=handler, actor="alice") == []
    with pytest.raises(ValueError, match="no run under run_key 'r-a'"):
        await oa.final_output("r-a", handler=handler, actor="bob")
    assert await oa.final_output("r-a", handler=handler, actor="alice") == "done"
    assert announced == [held]
