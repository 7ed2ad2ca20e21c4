"""A LangGraph graph whose interrupts a person answers through roomkit.

The graph asks a question (``interrupt()`` with a ``response_schema``) and then holds a
tool call for approval (a ``tool_approval`` interrupt, the shape langchain's
``HumanInTheLoopMiddleware`` raises per call). ``roomkit.adapters.langgraph.run`` turns each
into a roomkit request and resumes the graph with the answer. Here the "person" answers in
the handler's notification callback; in a deployment they answer on the desk, in Slack, by
email or with ``roomkit pending answer``, from any process sharing the store.

Run: python examples/langgraph_approval.py (needs: pip install -e '.[langgraph]')
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from roomkit.adapters import langgraph as roomkit_langgraph
from roomkit.models.pending_input import PendingInputEvent
from roomkit.tools.approvals import Approval, edit
from roomkit.tools.human_input import HumanInputHandler

COLOUR = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


class State(TypedDict, total=False):
    colour: str
    sent: Any


def ask(state: State) -> State:
    answer = interrupt("Which colour should the logo be?", response_schema=COLOUR)
    return {"colour": answer["colour"]}


def send(state: State) -> State:
    decision = interrupt(
        {
            "type": "tool_approval",
            "tool_call_id": "call-1",
            "name": "send_logo",
            "args": {"to": "bob@example.com", "colour": state["colour"]},
            "description": "Email the logo",
        }
    )
    return {"sent": decision}


def build() -> Any:
    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_node("send", send)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "send")
    graph.add_edge("send", END)
    return graph.compile(checkpointer=InMemorySaver())


async def main() -> list[str]:
    handler = HumanInputHandler()
    log: list[str] = []

    async def person(event: PendingInputEvent) -> None:
        if event.kind == "question":
            log.append(f"[asked {event.actor_id}] {event.arguments['question']}")
            await handler.aresolve(event.pending_id, '{"colour": "blue"}', by="alice")
        else:
            log.append(f"[approval for {event.approvers[0]}] {event.tool_name} {event.arguments}")
            changed = {**event.arguments, "to": "carol@example.com"}
            await handler.aresolve(event.pending_id, edit(changed), by="bob")

    handler.on_input_required = person
    final = await roomkit_langgraph.run(
        build(),
        {},
        {"configurable": {"thread_id": "logo-1"}},
        handler=handler,
        actor="alice",
        approvals={"send_logo": Approval(approvers=["bob"], timeout=600)},
    )
    log.append(f"[graph] colour={final['colour']} sent={final['sent']}")
    return log


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
