"""A graph's question whose ``response_schema`` no answer could be checked against."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
from langgraph.graph import END, START, StateGraph
from langgraph.types import Interrupt, interrupt

from roomkit.adapters import langgraph as lg
from roomkit.tools.human_input import HumanInputHandler


class State(TypedDict, total=False):
    colour: Any


def asking_with(schema: Any) -> Any:
    """A graph that asks one question under the response schema ``schema``: through
    ``interrupt()`` when it is a dict (which LangGraph passes on as it is), else in an
    interrupt of its own making (``interrupt()`` itself turns a type into its schema)."""

    def ask(state: State) -> State:
        if isinstance(schema, dict):
            return {"colour": interrupt("Which colour?", response_schema=schema)}
        raise GraphInterrupt((Interrupt("Which colour?", id="0" * 32, response_schema=schema),))

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=InMemorySaver())


CONFIG = {"configurable": {"thread_id": "t-schema"}}


@pytest.mark.parametrize(
    ("schema", "error", "says"),
    [
        ({"$ref": "#/nowhere"}, ValueError, r"holds a \$ref that resolves to nothing"),
        ({"type": 12}, ValueError, "is no valid JSON Schema"),
        (5, TypeError, "must be a JSON Schema dict or a Python type"),
    ],
)
async def test_a_broken_response_schema_is_refused_naming_the_interrupt(
    handler: HumanInputHandler, schema: Any, error: type[Exception], says: str
) -> None:
    """A ``$ref`` to nowhere failed with jsonschema's own error, and a schema that is no
    type with pydantic's; nobody is asked, and the thread stays at its question."""
    graph = asking_with(schema)
    refused = f"^the response_schema of interrupt '[0-9a-f]+' on thread 't-schema' {says}"
    for entry in (lg.run, lg.start):
        with pytest.raises(error, match=refused) as caught:
            await entry(graph, {}, CONFIG, handler=handler)
        assert "the thread stays stopped at this interrupt" in str(caught.value)
    with pytest.raises(error, match=refused):
        await lg.resume(graph, CONFIG, handler=handler)
    assert await handler.list_pending() == []
    assert (await graph.aget_state(CONFIG)).interrupts
