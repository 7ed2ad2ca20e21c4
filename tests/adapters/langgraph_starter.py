"""A start in a process of its own: ``python langgraph_starter.py REDIS_URL PREFIX``.

It starts the thread ``t-scope`` under actor ``alice`` on a Redis store at ``PREFIX``, with a
graph of its own (the test kills it before the graph runs: what it leaves is in the store).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from roomkit.adapters import langgraph as lg
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler

CONFIG = {"configurable": {"thread_id": "t-scope"}}


class State(TypedDict, total=False):
    colour: Any


def node(state: State) -> State:
    return {"colour": interrupt("Which colour?")}


async def main(url: str, prefix: str) -> None:
    store = RedisStore(url, prefix=prefix)
    try:
        handler = HumanInputHandler(store=store)
        graph = StateGraph(State).add_node("node", node).add_edge(START, "node")
        app = graph.add_edge("node", END).compile(checkpointer=InMemorySaver())
        await lg.start(app, {}, CONFIG, handler=handler, actor="alice")
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
