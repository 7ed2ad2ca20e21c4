"""Pydantic AI's deferred tool calls answered through roomkit, on its own TestModel."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests
from tests.adapters.conftest import Desk
from tests.forked_processes import ROOT

from roomkit.adapters import pydantic_ai as pa
from roomkit.core.exceptions import InvalidAnswerError, KeyConflictError
from roomkit.tools.approvals import Approval, approve, edit, reject, respond
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, default

"""The checkout: where the processes the tests start run."""


def build(handle: Any, tools: list[str], sent: list[str]) -> Agent[None, Any]:
    """An agent whose scripted model calls ``tools``: ``send`` needs approval, ``ask`` asks."""
    agent: Agent[None, Any] = Agent(
        TestModel(call_tools=tools),
        output_type=[str, DeferredToolRequests],
        capabilities=[HandleDeferredToolCalls(handler=handle)],
    )

    @agent.tool_plain(requires_approval=True)
    def send(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    @agent.tool_plain
    def ask(question: str) -> str:
        raise CallDeferred(kind="question")

    return agent


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (approve(), (["a"], "sent to a")),
        (edit({"to": "carol"}), (["carol"], "sent to carol")),
        (reject("not today"), ([], "not today")),
    ],
    ids=["approve", "edit", "reject"],
)
async def test_the_run_waits_inline_for_the_decision(
    handler: HumanInputHandler, desk: Desk, decision: str, expected: tuple[list[str], str]
) -> None:
    sent: list[str] = []
    agent = build(pa.deferred_handler(handler, actor="alice"), ["send"], sent)
    running = asyncio.create_task(agent.run("go"))
    held = await desk.next()
    assert (held.kind, held.tool_name, held.arguments) == ("approval", "send", {"to": "a"})
    assert await handler.aresolve(held.pending_id, decision, by="alice")
    result = await running
    assert sent == expected[0]
    assert expected[1] in json.loads(result.output)["send"]


async def test_an_approval_takes_no_response_and_an_edit_keeps_the_tools_schema(
    handler: HumanInputHandler, desk: Desk
) -> None:
    agent = build(pa.deferred_handler(handler, actor="alice"), ["send"], [])
    running = asyncio.create_task(agent.run("go"))
    held = await desk.next()
    with pytest.raises(InvalidAnswerError, match="approve, edit, reject only"):
        await handler.aresolve(held.pending_id, respond("done"), by="alice")
    with pytest.raises(InvalidAnswerError, match="Invalid edit"):
        await handler.aresolve(held.pending_id, edit({"to": 7}), by="alice")
    assert await handler.aresolve(held.pending_id, reject(), by="alice")
    await running


async def test_a_question_gets_the_persons_answer(handler: HumanInputHandler, desk: Desk) -> None:
    agent = build(pa.deferred_handler(handler, actor="alice"), ["ask"], [])
    running = asyncio.create_task(agent.run("go"))
    asked = await desk.next()
    assert (asked.kind, asked.arguments) == ("question", {"question": "a"})
    assert await handler.aresolve(asked.pending_id, "blue", by="alice")
    assert json.loads((await running).output) == {"ask": "blue"}


@pytest.mark.parametrize("reason", ["no", ""], ids=["a-reason", "no-reason"])
async def test_a_refused_question_reads_as_a_refusal_not_an_answer(
    handler: HumanInputHandler, desk: Desk, reason: str
) -> None:
    """The model reads that the person refused, not their reason as if they answered it."""
    agent = build(pa.deferred_handler(handler, actor="alice"), ["ask"], [])
    running = asyncio.create_task(agent.run("go"))
    asked = await desk.next()
    assert await handler.areject(asked.pending_id, reason)
    read = json.loads((await running).output)["ask"]
    assert read != reason
    assert json.loads(read) == {"error": f"Human input rejected: {reason}"}


async def test_an_approval_nobody_decides_is_denied_as_expired(handler: HumanInputHandler) -> None:
    sent: list[str] = []
    rules = {"send": Approval(timeout=0.05)}
    agent = build(pa.deferred_handler(handler, approvals=rules), ["send"], sent)
    result = await agent.run("go")
    assert sent == []
    assert "expired" in json.loads(result.output)["send"]


async def test_wait_false_ends_the_run_and_results_for_continues_it_once(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    agent = build(pa.deferred_handler(handler, wait=False, actor="alice"), ["send", "ask"], sent)
    first = await agent.run("go")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    ids = {
        part.tool_name: requests.metadata[part.tool_call_id]["roomkit"]["pending_id"]
        for part in [*requests.approvals, *requests.calls]
    }
    assert await handler.aresolve(ids["send"], edit({"to": "dan"}), by="alice")
    assert await handler.aresolve(ids["ask"], "green", by="bob")
    both = await asyncio.gather(
        pa.results_for(requests, handler=handler), pa.results_for(requests, handler=handler)
    )
    (results,) = [found for found in both if found is not None]
    assert set(results.answered_by.values()) == {"alice", "bob"}
    assert await pa.results_for(requests, handler=handler) is None
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert sent == ["dan"]
    assert json.loads(second.output) == {"send": "sent to dan", "ask": "green"}


@pytest.mark.parametrize("wait", ["no", "false", 0, None])
async def test_a_wait_that_is_no_bool_is_refused(wait: Any) -> None:
    """``wait="no"`` was taken as true: the run waited in this process instead of ending."""
    with pytest.raises(TypeError, match=r"deferred_handler\(\): wait is True or False"):
        pa.deferred_handler(HumanInputHandler(), wait=wait)


async def test_the_desk_takes_a_listed_approver_and_refuses_another() -> None:
    from tests.desk.desk_harness import World, bearer

    world = World()
    await world.room("ops", "alice", "bob")
    handle = pa.deferred_handler(
        world.handler, wait=False, approvals={"send": Approval(approvers=["bob"])}, room="ops"
    )
    requests = (await build(handle, ["send"], []).run("go")).output
    (part,) = requests.approvals
    held = requests.metadata[part.tool_call_id]["roomkit"]["pending_id"]
    async with world.client() as client:
        url = f"/api/requests/{held}/answer"
        refused = await client.post(url, json={"decision": "approve"}, headers=bearer("alice"))
        assert refused.status_code in (403, 404), refused.text
        taken = await client.post(url, json={"decision": "approve"}, headers=bearer("bob"))
        assert taken.status_code == 200, taken.text
    results = await pa.results_for(requests, handler=world.handler)
    assert results is not None
    assert results.answered_by == {part.tool_call_id: "bob"}


async def test_resume_continues_the_run_once(handler: HumanInputHandler) -> None:
    """Durable with the next run: two resumers at once run it once; a later one finds
    nothing to do."""
    sent: list[str] = []
    agent = build(pa.deferred_handler(handler, wait=False, actor="alice"), ["send"], sent)
    first = await agent.run("go")
    (part,) = first.output.approvals
    held = first.output.metadata[part.tool_call_id]["roomkit"]["pending_id"]
    assert await handler.aresolve(held, approve(), by="alice")
    history = first.all_messages()
    both = await asyncio.gather(
        pa.resume(agent, first.output, history, handler=handler),
        pa.resume(agent, first.output, history, handler=handler),
    )
    (second,) = [result for result in both if result is not None]
    assert json.loads(second.output) == {"send": "sent to a"}
    assert await pa.resume(agent, first.output, history, handler=handler) is None
    assert await pa.results_for(first.output, handler=handler) is None
    assert sent == ["a"]


async def test_a_resumer_killed_mid_resume_is_replaced_and_the_run_resumes_once(
    tmp_path: Path,
) -> None:
    """SIGKILL after the settle, inside the resume (the approved tool running): the dead
    resumer's claim holds the run until its lease lapses (on the store's clock); then, of two
    resumers at once, one resumes it, once."""
    import signal
    import time

    from tests.adapters import framework_resumers
    from tests.adapters.framework_resumers import keep_paused_run, pydantic_agent
    from tests.forked_processes import start as start_peer

    from roomkit.stores.sqlite import SQLiteStore

    ran = tmp_path / "ran.txt"
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    first = await pydantic_agent(ran, die=False, handler=handler).run("go")
    requests, history = first.output, first.all_messages()
    (part,) = requests.approvals
    held = requests.metadata[part.tool_call_id]["roomkit"]["pending_id"]
    assert await handler.aresolve(held, approve(), by="alice")
    keep_paused_run(tmp_path, requests, history)
    child = await start_peer(framework_resumers.main, ROOT, "pydantic_ai", str(tmp_path))
    assert await child.wait() == -signal.SIGKILL
    agent = pydantic_agent(ran, die=False, handler=handler)
    assert await pa.resume(agent, requests, history, handler=handler) is None
    assert not ran.exists()  # the dead resumer's claim still holds
    lapsed = SQLiteStore(tmp_path / "requests.db", clock=lambda: time.time() + 301)
    later = HumanInputHandler(store=lapsed)
    both = await asyncio.gather(
        pa.resume(agent, requests, history, handler=later),
        pa.resume(pydantic_agent(ran, die=False, handler=later), requests, history, handler=later),
    )
    (second,) = [result for result in both if result is not None]
    assert json.loads(second.output) == {"send": "sent"}
    assert await pa.resume(agent, requests, history, handler=later) is None
    await lapsed.close()
    await store.close()
    assert ran.read_text() == "ran\n"


async def test_nobody_answers_the_ladders_default_answers_and_the_rule_approves(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """A question nobody answers gets the ladder's default (the model reads it marked as a
    default); an approval whose rule approves on expiry runs."""
    sent: list[str] = []
    handle = pa.deferred_handler(
        handler,
        timeout=0.05,
        approvals={"send": Approval(timeout=0.05, on_expiry="approve")},
        ladder=Ladder(on_expiry=default("red")),
    )
    result = await build(handle, ["send", "ask"], sent).run("go")
    output = json.loads(result.output)
    assert sent == ["a"]
    assert output["send"] == "sent to a"
    told = json.loads(output["ask"])
    assert (told["answer"], told["default"]) == ("red", True)
    asked = {event.kind: event.pending_id for event in (await desk.next(), await desk.next())}
    history = await handler.history(asked["question"])
    assert [e["answer"] for e in history if e["type"] == "defaulted"] == ["red"]


async def test_results_for_a_question_past_its_deadline_hold_the_default(
    handler: HumanInputHandler,
) -> None:
    ladder = Ladder(on_expiry=default("red"))
    agent = build(
        pa.deferred_handler(handler, wait=False, timeout=0.05, ladder=ladder), ["ask"], []
    )
    requests = (await agent.run("go")).output
    results = await pa.results_for(requests, handler=handler, timeout=0.05, ladder=ladder)
    assert results is not None
    (answer,) = results.calls.values()
    assert json.loads(answer)["answer"] == "red"


def paying(handle: Any, calls: dict[str, int], paid: list[int]) -> Agent[None, Any]:
    """An agent whose model first calls ``pay`` once per entry of ``calls`` (call id to
    amount), all held for approval, then says it is done; each payment made is in ``paid``."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages: list[Any], info: Any) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("pay", {"amount": amount}, tool_call_id=call_id)
                    for call_id, amount in calls.items()
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent: Agent[None, Any] = Agent(
        FunctionModel(model),
        output_type=[str, DeferredToolRequests],
        capabilities=[HandleDeferredToolCalls(handler=handle)],
    )

    @agent.tool_plain(requires_approval=True)
    def pay(amount: int) -> str:
        paid.append(amount)
        return f"paid {amount}"

    return agent


async def test_a_request_id_changed_in_the_metadata_lends_no_decision_to_another_call(
    handler: HumanInputHandler,
) -> None:
    """The metadata travels with the message history, which a client may hold: naming an
    approved request there must not let another call run on its decision."""
    paid: list[int] = []
    handle = pa.deferred_handler(handler, wait=False, actor="alice")
    small = (await paying(handle, {"call-1": 1}, paid).run("pay 1")).output
    approved = small.metadata["call-1"]["roomkit"]["pending_id"]
    assert await handler.aresolve(approved, approve(), by="manager")
    large = (await paying(handle, {"call-2": 9999}, paid).run("pay 9999")).output
    large.metadata["call-2"]["roomkit"]["pending_id"] = approved
    with pytest.raises(KeyConflictError, match="its decision stands for its own call only"):
        await asyncio.wait_for(pa.results_for(large, handler=handler), 10)
    assert paid == []


async def test_a_key_changed_in_the_metadata_continues_no_run_twice(
    handler: HumanInputHandler,
) -> None:
    """The run's resume was claimed under the keys the metadata names, which a client may
    change: the same settled requests under another key gave their results out again, and
    the approved call ran twice."""
    paid: list[int] = []
    handle = pa.deferred_handler(handler, wait=False, actor="alice")
    agent = paying(handle, {"call-1": 5}, paid)
    first = await agent.run("pay 5")
    requests, history = first.output, first.all_messages()
    held = requests.metadata["call-1"]["roomkit"]["pending_id"]
    assert await handler.aresolve(held, approve(), by="alice")
    assert await pa.resume(agent, requests, history, handler=handler) is not None
    changed = requests.metadata["call-1"]["roomkit"]
    changed["key"] = changed["key"] + "-again"
    assert await pa.resume(agent, requests, history, handler=handler) is None
    assert await pa.results_for(requests, handler=handler) is None
    assert paid == [5]


async def test_a_request_of_another_call_on_the_same_arguments_lends_it_no_decision(
    handler: HumanInputHandler,
) -> None:
    """A request named in the metadata must be the one made for that very call: another
    call's, made for the same tool and arguments, lent its decision."""
    paid: list[int] = []
    handle = pa.deferred_handler(handler, wait=False, actor="alice")
    one = (await paying(handle, {"call-1": 5}, paid).run("pay 5")).output
    approved = one.metadata["call-1"]["roomkit"]["pending_id"]
    assert await handler.aresolve(approved, approve(), by="alice")
    other = (await paying(handle, {"call-2": 5}, paid).run("pay 5 again")).output
    other.metadata["call-2"]["roomkit"]["pending_id"] = approved
    with pytest.raises(KeyConflictError, match="its decision stands for its own call only"):
        await asyncio.wait_for(pa.results_for(other, handler=handler), 10)
    assert paid == []


@pytest.mark.parametrize("entry", ["pending", ["roomkit"], {"roomkit": "pending"}, None])
async def test_metadata_of_another_shape_names_no_request(entry: object) -> None:
    """An entry a client changed into no dict failed with a bare ``AttributeError``; it
    names no request, and the message says how the run must end."""
    handler, paid = HumanInputHandler(), list[int]()
    handle = pa.deferred_handler(handler, wait=False, actor="alice")
    requests = (await paying(handle, {"call-1": 1}, paid).run("pay 1")).output
    requests.metadata["call-1"] = entry
    with pytest.raises(ValueError, match="hold no call roomkit asked about"):
        await pa.results_for(requests, handler=handler)
    assert paid == []


async def test_a_call_its_rule_leaves_to_no_one_runs_when_the_run_ends_for_the_others(
    handler: HumanInputHandler,
) -> None:
    """``Approval(when=...)`` holds for ``wait=False`` as for waiting: the small payment
    runs at once, and only the large one ends the run, naming its request."""
    rules = {"pay": Approval(when=lambda name, arguments: arguments["amount"] > 100)}
    paid: list[int] = []
    handle = pa.deferred_handler(handler, wait=False, actor="alice", approvals=rules)
    agent = paying(handle, {"small": 5, "large": 500}, paid)
    first = await agent.run("pay")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert [part.tool_call_id for part in requests.approvals] == ["large"]
    assert paid == [5]
    [held] = await handler.list_pending()
    assert held.arguments == {"amount": 500}
    assert await handler.aresolve(held.pending_id, approve(), by="alice")
    await pa.resume(
        agent, requests, first.all_messages(), handler=handler, actor="alice", approvals=rules
    )
    assert paid == [5, 500]


async def test_a_caller_cut_while_people_decide_leaves_their_requests_open(
    handler: HumanInputHandler, tmp_path: Path
) -> None:
    """A ``results_for`` or ``resume`` that gives up waiting (a client's timeout, a worker
    shutting down), here in another process on a durable store, withdrew the person's
    request, and the run went on as refused; the request stays open, and the next caller
    gets the person's decision."""
    from roomkit.models.pending_input import PendingInputStatus
    from roomkit.stores.sqlite import SQLiteStore

    sent: list[str] = []
    agent = build(pa.deferred_handler(handler, wait=False, actor="alice"), ["send"], sent)
    first = await agent.run("go")
    requests, history = first.output, first.all_messages()
    (part,) = requests.approvals
    held = requests.metadata[part.tool_call_id]["roomkit"]["pending_id"]
    other = SQLiteStore(tmp_path / "requests.db") if handler.durable else None
    waiter = handler if other is None else HumanInputHandler(store=other)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(pa.results_for(requests, handler=waiter), 0.5)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(pa.resume(agent, requests, history, handler=waiter), 0.5)
    request = await handler.get_request(held)
    assert request is not None
    assert request.status is PendingInputStatus.PENDING
    assert await handler.aresolve(held, approve(), by="alice")
    second = await pa.resume(agent, requests, history, handler=waiter)
    assert (sent, json.loads(second.output)) == (["a"], {"send": "sent to a"})
    if other is not None:
        await other.close()


@pytest.mark.parametrize("written", ['{"amount": NaN}', '{"amount": -Infinity}'])
async def test_arguments_only_python_reads_as_json_are_shown_as_written(
    handler: HumanInputHandler, desk: Desk, written: str
) -> None:
    """A model's NaN or infinity, which Pydantic AI takes for a float, made the run fail at
    its request, telling the caller to send a finite number; the person is shown the text
    the model wrote, and decides, waiting or on a resume."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages: list[Any], info: Any) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("pay", written, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    def paying(handle: Any) -> Agent[None, Any]:
        agent: Agent[None, Any] = Agent(
            FunctionModel(model),
            output_type=[str, DeferredToolRequests],
            capabilities=[HandleDeferredToolCalls(handler=handle)],
        )

        @agent.tool_plain(requires_approval=True)
        def pay(amount: float) -> str:
            return f"paid {amount}"

        return agent

    running = asyncio.create_task(paying(pa.deferred_handler(handler, actor="alice")).run("pay"))
    held = await desk.next_of(running)
    assert held.arguments == {"arguments": written}
    assert await handler.aresolve(held.pending_id, reject("not that"), by="alice")
    assert (await running).output == "done"

    agent = paying(pa.deferred_handler(handler, wait=False, actor="alice"))
    first = await agent.run("pay")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    pending_id = requests.metadata["c1"]["roomkit"]["pending_id"]
    assert (await handler.get_request(pending_id)).arguments == {"arguments": written}  # type: ignore[union-attr]
    assert await handler.aresolve(pending_id, approve(), by="alice")
    second = await pa.resume(agent, requests, first.all_messages(), handler=handler)
    assert second.output == "done"


async def test_results_for_what_is_no_deferred_request_says_what_to_pass() -> None:
    """The run's result, or the text of a run that ended without deferring, failed with a
    bare ``AttributeError``."""
    handler = HumanInputHandler()
    agent = build(pa.deferred_handler(handler, wait=False), ["send"], [])
    first = await agent.run("go")
    for given in (first, "done", None):
        with pytest.raises(TypeError, match=r"DeferredToolRequests.*result\.output.*got "):
            await pa.results_for(given, handler=handler)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"DeferredToolRequests.*result\.output.*got "):
            await pa.resume(agent, given, first.all_messages(), handler=handler)  # type: ignore[arg-type]
    assert [request.status.value for request in await handler.list_pending()] == ["pending"]
