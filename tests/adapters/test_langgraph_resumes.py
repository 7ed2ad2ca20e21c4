"""Durable LangGraph threads whose node interrupts more than once: each interrupt is resumed
once, and the thread goes on to its end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from tests.forked_processes import ROOT

from roomkit.adapters import langgraph as lg
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

"""The checkout: where the processes the tests start run."""

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


async def test_a_thread_whose_resumer_died_past_the_pause_is_continued_once(
    tmp_path: Path,
) -> None:
    """SIGKILL once the resume moved the thread past its pause, before its next stop: the
    thread kept tasks to run and no interrupt, so every later resume returned ``[]`` and
    the rest of the graph never ran. Once the dead resumer's lease lapses (on the store's
    clock), a resumer continues it from its last checkpoint, once."""
    import signal
    import time

    from tests.adapters import langgraph_resumer
    from tests.adapters.langgraph_resumer import CONFIG as CRASH
    from tests.adapters.langgraph_resumer import build_two_steps
    from tests.forked_processes import start as start_peer

    from roomkit.stores.sqlite import SQLiteStore

    ran = tmp_path / "ran.txt"
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        graph = build_two_steps(saver, ran)
        (held,) = await lg.start(graph, {}, CRASH, handler=handler)
        assert await handler.aresolve(held, approve(), by="alice")
    child = await start_peer(langgraph_resumer.main, ROOT, str(tmp_path), "next")
    assert await child.wait() == -signal.SIGKILL
    later = SQLiteStore(tmp_path / "requests.db", clock=lambda: time.time() + 301)
    try:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
            graph = build_two_steps(saver, ran)
            assert await lg.resume(graph, CRASH, handler=handler) == []
            assert ran.read_text() == "hold\n"  # the dead resumer's lease still holds
            both = await asyncio.gather(
                lg.resume(graph, CRASH, handler=HumanInputHandler(store=later)),
                lg.resume(graph, CRASH, handler=HumanInputHandler(store=later)),
            )
            assert both == [[], []]
            assert await lg.resume(graph, CRASH, handler=HumanInputHandler(store=later)) == []
            state = await graph.aget_state(CRASH)
    finally:
        await later.close()
        await store.close()
    assert ran.read_text() == "hold\nafter\n"
    assert state.tasks == ()
    assert state.values["decision"] == {"type": "approve"}


async def test_a_thread_stopped_at_a_static_breakpoint_is_left_there(
    handler: HumanInputHandler,
) -> None:
    """A thread stopped by ``interrupt_before`` has tasks left and no interrupt, as a cut one
    has: no resume of roomkit's moved it, so resume leaves it to the application."""
    from langgraph.checkpoint.memory import InMemorySaver

    ran: list[str] = []

    def step(name: str) -> Any:
        def node(state: State) -> State:
            ran.append(name)
            return {}

        return node

    graph = StateGraph(State)
    graph.add_node("first", step("first"))
    graph.add_node("second", step("second"))
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", END)
    app = graph.compile(checkpointer=InMemorySaver(), interrupt_before=["second"])
    assert await lg.start(app, {}, CONFIG, handler=handler) == []
    assert await lg.resume(app, CONFIG, handler=handler) == []
    assert ran == ["first"]
    assert (await app.aget_state(CONFIG)).next == ("second",)


async def test_two_starts_of_one_thread_at_once_run_the_graph_once(
    handler: HumanInputHandler,
) -> None:
    """A start while another runs the graph raised nothing: both ran the model node, whose
    calls differ, and people were asked about both. The second now raises
    ``RunUnderWayError``, and re-attaches once the first stopped."""
    from langgraph.checkpoint.memory import InMemorySaver

    from roomkit.core.exceptions import RunUnderWayError

    inside, go_on = asyncio.Event(), asyncio.Event()
    ran: list[str] = []

    async def model(state: State) -> State:
        ran.append("model")
        if len(ran) == 1:  # the first start stays inside its run until told
            inside.set()
            await go_on.wait()
        return {"colour": f"colour {len(ran)}"}

    def hold(state: State) -> State:
        call = {"type": "tool_approval", "name": "paint", "args": {"c": state["colour"]}}
        return {"decision": interrupt(call)}

    graph = StateGraph(State).add_sequence([model, hold])
    app = graph.add_edge(START, "model").add_edge("hold", END).compile(InMemorySaver())
    first = asyncio.create_task(lg.start(app, {}, CONFIG, handler=handler))
    await inside.wait()
    try:
        with pytest.raises(RunUnderWayError, match="nothing was run and nobody was asked"):
            await lg.start(app, {}, CONFIG, handler=handler)
    finally:
        go_on.set()
    (held,) = await first
    assert await lg.start(app, {}, CONFIG, handler=handler) == [held]
    assert ran == ["model"]
    assert [request.pending_id for request in await handler.list_pending()] == [held]


async def test_a_resume_under_another_actor_or_room_is_refused_and_asks_nobody(
    handler: HumanInputHandler,
) -> None:
    """It found none of the thread's requests in its scope, and asked about them again."""
    graph = asking_twice(InMemorySaver(), [])
    (question,) = await lg.start(graph, {}, CONFIG, handler=handler, actor="alice", room="r")
    says = (
        r"started under another actor or room than actor '{}' and room '{}' on this handler's "
        r"store; nothing was opened. To go on with that thread, pass the actor"
    )
    with pytest.raises(ValueError, match=says.format("bob", "r")):
        await lg.resume(graph, CONFIG, handler=handler, actor="bob", room="r")
    with pytest.raises(ValueError, match=says.format("alice", "")):
        await lg.resume(graph, CONFIG, handler=handler, actor="alice")
    with pytest.raises(ValueError, match=r"langgraph.start\(\): thread 't-twice' was started"):
        await lg.start(graph, {}, CONFIG, handler=handler, actor="bob", room="r")
    assert [request.pending_id for request in await handler.list_pending()] == [question]
    assert await handler.aresolve(question, "blue", by="alice")
    (held,) = await lg.resume(graph, CONFIG, handler=handler, actor="alice", room="r")
    assert held != question
