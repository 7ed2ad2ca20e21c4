"""The options every framework adapter takes, declared once in ``AskOptions``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, MaxTurnsExceeded, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from langgraph.checkpoint.memory import InMemorySaver
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import DeferredToolRequests
from tests.adapters.conftest import Desk
from tests.adapters.langgraph_resumer import build

from roomkit.adapters import langgraph as lg
from roomkit.adapters import openai_agents as oa
from roomkit.adapters import pydantic_ai as pa
from roomkit.adapters.options import AskOptions
from roomkit.core.exceptions import InvalidTextError
from roomkit.tools.approvals import Approval, approve
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, default, escalate


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def held_graph(folder: Path) -> Any:
    """A graph whose one node holds a ``wire`` call, on an in-memory saver."""
    return build(InMemorySaver(), folder / "ran.txt", die=False)


async def test_a_keyword_that_is_no_option_is_refused_naming_the_options(tmp_path: Path) -> None:
    handler = HumanInputHandler()
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(TypeError, match=r"langgraph.run\(\).*\['aprovals'\].*approvals"):
        await lg.run(held_graph(tmp_path), {}, config, handler=handler, aprovals=["pay"])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"deferred_handler\(\).*\['timeout_s'\].*timeout"):
        pa.deferred_handler(handler, timeout_s=5)  # type: ignore[call-arg]
    requests = DeferredToolRequests(approvals=[ToolCallPart("pay", {}, tool_call_id="c")])
    with pytest.raises(TypeError, match=r"results_for\(\).*\['who'\].*actor"):
        await pa.results_for(requests, handler=handler, who="alice")  # type: ignore[call-arg]
    assert await handler.list_pending() == []


@pytest.mark.parametrize(
    ("ladder", "field"),
    [
        (Ladder(on_expiry=default("grey \udc80")), r"ladder\.on_expiry"),
        (Ladder(escalate(60, to="b\udc80")), r"ladder escalate\(after=60, to=\.\.\.\)"),
    ],
)
async def test_a_ladder_no_history_could_record_is_refused_before_anything_runs(
    tmp_path: Path, ladder: Ladder, field: str
) -> None:
    """Its default failed only once a question expired, as a history entry no store keeps:
    the ladder is refused where it is given, naming the field."""
    handler = HumanInputHandler()
    graph, config = held_graph(tmp_path), {"configurable": {"thread_id": "t-ladder"}}
    refused = f"^{field} must be valid Unicode text, but holds a lone surrogate"
    with pytest.raises(InvalidTextError, match=refused):
        await lg.run(graph, {}, config, handler=handler, ladder=ladder)
    assert (await graph.aget_state(config)).values == {}, "the graph ran"
    with pytest.raises(InvalidTextError, match=refused):
        pa.deferred_handler(handler, ladder=ladder)
    assert await handler.list_pending() == []


async def test_one_set_of_options_serves_start_and_resume(
    handler: HumanInputHandler, tmp_path: Path
) -> None:
    options: AskOptions = {"approvals": ["wire"], "timeout": 600, "actor": "alice", "room": "r"}
    graph, config = held_graph(tmp_path), {"configurable": {"thread_id": "t-options"}}
    (pending_id,) = await lg.start(graph, {}, config, handler=handler, **options)
    request = await handler.get_request(pending_id)
    assert request is not None
    assert (request.room_id, list(request.approvers), request.tool_name) == ("r", ["alice"], "wire")
    assert await handler.aresolve(pending_id, approve(), by="alice")
    assert await lg.resume(graph, config, handler=handler, **options) == []
    assert (await graph.aget_state(config)).values == {"decision": {"type": "approve"}}


async def test_the_runners_keywords_are_passed_on(handler: HumanInputHandler, desk: Desk) -> None:
    @function_tool(needs_approval=True)
    def pay(n: int) -> str:
        """Pay."""
        return "paid"

    steps = [[function_call("pay", {"n": 1}, call_id="c")], [assistant_message("done")]]
    agent = Agent(name="payer", model=ScriptedModel(steps), tools=[pay])
    running = asyncio.create_task(
        oa.run(agent, "go", handler=handler, run_key="r", actor="alice", max_turns=1)
    )
    held = await desk.next()
    assert await handler.aresolve(held.pending_id, approve(), by="alice")
    # One turn asked for the call; Runner.run took max_turns=1 and stops the second.
    with pytest.raises(MaxTurnsExceeded):
        await running


@pytest.mark.parametrize(
    ("options", "error", "says"),
    [
        ({"timeout": float("nan")}, ValueError, r"timeout must be a number of seconds above 0"),
        ({"timeout": float("inf")}, ValueError, r"at most 3153600000 \(a century\), got inf"),
        ({"timeout": 1e300}, ValueError, r"timeout must be a number of seconds above 0"),
        ({"actor": 5}, TypeError, r"actor must be the id of who is asked \(a str\), or None"),
        ({"actor": ["alice"]}, TypeError, r"actor must be the id of who is asked"),
        ({"actor": ""}, ValueError, r"actor is empty: give the id of who is asked"),
        ({"actor": "a" * 257}, ValueError, r"actor is 257 characters, over the 256"),
        ({"room": None}, TypeError, r"room must be a str \(\"\" when there is none\)"),
        ({"room": "r" * 300}, ValueError, r"room is 300 characters, over the 256"),
    ],
)
async def test_an_option_no_request_could_take_is_refused_before_anything_runs(
    tmp_path: Path, options: dict[str, Any], error: type[Exception], says: str
) -> None:
    """Each was refused only at the run's first request, after the graph's nodes (or the
    model's turn) had run, some in words naming no option ("unhashable type: 'list'")."""
    handler = HumanInputHandler()
    graph, config = held_graph(tmp_path), {"configurable": {"thread_id": "t-bad"}}
    with pytest.raises(error, match=says):
        await lg.start(graph, {}, config, handler=handler, **options)
    assert (await graph.aget_state(config)).values == {}, "the graph ran"
    assert not (tmp_path / "ran.txt").exists()
    with pytest.raises(error, match=says):
        pa.deferred_handler(handler, **options)
    agent = Agent(name="idle", model=ScriptedModel([[assistant_message("ran")]]))
    with pytest.raises(error, match=says):
        await oa.start(agent, "go", handler=handler, run_key="r-bad", **options)
    assert await handler.list_pending() == []


@pytest.mark.parametrize("approvals", [5, b"wire", object()])
async def test_approvals_of_no_collection_of_names_are_refused_naming_the_option(
    tmp_path: Path, approvals: Any
) -> None:
    """They failed in words naming no option (``'int' object is not iterable``), or as a
    tool named 119 (bytes read as numbers)."""
    handler = HumanInputHandler()
    graph, config = held_graph(tmp_path), {"configurable": {"thread_id": "t-rules"}}
    says = r"^approvals must be a set of tool names or a dict of names to Approval"
    with pytest.raises(TypeError, match=says):
        await lg.start(graph, {}, config, handler=handler, approvals=approvals)
    with pytest.raises(TypeError, match=says):
        pa.deferred_handler(handler, approvals=approvals)
    assert (await graph.aget_state(config)).values == {}, "the graph ran"


HUGE = 1_000_000

QUOTED_SHORT: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"timeout": "1" * HUGE}, ValueError, r"at most 3153600000 \(a century\), got '111"),
    ({"t" * HUGE: 5}, TypeError, r"deferred_handler\(\) got unexpected keyword arguments \['ttt"),
    ({"wait": "w" * HUGE}, TypeError, r"deferred_handler\(\): wait is True or False, got 'www"),
    (
        {"ladder": Ladder(escalate(60, to="b")), "approvals": {"x" * HUGE: Approval(timeout=30)}},
        ValueError,
        r"^approvals\['xxx.*\.\.\.\]: Ladder: the escalate step at 60s is at or past",
    ),
]


@pytest.mark.parametrize(("options", "error", "says"), QUOTED_SHORT)
def test_a_huge_option_is_quoted_cut_short(
    options: dict[str, Any], error: type[Exception], says: str
) -> None:
    """A million-character value makes a message of a line, not of a million characters."""
    with pytest.raises(error, match=says) as refused:
        pa.deferred_handler(HumanInputHandler(), **options)
    assert "..." in str(refused.value)
    assert len(str(refused.value)) < 400, len(str(refused.value))


@pytest.mark.parametrize("nested", [False, True], ids=["as the config", "as configurable"])
async def test_a_config_of_an_integer_too_long_to_write_is_refused_as_no_dict(
    tmp_path: Path, nested: bool
) -> None:
    """Quoting it raised Python's ``ValueError`` on integers past its digit limit instead."""
    config: Any = {"configurable": 10**5000} if nested else 10**5000
    with pytest.raises(TypeError, match=r"config must be a dict naming the thread.*an integer"):
        await lg.start(held_graph(tmp_path), {}, config, handler=HumanInputHandler())
