"""A durable LangGraph thread keeps the actor, room and store its start ran under: starts at
the same moment under different ones, and resumes under others, are refused."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from roomkit.adapters import langgraph as lg
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

CONFIG = {"configurable": {"thread_id": "t-scope"}}
ANOTHER = r"langgraph.{}\(\): thread 't-scope' was started under another actor or room"


class State(TypedDict, total=False):
    colour: Any


class Gate(InMemorySaver):
    """LangGraph's saver, whose first ``reads`` reads wait until all of them arrived: the
    callers that made them go on from the same moment."""

    def __init__(self, reads: int) -> None:
        super().__init__()
        self.reads = reads
        self.arrived = asyncio.Event()

    async def aget_tuple(self, config: Any) -> Any:
        if self.reads:
            self.reads -= 1
            if not self.reads:
                self.arrived.set()
            await self.arrived.wait()
        return await super().aget_tuple(config)


def asking(saver: Any) -> Any:
    """A graph whose one node asks a question."""

    def node(state: State) -> State:
        return {"colour": interrupt("Which colour?")}

    graph = StateGraph(State).add_node("node", node)
    return graph.add_edge(START, "node").add_edge("node", END).compile(checkpointer=saver)


async def test_starts_at_once_under_two_actors_keep_one_scope(tmp_path: Path) -> None:
    """Both starts read the thread before either kept its scope: both kept theirs, and a
    resume under the second actor opened a request of its own, asking again. Now one takes
    the thread and the other is refused as a later start under another actor is."""
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    try:
        graph = asking(Gate(reads=2))
        both = await asyncio.gather(
            lg.start(graph, {}, CONFIG, handler=handler, actor="alice"),
            lg.start(graph, {}, CONFIG, handler=handler, actor="bob"),
            return_exceptions=True,
        )
        (won,) = [i for i, out in enumerate(both) if isinstance(out, list)]
        lost = both[1 - won]
        assert isinstance(lost, ValueError), lost
        assert lost.args[0].startswith("langgraph.start(): thread 't-scope' was started under")
        loser = ["alice", "bob"][1 - won]
        with pytest.raises(ValueError, match=ANOTHER.format("resume")):
            await lg.resume(graph, CONFIG, handler=handler, actor=loser)
        (question,) = both[won]
        assert [request.pending_id for request in await handler.list_pending()] == [question]
    finally:
        await store.close()


async def test_a_resume_on_another_store_is_refused_and_asks_nobody(
    handler: HumanInputHandler, tmp_path: Path
) -> None:
    """A handler over another store found no mark of the thread's scope, took the thread for
    one started before the marks were kept, and asked again about its interrupt."""
    graph = asking(InMemorySaver())
    (question,) = await lg.start(graph, {}, CONFIG, handler=handler, actor="alice")
    store = SQLiteStore(tmp_path / "other.db")
    other = HumanInputHandler(store=store)
    says = r"langgraph.{}\(\): thread 't-scope' was started on another store than this handler's"
    try:
        with pytest.raises(ValueError, match=says.format("resume")):
            await lg.resume(graph, CONFIG, handler=other, actor="alice")
        with pytest.raises(ValueError, match=says.format("start")):
            await lg.start(graph, {}, CONFIG, handler=other, actor="alice")
        assert await other.list_pending() == []
    finally:
        await store.close()
    assert await handler.aresolve(question, "blue", by="alice")
    assert await lg.resume(graph, CONFIG, handler=handler, actor="alice") == []
    assert (await graph.aget_state(CONFIG)).values == {"colour": "blue"}


async def test_a_thread_started_before_its_scope_was_kept_goes_on_as_asked(
    handler: HumanInputHandler,
) -> None:
    """Its checkpoints say nothing of a scope and its store keeps none: resumes open its
    requests and re-attach to them, and its resumed checkpoints still say nothing."""

    def node(state: State) -> State:
        return {"colour": [interrupt("Which colour?"), interrupt("Which shade?")]}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node")
    app = graph.add_edge("node", END).compile(checkpointer=InMemorySaver())
    await app.ainvoke({}, CONFIG)  # where a start that kept no scope left the thread
    (colour,) = await lg.resume(app, CONFIG, handler=handler, actor="alice")
    assert await lg.resume(app, CONFIG, handler=handler, actor="alice") == [colour]
    assert await handler.aresolve(colour, "blue", by="alice")
    (shade,) = await lg.resume(app, CONFIG, handler=handler, actor="alice")
    assert await handler.aresolve(shade, "dark", by="alice")
    assert await lg.resume(app, CONFIG, handler=handler, actor="alice") == []
    state = await app.aget_state(CONFIG)
    assert state.values == {"colour": ["blue", "dark"]}
    assert not [key for key in state.metadata if key.startswith("roomkit")]
