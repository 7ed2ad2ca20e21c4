"""Resumers in a process of their own: ``python langgraph_resumer.py FOLDER [parallel|next]``.

By default its graph's node holds a tool call, then kills this process (SIGKILL) when it
runs: the resumer dies after it claimed the resume and before the thread moved on. With
``next`` the held node finishes and the node after it kills this process once the held node's
step is checkpointed: the resumer dies once the thread moved on, before its next stop. With
``parallel`` its graph holds two calls in one step; the second call's node, resumed, says
``inside`` on stdout once the first node's writes are saved and waits for a line on stdin:
the thread is mid-step, another resumer may look at it, and then this one finishes. The
tests run ``main`` in a process forked from one that imported this module
(:mod:`tests.forked_processes`).
"""

from __future__ import annotations

import asyncio
import operator
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from roomkit.adapters import langgraph as lg
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

CONFIG = {"configurable": {"thread_id": "crash"}}


class State(TypedDict, total=False):
    decision: Any


class Both(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def build(saver: Any, ran: Path, *, die: bool) -> Any:
    """A graph holding one call; its node writes to ``ran`` once past the pause."""

    def hold(state: State) -> State:
        decision = interrupt({"type": "tool_approval", "name": "wire", "args": {"amount": 5}})
        if die:
            os.kill(os.getpid(), signal.SIGKILL)
        with ran.open("a") as written:
            written.write("ran\n")
        return {"decision": decision}

    graph = StateGraph(State)
    graph.add_node("hold", hold)
    graph.add_edge(START, "hold")
    graph.add_edge("hold", END)
    return graph.compile(checkpointer=saver)


def build_two_steps(
    saver: Any, ran: Path, *, die: Callable[[], Awaitable[None]] | None = None
) -> Any:
    """A graph holding one call in node ``hold``, then running node ``after``; each writes
    its name to ``ran`` once it ran, and ``after`` first awaits ``die`` when given."""

    def hold(state: State) -> State:
        decision = interrupt({"type": "tool_approval", "name": "wire", "args": {"amount": 5}})
        with ran.open("a") as written:
            written.write("hold\n")
        return {"decision": decision}

    async def after(state: State) -> State:
        if die is not None:
            await die()
        with ran.open("a") as written:
            written.write("after\n")
        return {}

    graph = StateGraph(State).add_sequence([hold, after])
    return graph.add_edge(START, "hold").add_edge("after", END).compile(checkpointer=saver)


def build_parallel(
    saver: Any, ran: Path, *, stay: Callable[[], Awaitable[None]] | None = None
) -> Any:
    """A graph whose one step holds two calls, ``wire`` (node ``a``) and ``pay`` (node
    ``b``), then runs ``c``; each node writes its name to ``ran`` once past its pause, and
    ``b`` then awaits ``stay`` when given."""

    def note(name: str) -> Both:
        with ran.open("a") as written:
            written.write(f"{name}\n")
        return {"log": [name]}

    def a(state: Both) -> Both:
        interrupt({"type": "tool_approval", "name": "wire", "args": {"amount": 5}})
        return note("a")

    async def b(state: Both) -> Both:
        interrupt({"type": "tool_approval", "name": "pay", "args": {"amount": 7}})
        written = note("b")
        if stay is not None:
            await stay()
        return written

    graph = StateGraph(Both)
    graph.add_node("a", a)
    graph.add_node("b", b)
    graph.add_node("c", lambda state: note("c"))
    graph.add_edge(START, "a")
    graph.add_edge(START, "b")
    graph.add_edge(["a", "b"], "c")
    graph.add_edge("c", END)
    return graph.compile(checkpointer=saver)


class DecidedSaver(AsyncSqliteSaver):
    """LangGraph's SQLite saver, telling when a checkpoint holding the decision is saved."""

    decided: asyncio.Event

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        saved = await super().aput(config, checkpoint, metadata, new_versions)
        if "decision" in checkpoint["channel_values"]:
            self.decided.set()
        return saved


class WatchedSaver(AsyncSqliteSaver):
    """LangGraph's SQLite saver, telling when node ``a``'s writes are saved."""

    saved_a: asyncio.Event

    async def aput_writes(
        self,
        config: Any,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await super().aput_writes(config, writes, task_id, task_path)
        if any(channel == "log" and value == ["a"] for channel, value in writes):
            self.saved_a.set()


async def main(where: str, graph_kind: str = "one") -> None:
    folder = Path(where)
    store = SQLiteStore(folder / "requests.db")
    handler = HumanInputHandler(store=store)
    ran = folder / "ran.txt"
    if graph_kind == "parallel":
        async with WatchedSaver.from_conn_string(str(folder / "graph.db")) as saver:
            saver.saved_a = asyncio.Event()

            async def stay() -> None:
                await saver.saved_a.wait()
                print("inside", flush=True)
                await asyncio.to_thread(sys.stdin.readline)

            graph = build_parallel(saver, ran, stay=stay)
            print(await lg.resume(graph, CONFIG, handler=handler), flush=True)
    elif graph_kind == "next":
        async with DecidedSaver.from_conn_string(str(folder / "graph.db")) as saver:
            saver.decided = asyncio.Event()

            async def die() -> None:
                await saver.decided.wait()
                os.kill(os.getpid(), signal.SIGKILL)

            graph = build_two_steps(saver, ran, die=die)
            await lg.resume(graph, CONFIG, handler=handler)
    else:
        async with AsyncSqliteSaver.from_conn_string(str(folder / "graph.db")) as saver:
            graph = build(saver, ran, die=True)
            await lg.resume(graph, CONFIG, handler=handler)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
