"""A resumer in a process of its own, for the crash test: ``python langgraph_resumer.py FOLDER``.

Its graph's node holds a tool call, then kills this process (SIGKILL) when it runs: the
resumer dies after it claimed the resume and before the thread moved on.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from roomkit.adapters import langgraph as lg
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores.sqlite import SQLiteStore

CONFIG = {"configurable": {"thread_id": "crash"}}


class State(TypedDict, total=False):
    decision: Any


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


async def main(folder: Path) -> None:
    store = SQLiteStore(folder / "requests.db")
    async with AsyncSqliteSaver.from_conn_string(str(folder / "graph.db")) as saver:
        graph = build(saver, folder / "ran.txt", die=True)
        await lg.resume(graph, CONFIG, handler=HumanInputHandler(store=store))
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
