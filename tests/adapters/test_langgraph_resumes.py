"""Durable LangGraph threads whose node interrupts more than once: each interrupt is resumed
once, and the thread goes on to its end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from roomkit.adapters import langgraph as lg
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

CONFIG = {"configurable": {"thread_id": "t-twice"}}


class State(TypedDict, total=False):
    colour: Any
    decision: Any


def asking_twice(saver: Any, ran: list[str]) -> Any:
    """A graph whose one node asks a question, then holds a call: two interrupts in turn,
    both while the thread stays at the checkpoint it stopped at."""

    def node(state: State) -> State:
        colour = interrupt("Which colour?")
        ran.append(f"answered {colour}")
        decision = interrupt({"type": "tool_approval", "name": "paint", "args": {"c": colour}})
        ran.append("decided")
        return {"colour": colour, "decision": decision}

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    return graph.compile(checkpointer=saver)


async def test_a_node_interrupting_twice_is_resumed_at_each_interrupt(
    handler: HumanInputHandler, tmp_path: Path
) -> None:
    """The second interrupt of a node stops the thread at the same checkpoint as the first:
    its resume was taken for the first's, done for good, and the thread stayed stopped
    with its request settled."""
    ran: list[str] = []
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        graph = asking_twice(saver, ran)
        (question,) = await lg.start(graph, {}, CONFIG, handler=handler, actor="alice")
        assert await handler.aresolve(question, "blue", by="alice")
        (held,) = await lg.resume(graph, CONFIG, handler=handler, actor="alice")
        assert held != question
        assert await handler.aresolve(held, approve(), by="alice")
        both = await asyncio.gather(
            lg.resume(graph, CONFIG, handler=handler, actor="alice"),
            lg.resume(graph, CONFIG, handler=handler, actor="alice"),
        )
        assert both == [[], []]
        assert await lg.resume(graph, CONFIG, handler=handler, actor="alice") == []
        state = await graph.aget_state(CONFIG)
    assert state.interrupts == ()
    assert state.values == {"colour": "blue", "decision": {"type": "approve"}}
    assert ran == ["answered blue", "answered blue", "decided"]
