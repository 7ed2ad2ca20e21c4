"""LangGraph interrupts answered through roomkit, inline and durable, on LangGraph's own savers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel, field_validator
from tests.adapters.conftest import Desk
from tests.forked_processes import ROOT

from roomkit.adapters import langgraph as lg
from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    InvalidAnswerError,
)
from roomkit.tools.approvals import Approval, approve, edit, reject, respond
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, default, remind

"""The checkout: where the processes the tests start run."""

ANSWER = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
SEND = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}


class State(TypedDict, total=False):
    topic: str
    colour: Any
    decision: Any


def build(saver: Any, ran: list[str]) -> Any:
    """A graph that asks a question with an answer schema, then holds a tool call."""

    def ask(state: State) -> State:
        answer = interrupt("Which colour?", response_schema=ANSWER)
        ran.append("ask")
        return {"colour": answer}

    def hold(state: State) -> State:
        decision = interrupt(
            {
                "type": "tool_approval",
                "tool_call_id": "call-1",
                "name": "send",
                "args": {"to": "bob"},
            }
        )
        ran.append("hold")
        return {"decision": decision}

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_node("hold", hold)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "hold")
    graph.add_edge("hold", END)
    return graph.compile(checkpointer=saver)


def config(thread: str = "t-1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (approve(), {"type": "approve"}),
        (
            edit({"to": "carol"}),
            {"type": "edit", "edited_action": {"name": "send", "args": {"to": "carol"}}},
        ),
        (reject("not bob"), {"type": "reject", "message": "not bob"}),
        (respond("sent by hand"), {"type": "respond", "message": "sent by hand"}),
    ],
    ids=["approve", "edit", "reject", "respond"],
)
async def test_run_waits_inline_for_the_answer_and_the_decision(
    handler: HumanInputHandler, desk: Desk, decision: str, expected: dict[str, Any]
) -> None:
    ran: list[str] = []
    graph = build(InMemorySaver(), ran)
    running = asyncio.create_task(
        lg.run(graph, {"topic": "x"}, config(), handler=handler, actor="alice")
    )
    question = await desk.next()
    assert (question.kind, question.arguments) == ("question", {"question": "Which colour?"})
    assert await handler.aresolve(question.pending_id, '{"colour": "red"}', by="alice")
    held = await desk.next()
    assert (held.kind, held.tool_name, held.arguments) == ("approval", "send", {"to": "bob"})
    assert held.approvers == ("alice",)
    assert await handler.aresolve(held.pending_id, decision, by="alice")
    final = await running
    assert final["colour"] == {"colour": "red"}
    assert final["decision"] == expected
    assert ran == ["ask", "hold"]


async def test_an_approval_nobody_decides_is_refused_as_expired(
    handler: HumanInputHandler, desk: Desk
) -> None:
    graph = build(InMemorySaver(), [])
    running = asyncio.create_task(
        lg.run(
            graph,
            {},
            config(),
            handler=handler,
            actor="alice",
            approvals={"send": Approval(timeout=0.05)},
        )
    )
    question = await desk.next()
    await handler.aresolve(question.pending_id, '{"colour": "red"}', by="alice")
    final = await running
    assert final["decision"]["type"] == "reject"
    assert "expired" in final["decision"]["message"]


async def test_a_question_nobody_answers_raises_and_the_thread_stays_paused(
    handler: HumanInputHandler,
) -> None:
    ran: list[str] = []
    graph = build(InMemorySaver(), ran)
    stays = r"thread 't-1' stays paused at interrupt '\w+': resume it with Command\(resume"
    with pytest.raises(HumanInputTimeoutError, match=stays):
        await lg.run(graph, {}, config(), handler=handler, timeout=0.05)
    assert ran == []
    assert (await graph.aget_state(config())).interrupts


async def test_a_refused_question_raises_naming_the_thread_and_how_to_go_on(
    handler: HumanInputHandler,
) -> None:
    """A graph's question carries no refusal: the resume says so, and where it stopped."""
    graph = build(InMemorySaver(), [])
    [asked] = await lg.start(graph, {}, config(), handler=handler, actor="alice")
    await handler.areject(asked, "I won't say", by="alice")
    refused = r"refused \(I won't say\); thread 't-1' stays paused at interrupt"
    with pytest.raises(HumanInputRejectedError, match=refused):
        await lg.resume(graph, config(), handler=handler, actor="alice")
    assert (await graph.aget_state(config())).interrupts


async def test_an_answer_breaking_the_schema_is_refused_and_nothing_resumes(
    handler: HumanInputHandler,
) -> None:
    ran: list[str] = []
    graph = build(InMemorySaver(), ran)
    (pending_id,) = await lg.start(graph, {}, config(), handler=handler, actor="alice")
    with pytest.raises(InvalidAnswerError):
        await handler.aresolve(pending_id, '{"colour": 7}', by="alice")
    assert await lg.resume(graph, config(), handler=handler, actor="alice") == [pending_id]
    assert ran == []


class Colour(BaseModel):
    """An answer type whose own validator takes more than its JSON Schema says."""

    name: str

    @field_validator("name")
    @classmethod
    def known(cls, name: str) -> str:
        if name not in ("red", "blue"):
            raise ValueError("not a colour of ours")
        return name


def typed_question(ran: list[str]) -> Any:
    """A graph asking one question typed by :class:`Colour`."""

    def ask(state: State) -> State:
        answer = interrupt("Which colour?", response_schema=Colour)
        ran.append("ask")
        return {"colour": answer}

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=InMemorySaver())


async def test_an_answer_the_types_validator_refuses_says_how_to_go_on(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """An answer the JSON Schema lets through but the type's validator refuses: run and
    resume raise InvalidAnswerError naming the thread, which stays paused, run by nobody."""
    ran: list[str] = []
    graph = typed_question(ran)

    async def person() -> None:
        assert await handler.aresolve((await desk.next()).pending_id, '{"name": "green"}')

    answering = asyncio.create_task(person())
    with pytest.raises(InvalidAnswerError, match=r"thread 't-1'.*not a colour of ours"):
        await lg.run(graph, {}, config(), handler=handler)
    await answering
    (pending_id,) = await lg.start(graph, {}, config("t-2"), handler=handler)
    assert await handler.aresolve(pending_id, '{"name": "green"}')
    for _ in range(2):
        with pytest.raises(InvalidAnswerError, match=r"Command\(resume=\.\.\.\) yourself"):
            await lg.resume(graph, config("t-2"), handler=handler)
    assert ran == []
    assert graph.get_state(config("t-2")).interrupts


async def test_start_and_resume_continue_the_thread_once(
    handler: HumanInputHandler, tmp_path: Path
) -> None:
    """Durable: the thread stops at each pause; a resume before the answer changes nothing;
    two resumers at once continue it once; a later resume finds nothing to do."""
    ran: list[str] = []
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        graph = build(saver, ran)
        (question,) = await lg.start(graph, {}, config(), handler=handler, actor="alice")
        assert await lg.resume(graph, config(), handler=handler, actor="alice") == [question]
        assert await handler.aresolve(question, '{"colour": "blue"}', by="alice")
        both = await asyncio.gather(
            lg.resume(graph, config(), handler=handler, actor="alice"),
            lg.resume(graph, config(), handler=handler, actor="alice"),
        )
        opened = [ids for ids in both if ids]
        assert len(opened) <= 1
        assert ran == ["ask"]
    # Another process: a new saver on the same file, the same store.
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        graph = build(saver, ran)
        (held,) = await lg.resume(graph, config(), handler=handler, actor="alice")
        assert opened in ([], [[held]])
        request = await handler.get_request(held)
        assert request is not None
        assert request.kind == "approval"
        assert await handler.aresolve(held, edit({"to": "carol"}), by="alice")
        assert await lg.resume(graph, config(), handler=handler, actor="alice") == []
        assert await lg.resume(graph, config(), handler=handler, actor="alice") == []
        state = await graph.aget_state(config())
    assert ran == ["ask", "hold"]
    assert state.values["decision"]["edited_action"]["args"] == {"to": "carol"}


async def test_resume_of_a_thread_never_started_says_so(handler: HumanInputHandler) -> None:
    """A thread the checkpointer does not hold is named, not taken for a finished one."""
    graph = build(InMemorySaver(), [])
    with pytest.raises(ValueError, match="holds no thread 'nope': start it with start"):
        await lg.resume(graph, config("nope"), handler=handler)
    assert await handler.list_pending() == []


async def test_start_re_attaches_to_the_requests_it_opened(handler: HumanInputHandler) -> None:
    """Running the boundary again (a crash before anyone answered) never asks twice."""
    graph = build(InMemorySaver(), [])
    first = await lg.start(graph, {}, config(), handler=handler, actor="alice")
    again = await lg.start(graph, None, config(), handler=handler, actor="alice")
    assert first == again
    # Run again as it was first run, with its input: the same requests, and no other.
    rerun = await lg.start(graph, {}, config(), handler=handler, actor="alice")
    assert rerun == first
    assert [r.pending_id for r in await handler.list_pending()] == first


async def test_the_desk_takes_a_listed_approver_and_refuses_another(tmp_path: Path) -> None:
    from tests.desk.desk_harness import World, bearer

    world = World()
    await world.room("ops", "alice", "bob")
    graph = build(InMemorySaver(), [])
    rules = {"send": Approval(approvers=["bob"])}
    start = await lg.start(
        graph, {}, config(), handler=world.handler, approvals=rules, actor="alice", room="ops"
    )
    await world.handler.aresolve(start[0], json.dumps({"colour": "red"}), by="alice")
    (held,) = await lg.resume(
        graph, config(), handler=world.handler, approvals=rules, actor="alice", room="ops"
    )
    async with world.client() as client:
        url = f"/api/requests/{held}/answer"
        refused = await client.post(url, json={"decision": "approve"}, headers=bearer("alice"))
        assert refused.status_code in (403, 404), refused.text
        taken = await client.post(url, json={"decision": "approve"}, headers=bearer("bob"))
        assert taken.status_code == 200, taken.text
    assert (
        await lg.resume(
            graph, config(), handler=world.handler, approvals=rules, actor="alice", room="ops"
        )
        == []
    )
    assert (await graph.aget_state(config())).values["decision"] == {"type": "approve"}


async def test_a_resumer_killed_mid_resume_is_replaced_and_the_thread_resumes_once(
    tmp_path: Path,
) -> None:
    """SIGKILL after the settle, inside the resume: the dead resumer's claim holds the
    thread until its lease lapses (on the store's clock), then a new resumer resumes it once."""
    import signal
    import time

    from tests.adapters import langgraph_resumer
    from tests.adapters.langgraph_resumer import CONFIG
    from tests.adapters.langgraph_resumer import build as build_crashing
    from tests.forked_processes import start as start_peer

    from roomkit.stores.sqlite import SQLiteStore

    ran = tmp_path / "ran.txt"
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        graph = build_crashing(saver, ran, die=False)
        (held,) = await lg.start(graph, {}, CONFIG, handler=handler)
        assert await handler.aresolve(held, approve(), by="alice")
    child = await start_peer(langgraph_resumer.main, ROOT, str(tmp_path))
    assert await child.wait() == -signal.SIGKILL
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        graph = build_crashing(saver, ran, die=False)
        assert await lg.resume(graph, CONFIG, handler=handler) == []
        assert not ran.exists()  # the dead resumer's claim still holds
        later = SQLiteStore(tmp_path / "requests.db", clock=lambda: time.time() + 301)
        assert await lg.resume(graph, CONFIG, handler=HumanInputHandler(store=later)) == []
        assert await lg.resume(graph, CONFIG, handler=HumanInputHandler(store=later)) == []
        state = await graph.aget_state(CONFIG)
    await later.close()
    await store.close()
    assert ran.read_text() == "ran\n"
    assert state.values["decision"] == {"type": "approve"}


async def test_a_call_the_rule_lets_through_is_approved_without_asking(
    handler: HumanInputHandler,
) -> None:
    graph = build(InMemorySaver(), [])
    rules = {"send": Approval(when=lambda name, arguments: arguments["to"] != "bob")}
    (question,) = await lg.start(graph, {}, config(), handler=handler, approvals=rules)
    await handler.aresolve(question, '{"colour": "red"}')
    assert await lg.resume(graph, config(), handler=handler, approvals=rules) == []
    assert (await graph.aget_state(config())).values["decision"] == {"type": "approve"}


async def test_the_ladders_default_answers_a_question_and_an_expired_approval_can_run(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """Inline: nobody answers; the question resumes with the ladder's default (parsed as its
    schema has it, put in the history), the approval with its rule's on-expiry approve;
    the ladder's reminder is recorded with each request."""
    ran: list[str] = []
    graph = build(InMemorySaver(), ran)
    final = await lg.run(
        graph,
        {},
        config(),
        handler=handler,
        timeout=0.05,
        approvals={"send": Approval(timeout=0.05, on_expiry="approve")},
        ladder=Ladder(remind(0.01), on_expiry=default('{"colour": "grey"}')),
    )
    assert final["colour"] == {"colour": "grey"}
    assert final["decision"] == {"type": "approve"}
    assert ran == ["ask", "hold"]
    question, held = await desk.next(), await desk.next()
    history = await handler.history(question.pending_id)
    assert [e["answer"] for e in history if e["type"] == "defaulted"] == ['{"colour": "grey"}']
    for pending_id in (question.pending_id, held.pending_id):
        jobs = [item.body["job"] for item in await handler.outbox.items_for(pending_id)]
        assert "remind" in jobs


async def test_a_durable_question_past_its_deadline_resumes_with_the_default(
    tmp_path: Path,
) -> None:
    """Durable: a resumer after the deadline (on the store's clock) expires the question and
    resumes the thread with the default, once."""
    import time

    from roomkit.stores.sqlite import SQLiteStore

    ran: list[str] = []
    ladder = Ladder(on_expiry=default('{"colour": "grey"}'))
    graph = build(InMemorySaver(), ran)
    store = SQLiteStore(tmp_path / "requests.db")
    (question,) = await lg.start(
        graph, {}, config(), handler=HumanInputHandler(store=store), ladder=ladder
    )
    later = SQLiteStore(tmp_path / "requests.db", clock=lambda: time.time() + 3601)
    handler = HumanInputHandler(store=later)
    try:
        (held,) = await lg.resume(graph, config(), handler=handler, ladder=ladder)
        assert ran == ["ask"]
        assert held != question
        assert (await graph.aget_state(config())).values["colour"] == {"colour": "grey"}
    finally:
        await later.close()
        await store.close()


async def test_a_default_breaking_the_questions_schema_is_refused_before_asking(
    handler: HumanInputHandler,
) -> None:
    graph = build(InMemorySaver(), [])
    ladder = Ladder(on_expiry=default("grey"))
    with pytest.raises(ValueError, match="does not fit the answer schema"):
        await lg.start(graph, {}, config(), handler=handler, ladder=ladder)
    assert await handler.list_pending() == []


async def test_a_question_taking_text_gets_the_persons_text(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """An answer schema that takes a string: the person's text is the answer, as typed."""

    def ask(state: State) -> State:
        return {"topic": interrupt("Which topic?", response_schema=str)}

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    compiled = graph.compile(checkpointer=InMemorySaver())
    running = asyncio.create_task(lg.run(compiled, {}, config(), handler=handler, actor="alice"))
    asked = await desk.next()
    assert await handler.aresolve(asked.pending_id, "42 bottles", by="alice")
    assert (await running)["topic"] == "42 bottles"


async def test_a_long_thread_id_is_claimed_and_resumed(handler: HumanInputHandler) -> None:
    """The resume's claim is named after the thread and its checkpoint, which can outgrow
    the ledger's names: it is claimed by a digest then, and the thread still resumes."""
    ran: list[str] = []
    graph = build(InMemorySaver(), ran)
    long = config("t" * 480)
    (question,) = await lg.start(graph, {}, long, handler=handler, actor="alice")
    assert await handler.aresolve(question, '{"colour": "blue"}', by="alice")
    (held,) = await lg.resume(graph, long, handler=handler, actor="alice")
    assert await handler.aresolve(held, approve(), by="alice")
    assert await lg.resume(graph, long, handler=handler, actor="alice") == []
    assert ran == ["ask", "hold"]


async def test_a_second_resumer_mid_step_leaves_the_thread_to_the_first(tmp_path: Path) -> None:
    """Two calls held in one step: while the first resumer is inside the step (one node's
    writes saved, so the thread shows one interrupt left), a second resumer finds the resume
    taken and returns ``[]``; every node runs once."""
    from tests.adapters import langgraph_resumer
    from tests.adapters.langgraph_resumer import CONFIG, build_parallel
    from tests.forked_processes import start as start_peer

    from roomkit.stores.sqlite import SQLiteStore

    ran = tmp_path / "ran.txt"
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        graph = build_parallel(saver, ran)
        held = await lg.start(graph, {}, CONFIG, handler=handler)
        assert len(held) == 2
        for pending_id in held:
            assert await handler.aresolve(pending_id, approve(), by="alice")
        child = await start_peer(langgraph_resumer.main, ROOT, str(tmp_path), "parallel")
        try:
            assert await asyncio.wait_for(child.stdout.readline(), 30) == b"inside\n"
            assert len((await graph.aget_state(CONFIG)).interrupts) == 1
            assert await lg.resume(graph, CONFIG, handler=handler) == []
            assert sorted(ran.read_text().split()) == ["a", "b"]
        finally:
            child.stdin.write(b"go\n")
            await child.stdin.drain()
            said, _ = await child.communicate()
        assert (said, child.returncode) == (b"[]\n", 0)
        assert await lg.resume(graph, CONFIG, handler=handler) == []
        state = await graph.aget_state(CONFIG)
    await store.close()
    assert sorted(ran.read_text().split()) == ["a", "b", "c"]
    assert sorted(state.values["log"]) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"type": "tool_approval", "name": "send", "args": ["bob"]}, r"the tool_approval value"),
        ({"type": "tool_approval", "name": "send", "args": "bob"}, r"the tool_approval value"),
        ({"type": "tool_approval", "args": {"to": "bob"}}, r"the tool_approval value"),
        ({"type": "tool_approval", "name": "send", "description": 5}, r"the tool_approval value"),
        ({"action_requests": [{"name": "send", "args": 5}]}, r"action_requests\[0\]"),
        ({"action_requests": ["send"]}, r"action_requests\[0\]"),
        ({"action_requests": [{"name": "send"}], "review_configs": ["send"]}, r"review_configs"),
    ],
)
async def test_a_held_call_of_no_known_shape_is_refused_naming_where_the_thread_stays(
    value: dict[str, Any], says: str
) -> None:
    """A hand-made approval whose args are no object, or whose parts are no dicts, failed
    inside the adapter with a bare ``TypeError`` or ``AttributeError``."""

    def hold(state: State) -> State:
        return {"decision": interrupt(value)}

    graph = StateGraph(State)
    graph.add_node("hold", hold)
    graph.add_edge(START, "hold")
    graph.add_edge("hold", END)
    app, handler = graph.compile(checkpointer=InMemorySaver()), HumanInputHandler()
    refused = f"^{says} of interrupt '[0-9a-f]+' on thread 't-odd' (is|are) no "
    for entry in (lg.run, lg.start):
        with pytest.raises(ValueError, match=refused) as caught:
            await entry(app, {}, config("t-odd"), handler=handler)
        assert "the thread stays stopped at this interrupt" in str(caught.value)
    assert await handler.list_pending() == []
    assert (await app.aget_state(config("t-odd"))).interrupts
