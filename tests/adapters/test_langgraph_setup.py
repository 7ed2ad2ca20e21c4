"""A graph or a config that cannot pause a thread is refused before the graph runs, saying
what to pass."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from roomkit.adapters import langgraph as lg
from roomkit.tools.human_input import HumanInputHandler


class State(TypedDict, total=False):
    decision: Any


def holding(ran: list[str], saver: Any) -> Any:
    """A graph that holds one call, compiled with ``saver`` as its checkpointer."""

    def hold(state: State) -> State:
        ran.append("hold")
        value = {"type": "tool_approval", "tool_call_id": "c1", "name": "send", "args": {}}
        return {"decision": interrupt(value)}

    graph = StateGraph(State)
    graph.add_node("hold", hold)
    graph.add_edge(START, "hold")
    graph.add_edge("hold", END)
    return graph.compile(checkpointer=saver)


async def run(entry: str, graph: Any, config: Any, handler: HumanInputHandler) -> Any:
    """``entry`` of the adapter on ``graph``; a run that waits for a person fails the test."""
    if entry == "resume":
        called = lg.resume(graph, config, handler=handler)
    else:
        called = getattr(lg, entry)(graph, {}, config, handler=handler)
    return await asyncio.wait_for(called, 30)


@pytest.mark.parametrize("entry", ["run", "start", "resume"])
@pytest.mark.parametrize("config", [None, "t-1", {"configurable": "t-1"}])
async def test_a_config_of_no_known_shape_is_refused_saying_what_to_pass(
    entry: str, config: Any
) -> None:
    """A config that is no dict, or whose ``configurable`` is none, failed with a bare
    ``AttributeError``."""
    ran: list[str] = []
    handler = HumanInputHandler()
    with pytest.raises(TypeError, match=r'config must be a dict naming the thread, \{"config'):
        await run(entry, holding(ran, InMemorySaver()), config, handler)
    assert ran == []


async def test_a_graph_without_a_checkpointer_is_refused_before_anyone_is_asked() -> None:
    """``run`` ran the graph and asked a person, to fail only once they had answered, as
    a thread is resumed from what its checkpointer keeps."""
    ran: list[str] = []
    handler = HumanInputHandler()
    for entry in ("run", "start", "resume"):
        with pytest.raises(ValueError, match=r"the graph has no checkpointer .*compile it"):
            await run(entry, holding(ran, None), {"configurable": {"thread_id": "t"}}, handler)
    assert ran == []
    assert await handler.list_pending() == []
