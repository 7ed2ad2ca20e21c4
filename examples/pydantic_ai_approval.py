"""A Pydantic AI agent whose deferred tool calls a person answers through roomkit.

``send_invoice`` needs approval and ``ask_user`` is deferred as a question; the agent's
``HandleDeferredToolCalls`` capability hands both to ``roomkit.adapters.pydantic_ai``, which
asks people through roomkit and gives the agent ``DeferredToolResults``, with who answered
each call in ``answered_by``. The model is Pydantic AI's own ``TestModel``, so this runs
offline; the "people" answer in the handler's notification callback.

Run: python examples/pydantic_ai_approval.py (needs: pip install -e '.[pydantic-ai]')
"""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.models.test import TestModel

from roomkit.adapters.pydantic_ai import deferred_handler
from roomkit.models.pending_input import PendingInputEvent
from roomkit.tools.approvals import Approval, edit
from roomkit.tools.human_input import HumanInputHandler


async def main() -> list[str]:
    handler = HumanInputHandler()
    log: list[str] = []

    async def person(event: PendingInputEvent) -> None:
        if event.kind == "question":
            log.append(f"[asked {event.actor_id}] {event.arguments}")
            await handler.aresolve(event.pending_id, "net 30", by="alice")
        else:
            log.append(f"[approval for {event.approvers[0]}] {event.tool_name} {event.arguments}")
            await handler.aresolve(event.pending_id, edit({"amount": 90}), by="bob")

    handler.on_input_required = person
    ask_people = deferred_handler(
        handler, actor="alice", approvals={"send_invoice": Approval(approvers=["bob"])}
    )
    agent = Agent(
        TestModel(call_tools=["ask_user", "send_invoice"]),
        capabilities=[HandleDeferredToolCalls(handler=ask_people)],
    )

    @agent.tool_plain
    def ask_user(question: str) -> str:
        raise CallDeferred(kind="question")

    @agent.tool_plain(requires_approval=True)
    def send_invoice(amount: int) -> str:
        return f"invoice sent for {amount}"

    result = await agent.run("Bill the customer")
    log.append(f"[agent] {result.output}")
    return log


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
