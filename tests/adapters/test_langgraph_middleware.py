"""LangGraph's ``HumanInTheLoopMiddleware`` approvals answered through roomkit: ``create_agent``
on a scripted chat model, per call and batched."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from tests.adapters.conftest import Desk

from roomkit.adapters import langgraph as lg
from roomkit.core.exceptions import InvalidAnswerError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.approvals import approve, edit, reject
from roomkit.tools.human_input import HumanInputHandler


class Scripted(GenericFakeChatModel):
    """A chat model that says what it is given, tools bound or not."""

    def bind_tools(self, tools: Any, **options: Any) -> Any:
        return self


def config(thread: str = "t-1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def scripted_agent(tools: list[Any], calls: list[dict[str, Any]], middleware: Any) -> Any:
    """``create_agent`` on a chat model that makes ``calls`` in one message, then says done."""
    model = Scripted(messages=iter([AIMessage(content="", tool_calls=calls), AIMessage("done")]))
    return create_agent(model, tools=tools, middleware=[middleware], checkpointer=InMemorySaver())


async def test_only_the_middlewares_allowed_decisions_are_taken(handler: HumanInputHandler) -> None:
    """A per-call HumanInTheLoopMiddleware approval offers its allowed decisions only."""
    sent: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    calls = [{"name": "send_email", "args": {"to": "bob"}, "id": "call-1"}]
    middleware = HumanInTheLoopMiddleware(
        interrupt_on={"send_email": {"allowed_decisions": ["approve", "reject"]}},
        interrupt_mode="per_call",
    )
    agent = scripted_agent([send_email], calls, middleware)
    messages = {"messages": [{"role": "user", "content": "mail bob"}]}
    (pending_id,) = await lg.start(agent, messages, config(), handler=handler, actor="alice")
    request = await handler.get_request(pending_id)
    assert request is not None
    assert request.answer_schema is not None
    assert request.answer_schema["x-roomkit-decisions"] == ["approve", "reject"]
    with pytest.raises(InvalidAnswerError, match="approve, reject only"):
        await handler.aresolve(pending_id, edit({"to": "carol"}), by="alice")
    assert (await handler.get_request(pending_id)).status is PendingInputStatus.PENDING  # type: ignore[union-attr]
    assert await handler.aresolve(pending_id, approve(), by="alice")
    assert await lg.resume(agent, config(), handler=handler, actor="alice") == []
    assert sent == ["bob"]


async def test_a_batched_middleware_request_is_one_approval_per_call(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """HumanInTheLoopMiddleware's batched HITLRequest: each action its own approval,
    answered together by position."""
    sent: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    calls = [
        {"name": "send_email", "args": {"to": "bob"}, "id": "call-1"},
        {"name": "send_email", "args": {"to": "eve"}, "id": "call-2"},
    ]
    middleware = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
    agent = scripted_agent([send_email], calls, middleware)
    messages = {"messages": [{"role": "user", "content": "mail them"}]}
    running = asyncio.create_task(lg.run(agent, messages, config(), handler=handler, actor="al"))
    first, second = await desk.next(), await desk.next()
    by_to = {event.arguments["to"]: event.pending_id for event in (first, second)}
    assert await handler.aresolve(by_to["eve"], reject("not eve"), by="al")
    assert await handler.aresolve(by_to["bob"], approve(), by="al")
    final = await running
    assert sent == ["bob"]
    assert any("not eve" in str(message.content) for message in final["messages"])


@pytest.mark.parametrize("mode", ["per_call", "batched"])
async def test_a_middleware_approval_that_cannot_be_refused_is_refused_before_asking(
    handler: HumanInputHandler, mode: str
) -> None:
    """``allowed_decisions`` without ``reject``: roomkit's approval can always end refused
    (a person, an expiry, a withdrawal), which LangGraph would not take; nobody is asked."""
    sent: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    middleware = HumanInTheLoopMiddleware(
        interrupt_on={"send_email": {"allowed_decisions": ["approve", "edit"]}},
        interrupt_mode=mode,  # type: ignore[arg-type]
    )
    calls = [{"name": "send_email", "args": {"to": "bob"}, "id": "call-1"}]
    agent = scripted_agent([send_email], calls, middleware)
    messages = {"messages": [{"role": "user", "content": "mail bob"}]}
    with pytest.raises(ValueError, match=r"'send_email'.*add \"reject\""):
        await lg.start(agent, messages, config(), handler=handler, actor="alice")
    with pytest.raises(ValueError, match="'send_email'"):
        await lg.resume(agent, config(), handler=handler, actor="alice")
    assert await handler.list_pending() == []
    assert sent == []


async def test_a_batched_edit_must_match_the_tools_schema(handler: HumanInputHandler) -> None:
    """A batched approval's edit is checked against the tool's own argument schema, as a
    per-call one is: an edit breaking it is refused and nothing changes."""
    sent: list[tuple[str, int]] = []

    @tool
    def send_email(to: str, count: int) -> str:
        """Send emails."""
        sent.append((to, count))
        return f"sent {count} to {to}"

    middleware = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
    calls = [{"name": "send_email", "args": {"to": "bob", "count": 1}, "id": "call-1"}]
    agent = scripted_agent([send_email], calls, middleware)
    messages = {"messages": [{"role": "user", "content": "mail bob"}]}
    (pending_id,) = await lg.start(agent, messages, config(), handler=handler, actor="alice")
    with pytest.raises(InvalidAnswerError):
        await handler.aresolve(pending_id, edit({"to": "bob", "count": "many"}), by="alice")
    assert (await handler.get_request(pending_id)).status is PendingInputStatus.PENDING  # type: ignore[union-attr]
    assert await handler.aresolve(pending_id, edit({"to": "carol", "count": 2}), by="alice")
    assert await lg.resume(agent, config(), handler=handler, actor="alice") == []
    assert sent == [("carol", 2)]


@pytest.mark.parametrize("mode", ["per_call", "batched"])
async def test_arguments_only_python_reads_as_json_are_shown_as_written(
    handler: HumanInputHandler, mode: str
) -> None:
    """A chat model's NaN, which langchain's JSON parser reads as a float, made ``start``
    fail at its request, telling the caller to send a finite number, and the thread could
    not go on; the person is shown the call's arguments as JSON writes them, and decides."""
    paid: list[float] = []

    @tool
    def pay(amount: float) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    middleware = HumanInTheLoopMiddleware(
        interrupt_on={"pay": True},
        interrupt_mode=mode,  # type: ignore[arg-type]
    )
    calls = [{"name": "pay", "args": {"amount": float("nan")}, "id": "call-1"}]
    agent = scripted_agent([pay], calls, middleware)
    messages = {"messages": [{"role": "user", "content": "pay"}]}
    (pending_id,) = await lg.start(agent, messages, config(), handler=handler, actor="alice")
    request = await handler.get_request(pending_id)
    assert request is not None
    assert request.arguments == {"arguments": '{"amount": NaN}'}
    assert await handler.aresolve(pending_id, reject("not that"), by="alice")
    assert await lg.resume(agent, config(), handler=handler, actor="alice") == []
    assert paid == []
    final = await agent.aget_state(config())
    assert any("not that" in str(message.content) for message in final.values["messages"])
