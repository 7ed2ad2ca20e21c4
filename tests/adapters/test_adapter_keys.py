"""The adapters' request keys name one pause: two runs whose names run together never share
a request (and so never a person's decision), on each framework's own test doubles; and a
name no store can keep is refused before anything runs."""

from __future__ import annotations

import asyncio
import hashlib
import os
import warnings
from typing import Any, TypedDict
from urllib.parse import unquote

import pytest
from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from hypothesis import given
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import NodeInterrupt
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from tests.adapters.conftest import Desk
from tests.servers.stores import open_store

from roomkit.adapters import langgraph as lg
from roomkit.adapters import openai_agents as oa
from roomkit.adapters import pydantic_ai as pa
from roomkit.adapters._keys import LONGEST, kept_key, pause_key
from roomkit.core.exceptions import InvalidTextError
from roomkit.models.json_limits import MAX_KEY_CHARS, MAX_SCOPED_KEY_BYTES
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.approvals import approve, reject
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.checks import scoped_key_bytes

LONE = "r\ud800"
"""A name with a lone surrogate, which UTF-8 cannot encode."""

LONG_CALL = "call_" + "x" * MAX_KEY_CHARS
"""A tool call id a model chose, longer than a request's ``tool_call_id`` may be."""

LONG_CALL_KEPT = "sha256:" + hashlib.sha256(LONG_CALL.encode()).hexdigest()
"""The id a request keeps for it."""

ESCAPED = "\x01" * 350
"""A name under :data:`LONGEST` characters whose key, with its scope, is over what a store's
index of keys holds: JSON writes each control character in six bytes."""


@given(st.lists(st.text(max_size=40), max_size=4))
def test_a_key_splits_back_into_its_parts(parts: list[str]) -> None:
    key = pause_key("oa", *parts)
    if len(key) <= LONGEST:
        assert [unquote(part) for part in key.split(":")[1:]] == parts


def test_a_long_key_is_kept_by_a_digest_no_short_key_gives() -> None:
    key = pause_key("lg", "t" * 300, ":" * 100)
    assert key.startswith("lg:%sha256:")
    assert len(key) < LONGEST
    assert pause_key("lg", "%sha256", key.rsplit(":", 1)[1]) != key


@given(
    st.text(max_size=60).map(lambda part: part * 6),
    st.text(max_size=256),
    st.one_of(st.none(), st.text(min_size=1, max_size=256)),
)
def test_a_key_that_fits_its_scope_is_kept_as_it_is_and_one_that_does_not_by_its_digest(
    part: str, room: str, actor: str | None
) -> None:
    key = pause_key("lg", part, "c")
    kept = kept_key(key, room, lg.CHANNEL, actor)
    if scoped_key_bytes(room, lg.CHANNEL, actor, key) <= MAX_SCOPED_KEY_BYTES:
        assert kept == key
    else:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        assert kept == f"lg:%sha256:{digest}"


def test_a_call_id_is_kept_as_it_is_up_to_the_limit_and_by_its_digest_past_it() -> None:
    from roomkit.adapters._keys import call_id_of

    assert call_id_of("call_1") == "call_1"
    assert call_id_of("c" * MAX_KEY_CHARS) == "c" * MAX_KEY_CHARS
    assert call_id_of(LONG_CALL) == LONG_CALL_KEPT


# OpenAI Agents SDK


def agents_run(sent: list[str], call_id: str) -> Agent[Any]:
    """An agent whose scripted model calls ``send`` (held) once, with id ``call_id``."""
    set_tracing_disabled(True)

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    model = ScriptedModel(
        [[function_call("send", {"to": "bob"}, call_id=call_id)], [assistant_message("done")]]
    )
    return Agent(name="mailer", model=model, tools=[send])


async def test_agents_runs_whose_keys_and_call_ids_run_together_are_asked_apart(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """Run ``a:b`` calling ``c`` and run ``a`` calling ``b:c``: the second run's call is
    asked about, never run on the approval given for the first's."""
    sent: list[str] = []
    first = asyncio.create_task(
        oa.run(agents_run(sent, "c"), "go", handler=handler, run_key="a:b", actor="alice")
    )
    held = await desk.next()
    assert await handler.aresolve(held.pending_id, approve(), by="alice")
    await first
    assert sent == ["bob"]
    second = asyncio.create_task(
        oa.run(agents_run(sent, "b:c"), "go", handler=handler, run_key="a", actor="alice")
    )
    asked = asyncio.create_task(desk.next())
    done, _ = await asyncio.wait({second, asked}, return_when=asyncio.FIRST_COMPLETED)
    if asked not in done:
        asked.cancel()
    assert asked in done, "the second run ran its call on the first run's approval"
    assert asked.result().pending_id != held.pending_id
    assert await handler.aresolve(asked.result().pending_id, reject("no"), by="alice")
    await second
    assert sent == ["bob"]


async def test_agents_refuse_a_run_key_no_store_keeps_before_the_model_runs(
    handler: HumanInputHandler,
) -> None:
    for entry in (oa.run, oa.start):
        agent = agents_run([], "c")
        with pytest.raises(InvalidTextError) as refused:
            await entry(agent, "go", handler=handler, run_key=LONE)
        assert isinstance(agent.model, ScriptedModel)
        assert agent.model.calls == (), "the model ran before the run_key was refused"
        assert "run_key cannot be stored" in str(refused.value)
    assert await handler.list_pending() == []


async def test_agents_run_a_call_whose_id_is_longer_than_a_request_keeps(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """A call id the model made over ``MAX_KEY_CHARS`` failed the run, telling the caller to
    pass a shorter one; the request keeps its digest, and the run goes on."""
    sent: list[str] = []
    running = asyncio.create_task(
        oa.run(agents_run(sent, LONG_CALL), "go", handler=handler, run_key="r-1", actor="alice")
    )
    held = await desk.next()
    request = await handler.get_request(held.pending_id)
    assert request is not None
    assert request.tool_call_id == LONG_CALL_KEPT
    assert await handler.aresolve(held.pending_id, approve(), by="alice")
    assert (await running).final_output == "done"
    assert sent == ["bob"]


async def test_agents_start_and_resume_a_call_whose_id_is_long(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    agent = agents_run(sent, LONG_CALL)
    (held,) = await oa.start(agent, "go", handler=handler, run_key="r-2", actor="alice")
    assert await oa.start(agent, "go", handler=handler, run_key="r-2", actor="alice") == [held]
    assert await handler.aresolve(held, approve(), by="alice")
    assert await oa.resume(agent, "r-2", handler=handler, actor="alice") == []
    assert sent == ["bob"]


async def test_agents_start_and_resume_a_run_whose_key_is_longer_than_a_history_entry(
    handler: HumanInputHandler,
) -> None:
    """Each ``saved`` entry of the kept state named the run by its whole key: a run key of a
    hundred thousand characters failed the start once its model had run, over a history
    entry's size; the entries name it by its digest, and the run is kept and resumed."""
    sent: list[str] = []
    agent, run_key = agents_run(sent, "c1"), "k" * 100_000
    (held,) = await oa.start(agent, "go", handler=handler, run_key=run_key, actor="alice")
    assert await handler.aresolve(held, approve(), by="alice")
    assert await oa.resume(agent, run_key, handler=handler, actor="alice") == []
    assert await oa.final_output(run_key, handler=handler, actor="alice") == "done"
    assert sent == ["bob"]


# Pydantic AI


def pydantic_run(
    handler: HumanInputHandler, sent: list[str], call_id: str
) -> PydanticAgent[None, Any]:
    """An agent whose function model calls ``send`` (held) with id ``call_id``, then ends."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("send", {"to": "bob"}, call_id)])
        return ModelResponse(parts=[TextPart("done")])

    handle = pa.deferred_handler(handler, wait=False, actor="alice")
    agent: PydanticAgent[None, Any] = PydanticAgent(
        FunctionModel(model),
        output_type=[str, DeferredToolRequests],
        capabilities=[HandleDeferredToolCalls(handler=handle)],
    )

    @agent.tool_plain(requires_approval=True)
    def send(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    return agent


async def test_pydantic_runs_whose_ids_and_call_ids_run_together_are_asked_apart(
    handler: HumanInputHandler,
) -> None:
    """Run ``a:b`` calling ``c`` and run ``a`` calling ``b:c``: the second run's call gets
    a request of its own, not the one a person approved for the first's."""
    sent: list[str] = []
    first = await pydantic_run(handler, sent, "c").run("go", run_id="a:b")
    assert isinstance(first.output, DeferredToolRequests)
    approved = first.output.metadata["c"][pa.METADATA_KEY]["pending_id"]
    assert await handler.aresolve(approved, approve(), by="alice")
    second = await pydantic_run(handler, sent, "b:c").run("go", run_id="a")
    assert isinstance(second.output, DeferredToolRequests)
    asked = second.output.metadata["b:c"][pa.METADATA_KEY]["pending_id"]
    assert asked != approved
    request = await handler.get_request(asked)
    assert request is not None
    assert request.status is PendingInputStatus.PENDING
    assert sent == []


async def test_pydantic_runs_a_call_whose_id_is_longer_than_a_request_keeps(
    handler: HumanInputHandler,
) -> None:
    """A call id the model made over ``MAX_KEY_CHARS`` failed the run, telling the caller to
    pass a shorter one; the request keeps its digest, and the run is resumed by the id."""
    sent: list[str] = []
    agent = pydantic_run(handler, sent, LONG_CALL)
    first = await agent.run("go", run_id="r-1")
    assert isinstance(first.output, DeferredToolRequests)
    pending_id = first.output.metadata[LONG_CALL][pa.METADATA_KEY]["pending_id"]
    request = await handler.get_request(pending_id)
    assert request is not None
    assert request.tool_call_id == LONG_CALL_KEPT
    assert await handler.aresolve(pending_id, approve(), by="alice")
    history = first.all_messages()
    resumed = await pa.resume(agent, first.output, history, handler=handler, actor="alice")
    assert resumed.output == "done"
    assert sent == ["bob"]


@pytest.mark.parametrize(("run_id", "call_id"), [("r-1", LONE), (LONE, "c")])
async def test_pydantic_asks_about_a_call_whose_ids_utf8_cannot_encode(
    handler: HumanInputHandler, run_id: str, call_id: str
) -> None:
    """A call id the model made, or a run id, holding a lone surrogate failed the run with a
    bare ``UnicodeEncodeError``; the request is keyed by the digest, and the run resumed."""
    sent: list[str] = []
    agent = pydantic_run(handler, sent, call_id)
    first = await agent.run("go", run_id=run_id)
    assert isinstance(first.output, DeferredToolRequests)
    pending_id = first.output.metadata[call_id][pa.METADATA_KEY]["pending_id"]
    request = await handler.get_request(pending_id)
    assert request is not None
    assert "pa:%sha256:" in request.key
    assert await handler.aresolve(pending_id, approve(), by="alice")
    history = first.all_messages()
    resumed = await pa.resume(agent, first.output, history, handler=handler, actor="alice")
    assert resumed.output == "done"
    assert sent == ["bob"]


async def test_pydantic_refuses_an_actor_no_store_keeps_before_any_run(
    handler: HumanInputHandler,
) -> None:
    with pytest.raises(InvalidTextError, match="actor cannot be stored"):
        pa.deferred_handler(handler, actor=LONE)


# LangGraph


class State(TypedDict, total=False):
    done: bool


def graph_raising(interrupt_id: str, ran: list[str]) -> Any:
    """A graph whose node holds a call with an interrupt of id ``interrupt_id`` on its
    first run (LangGraph's ``NodeInterrupt`` takes an id of the graph's choosing), and goes
    on when it runs again."""

    async def hold(state: State) -> State:
        ran.append(interrupt_id)
        if len(ran) == 1:
            value = {"type": "tool_approval", "name": "send", "args": {"to": "bob"}}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NodeInterrupt is deprecated, still raised
                raise NodeInterrupt(value, id=interrupt_id)
        return {"done": True}

    graph = StateGraph(State)
    graph.add_node("hold", hold)
    graph.add_edge(START, "hold")
    graph.add_edge("hold", END)
    return graph.compile(checkpointer=InMemorySaver())


async def test_langgraph_threads_whose_ids_and_interrupt_ids_run_together_are_asked_apart(
    handler: HumanInputHandler,
) -> None:
    """Thread ``a:b`` stopped at interrupt ``c`` and thread ``a`` at interrupt ``b:c``: the
    second is asked about, not resumed on the approval given for the first."""
    first: list[str] = []
    second: list[str] = []
    (approved,) = await lg.start(
        graph_raising("c", first), {}, {"configurable": {"thread_id": "a:b"}}, handler=handler
    )
    assert await handler.aresolve(approved, approve())
    asked = await lg.start(
        graph_raising("b:c", second), {}, {"configurable": {"thread_id": "a"}}, handler=handler
    )
    assert second == ["b:c"], "the second thread went on on the first thread's approval"
    assert len(asked) == 1
    assert asked[0] != approved


async def test_langgraph_asks_about_a_held_call_whose_id_is_long(
    handler: HumanInputHandler,
) -> None:
    def hold(state: State) -> State:
        value = {"type": "tool_approval", "tool_call_id": LONG_CALL, "name": "send", "args": {}}
        interrupt(value)
        return {"done": True}

    graph = StateGraph(State)
    graph.add_node("hold", hold)
    graph.add_edge(START, "hold")
    graph.add_edge("hold", END)
    app, thread = graph.compile(checkpointer=InMemorySaver()), {"configurable": {"thread_id": "t"}}
    (held,) = await lg.start(app, {}, thread, handler=handler)
    request = await handler.get_request(held)
    assert request is not None
    assert request.tool_call_id == LONG_CALL_KEPT
    assert await handler.aresolve(held, approve())
    assert await lg.resume(app, thread, handler=handler) == []
    assert (await app.aget_state(thread)).values == {"done": True}


async def test_langgraph_asks_on_a_thread_id_of_characters_json_escapes(
    handler: HumanInputHandler,
) -> None:
    """A thread id of 350 control characters made a key of 2,100 bytes with its scope, which
    every store refused at the thread's first request; its key is kept by its digest, and a
    start run again re-attaches to it."""
    app, thread = graph_raising("c", []), {"configurable": {"thread_id": ESCAPED}}
    (held,) = await lg.start(app, {}, thread, handler=handler, actor="alice")
    assert await lg.start(app, None, thread, handler=handler, actor="alice") == [held]
    request = await handler.get_request(held)
    assert request is not None
    assert request.key is not None
    assert "lg:%sha256:" in request.key
    assert await handler.aresolve(held, approve(), by="alice")
    assert await lg.resume(app, thread, handler=handler, actor="alice") == []
    assert (await app.aget_state(thread)).values == {"done": True}


async def test_pydantic_asks_in_a_run_whose_id_is_of_characters_json_escapes(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    agent = pydantic_run(handler, sent, "c")
    first = await agent.run("go", run_id=ESCAPED)
    assert isinstance(first.output, DeferredToolRequests)
    pending_id = first.output.metadata["c"][pa.METADATA_KEY]["pending_id"]
    assert await handler.aresolve(pending_id, approve(), by="alice")
    history = first.all_messages()
    resumed = await pa.resume(agent, first.output, history, handler=handler, actor="alice")
    assert resumed.output == "done"
    assert sent == ["bob"]


async def test_langgraph_refuses_a_thread_id_no_store_keeps_before_the_graph_runs(
    handler: HumanInputHandler,
) -> None:
    for entry in (lg.run, lg.start):
        ran: list[str] = []
        with pytest.raises(InvalidTextError) as refused:
            await entry(
                graph_raising("c", ran), {}, {"configurable": {"thread_id": LONE}}, handler=handler
            )
        assert ran == [], "the graph ran before the thread_id was refused"
        assert "thread_id cannot be stored" in str(refused.value)
    assert await handler.list_pending() == []


async def test_a_thread_id_past_the_index_limit_is_asked_on_postgresql(
    postgres_server: Any, postgres_schema: str
) -> None:
    """A long thread id (a caller's own, three thousand characters) makes a key PostgreSQL's
    index of keys takes: the thread is asked about, and re-attached to on a second look."""
    store = open_store(str(postgres_server.dsn), postgres_schema)
    handler = HumanInputHandler(store=store)
    try:
        thread = {"configurable": {"thread_id": os.urandom(1500).hex()}}
        graph = graph_raising("c", [])
        (asked,) = await lg.start(graph, {}, thread, handler=handler)
        assert await lg.resume(graph, thread, handler=handler) == [asked]
    finally:
        await store.close()


async def test_a_huge_run_key_or_thread_id_is_quoted_cut_short(handler: HumanInputHandler) -> None:
    """A key of a million characters made a message of a million characters."""
    huge = "k" * 1_000_000
    thread = {"configurable": {"thread_id": huge}}
    refusals = [
        (lambda: oa.resume(agents_run([], "c"), huge, handler=handler), "no run paused under"),
        (lambda: oa.final_output(huge, handler=handler), "no run under run_key"),
        (lambda: lg.resume(graph_raising("c", []), thread, handler=handler), "holds no thread"),
    ]
    for call, says in refusals:
        with pytest.raises(ValueError, match=f"{says}.* 'kkk") as refused:
            await call()
        assert len(str(refused.value)) < 1_000, str(refused.value)[:300]
