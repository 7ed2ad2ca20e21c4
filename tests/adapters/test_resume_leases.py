"""A resumer whose run outlasts its claim's lease keeps the claim while it lives: a resume
taking longer than the lease (a slow tool, a long turn) is not taken over by the next
resumer, which would run the approved call a second time.

The runs are on the virtual clock, and the handler's ledger (where the claims are kept)
reads its time from it, so that the lease lapses without waiting for it.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from roomkit.adapters import langgraph as lg
from roomkit.adapters import pydantic_ai as pa
from roomkit.adapters._resumes import LEASE
from roomkit.stores.memory import MemoryLedger
from roomkit.testing import run_virtual
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

EPOCH = 1_800_000_000.0
"""Where the store's clock stands when the virtual clock starts."""


def handler_on_the_loop() -> HumanInputHandler:
    """A handler whose ledger's clock is the running (virtual) loop's."""
    loop = asyncio.get_running_loop()
    handler = HumanInputHandler()
    assert isinstance(handler.ledger, MemoryLedger)
    handler.ledger.clock = lambda: EPOCH + loop.time()
    return handler


class Slow:
    """A tool body whose first run holds until released, saying when it began; it counts
    its runs."""

    def __init__(self) -> None:
        self.began = asyncio.Event()
        self.release = asyncio.Event()
        self.ran = 0

    async def run(self) -> None:
        self.ran += 1
        if not self.began.is_set():
            self.began.set()
            await self.release.wait()


def test_a_pydantic_resume_outlasting_its_lease_is_not_taken_over() -> None:
    async def main() -> tuple[Any, Any, int]:
        handler = handler_on_the_loop()
        slow = Slow()

        async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart("pay", {"amount": 5}, "call-1")])
            return ModelResponse(parts=[TextPart("done")])

        handle = pa.deferred_handler(handler, wait=False, actor="alice")
        agent: Agent[None, Any] = Agent(
            FunctionModel(model),
            output_type=[str, DeferredToolRequests],
            capabilities=[HandleDeferredToolCalls(handler=handle)],
        )

        @agent.tool_plain(requires_approval=True)
        async def pay(amount: int) -> str:
            await slow.run()
            return f"paid {amount}"

        first = await agent.run("pay 5")
        requests, history = first.output, first.all_messages()
        held = requests.metadata["call-1"]["roomkit"]["pending_id"]
        assert await handler.aresolve(held, approve(), by="alice")
        resuming = asyncio.create_task(pa.resume(agent, requests, history, handler=handler))
        await slow.began.wait()
        await asyncio.sleep(LEASE + 1)
        later = await pa.resume(agent, requests, history, handler=handler)
        slow.release.set()
        resumed = await resuming
        return later, resumed, slow.ran

    later, resumed, ran = run_virtual(main())
    assert later is None, "a second resumer took over a resume still running"
    assert resumed.output == "done"
    assert ran == 1


class State(TypedDict, total=False):
    decision: dict[str, Any]


def test_a_langgraph_resume_outlasting_its_lease_is_not_taken_over() -> None:
    async def main() -> tuple[list[str], list[str], int]:
        handler = handler_on_the_loop()
        slow = Slow()

        async def ask(state: State) -> State:
            call = {"type": "tool_approval", "tool_call_id": "c1", "name": "pay", "args": {}}
            return {"decision": interrupt(call)}

        async def pay(state: State) -> State:
            await slow.run()
            return {}

        graph = StateGraph(State)
        graph.add_node("ask", ask)
        graph.add_node("pay", pay)
        graph.add_edge(START, "ask")
        graph.add_edge("ask", "pay")
        graph.add_edge("pay", END)
        app = graph.compile(checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "t-1"}}
        (held,) = await lg.start(app, {}, config, handler=handler, actor="alice")
        assert await handler.aresolve(held, approve(), by="alice")
        resuming = asyncio.create_task(lg.resume(app, config, handler=handler, actor="alice"))
        await slow.began.wait()
        await asyncio.sleep(LEASE + 1)
        later = await lg.resume(app, config, handler=handler, actor="alice")
        slow.release.set()
        resumed = await resuming
        return later, resumed, slow.ran

    later, resumed, ran = run_virtual(main())
    assert (later, resumed) == ([], [])
    assert ran == 1, "a second resumer ran the thread's node again"
