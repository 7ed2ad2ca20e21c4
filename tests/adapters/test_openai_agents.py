"""The OpenAI Agents SDK's tool approvals answered through roomkit, on its ScriptedModel."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, function_tool, set_tracing_disabled
from agents.items import ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call
from tests.adapters.conftest import Desk
from tests.forked_processes import ROOT

from roomkit.adapters import openai_agents as oa
from roomkit.core.exceptions import InvalidAnswerError
from roomkit.tools.approvals import Approval, approve, edit, reject, respond
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, remind

"""The checkout: where the processes the tests start run."""


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def build(sent: list[str], calls: int = 1) -> Agent[Any]:
    """An agent whose scripted model calls ``send`` (held for approval) ``calls`` times."""

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    steps: list[Any] = [
        [function_call("send", {"to": f"bob{n}"}, call_id=f"call-{n}")] for n in range(calls)
    ]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    return Agent(name="mailer", model=model, tools=[send])


def outputs(result: Any) -> list[Any]:
    return [item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)]


async def test_run_waits_inline_for_an_approval(handler: HumanInputHandler, desk: Desk) -> None:
    sent: list[str] = []
    running = asyncio.create_task(
        oa.run(build(sent), "go", handler=handler, run_key="r-1", actor="alice")
    )
    held = await desk.next()
    assert (held.kind, held.tool_name, held.arguments) == ("approval", "send", {"to": "bob0"})
    assert await handler.aresolve(held.pending_id, approve(), by="alice")
    result = await running
    assert sent == ["bob0"]
    assert result.final_output == "done"


async def test_a_rejection_reaches_the_model_and_edit_or_respond_are_refused(
    handler: HumanInputHandler, desk: Desk
) -> None:
    sent: list[str] = []
    running = asyncio.create_task(
        oa.run(build(sent), "go", handler=handler, run_key="r-1", actor="alice")
    )
    held = await desk.next()
    for text in (edit({"to": "carol"}), respond("done")):
        with pytest.raises(InvalidAnswerError, match="approve, reject only"):
            await handler.aresolve(held.pending_id, text, by="alice")
    assert await handler.aresolve(held.pending_id, reject("not bob"), by="alice")
    result = await running
    assert sent == []
    assert outputs(result) == ["not bob"]


async def test_an_approval_nobody_decides_is_rejected_as_expired(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    rules = {"send": Approval(timeout=0.05)}
    result = await oa.run(build(sent), "go", handler=handler, run_key="r-1", approvals=rules)
    assert sent == []
    assert "expired" in outputs(result)[0]


async def test_start_keeps_the_state_and_resume_continues_it_once(
    handler: HumanInputHandler,
) -> None:
    """Durable: two pauses in one run; the state lives in roomkit's store; two resumers at
    once continue each pause once; a later resume finds nothing to do."""
    sent: list[str] = []
    agent = build(sent, calls=2)
    (first,) = await oa.start(agent, "go", handler=handler, run_key="r-2", actor="alice")
    assert await oa.resume(agent, "r-2", handler=handler, actor="alice") == [first]
    assert await handler.aresolve(first, approve(), by="alice")
    both = await asyncio.gather(
        oa.resume(agent, "r-2", handler=handler, actor="alice"),
        oa.resume(agent, "r-2", handler=handler, actor="alice"),
    )
    (second,) = [ids for ids in both if ids]
    assert sent == ["bob0"]
    assert await handler.aresolve(second[0], reject("enough"), by="alice")
    assert await oa.resume(agent, "r-2", handler=handler, actor="alice") == []
    assert await oa.resume(agent, "r-2", handler=handler, actor="alice") == []
    assert sent == ["bob0"]


async def test_resume_of_an_unknown_run_says_so(handler: HumanInputHandler) -> None:
    with pytest.raises(ValueError, match="no run paused under run_key 'nope'"):
        await oa.resume(build([]), "nope", handler=handler)
    assert await handler.list_pending() == []


async def test_a_resume_under_another_actor_or_store_says_what_to_pass(
    handler: HumanInputHandler,
) -> None:
    """It was told to start the run, which would run the model again and ask people twice."""
    (pending_id,) = await oa.start(build([]), "go", handler=handler, run_key="r", actor="alice")
    says = r"pass resume\(\) the handler on the store start\(\) kept the run in, and the actor"
    with pytest.raises(ValueError, match=rf"actor 'bob' and room ''.*{says}"):
        await oa.resume(build([]), "r", handler=handler, actor="bob")
    with pytest.raises(ValueError, match=says):
        await oa.resume(build([]), "r", handler=HumanInputHandler(), actor="alice")
    assert [request.pending_id for request in await handler.list_pending()] == [pending_id]


async def test_a_run_resumed_on_another_agent_says_which_and_changes_nothing(
    handler: HumanInputHandler,
) -> None:
    sent: list[str] = []
    (pending_id,) = await oa.start(build(sent), "go", handler=handler, run_key="r-x")
    assert await handler.aresolve(pending_id, approve())
    other = Agent(name="other", model=ScriptedModel([[assistant_message("hi")]]))
    with pytest.raises(ValueError, match=r"run_key 'r-x' does not load on agent 'other'"):
        await oa.resume(other, "r-x", handler=handler)
    assert await oa.resume(build(sent), "r-x", handler=handler) == []
    assert sent == ["bob0"]


async def test_the_desk_takes_a_listed_approver_and_refuses_another() -> None:
    from tests.desk.desk_harness import World, bearer

    world = World()
    await world.room("ops", "alice", "bob")
    sent: list[str] = []
    agent = build(sent)
    rules = {"send": Approval(approvers=["bob"])}
    options: dict[str, Any] = {"handler": world.handler, "approvals": rules, "room": "ops"}
    (held,) = await oa.start(agent, "go", run_key="r-3", **options)
    async with world.client() as client:
        url = f"/api/requests/{held}/answer"
        refused = await client.post(url, json={"decision": "approve"}, headers=bearer("alice"))
        assert refused.status_code in (403, 404), refused.text
        taken = await client.post(url, json={"decision": "approve"}, headers=bearer("bob"))
        assert taken.status_code == 200, taken.text
    assert await oa.resume(agent, "r-3", **options) == []
    assert sent == ["bob0"]


async def test_a_new_process_resumes_from_the_state_kept_in_the_store(tmp_path: Path) -> None:
    """The RunState survives the process: a new store object, a new agent, the same file;
    a resumer long after the first one's lease finds nothing to do."""
    from roomkit.stores.sqlite import SQLiteStore

    sent: list[str] = []
    store = SQLiteStore(tmp_path / "runs.db")
    first = HumanInputHandler(store=store)
    (held,) = await oa.start(build(sent), "go", handler=first, run_key="r-4", actor="alice")
    assert await first.aresolve(held, approve(), by="alice")
    await store.close()
    again = SQLiteStore(tmp_path / "runs.db")
    try:
        later = HumanInputHandler(store=again)
        assert await oa.resume(build(sent), "r-4", handler=later, actor="alice") == []
        assert await oa.resume(build(sent), "r-4", handler=later, actor="alice") == []
    finally:
        await again.close()
    # Long after the resumer's lease: the run moved on, nothing runs again.
    lapsed = SQLiteStore(tmp_path / "runs.db", clock=lambda: time.time() + 3600)
    try:
        latest = HumanInputHandler(store=lapsed)
        assert await oa.resume(build(sent), "r-4", handler=latest, actor="alice") == []
    finally:
        await lapsed.close()
    assert sent == ["bob0"]


async def test_a_resumer_killed_mid_resume_is_replaced_and_the_run_resumes_once(
    tmp_path: Path,
) -> None:
    """SIGKILL after the settle, inside the resume (the approved tool running): the dead
    resumer's claim holds the run until its lease lapses (on the store's clock); then, of two
    resumers at once, one resumes it, once."""
    import signal

    from tests.adapters import framework_resumers
    from tests.adapters.framework_resumers import RUN_KEY, openai_agent
    from tests.forked_processes import start as start_peer

    from roomkit.stores.sqlite import SQLiteStore

    ran = tmp_path / "ran.txt"
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    agent = openai_agent(ran, die=False, resumed=False)
    (held,) = await oa.start(agent, "go", handler=handler, run_key=RUN_KEY)
    assert await handler.aresolve(held, approve(), by="alice")
    child = await start_peer(framework_resumers.main, ROOT, "openai_agents", str(tmp_path))
    assert await child.wait() == -signal.SIGKILL
    resumed = openai_agent(ran, die=False, resumed=True)
    assert await oa.resume(resumed, RUN_KEY, handler=handler) == []
    assert not ran.exists()  # the dead resumer's claim still holds
    later = SQLiteStore(tmp_path / "requests.db", clock=lambda: time.time() + 301)
    both = await asyncio.gather(
        oa.resume(resumed, RUN_KEY, handler=HumanInputHandler(store=later)),
        oa.resume(
            openai_agent(ran, die=False, resumed=True),
            RUN_KEY,
            handler=HumanInputHandler(store=later),
        ),
    )
    assert both == [[], []]
    assert await oa.resume(resumed, RUN_KEY, handler=HumanInputHandler(store=later)) == []
    await later.close()
    await store.close()
    assert ran.read_text() == "ran\n"


async def test_an_approval_whose_rule_approves_on_expiry_runs_the_call(
    handler: HumanInputHandler, desk: Desk
) -> None:
    """Nobody decides: the rule's on-expiry approve runs the call; the ladder's reminder is
    recorded with the request."""
    sent: list[str] = []
    rules = {"send": Approval(timeout=0.05, on_expiry="approve")}
    result = await oa.run(
        build(sent),
        "go",
        handler=handler,
        run_key="r-5",
        approvals=rules,
        ladder=Ladder(remind(0.01)),
    )
    assert sent == ["bob0"]
    assert outputs(result) == ["sent to bob0"]
    held = await desk.next()
    assert [item.body["job"] for item in await handler.outbox.items_for(held.pending_id)] == [
        "remind"
    ]


async def test_a_run_key_started_again_for_another_call_is_refused(
    handler: HumanInputHandler,
) -> None:
    """A retried job whose model now calls something else: the first call's approval must
    never let the second run."""
    sent: list[str] = []

    def agent(to: str, call_id: str) -> Agent[Any]:
        @function_tool(needs_approval=True)
        def send(to: str) -> str:
            """Send a message."""
            sent.append(to)
            return f"sent to {to}"

        model = ScriptedModel(
            [[function_call("send", {"to": to}, call_id=call_id)], [assistant_message("done")]]
        )
        return Agent(name="mailer", model=model, tools=[send])

    (first,) = await oa.start(agent("bob", "call-1"), "go", handler=handler, run_key="job-7")
    # The run kept under the key is re-attached to: the model is not asked again.
    assert await oa.start(agent("mallory", "call-2"), "go", handler=handler, run_key="job-7") == [
        first
    ]
    # A call id that spells an anchor's place names no anchor.
    (other,) = await oa.start(agent("carol", "g0"), "go", handler=handler, run_key="job-8")
    assert other != first
    assert [r.arguments for r in await handler.list_pending()] == [{"to": "bob"}, {"to": "carol"}]
    assert sent == []


async def test_start_run_again_after_a_crash_asks_nobody_twice(
    handler: HumanInputHandler,
) -> None:
    """A retried start re-attaches to the run its key keeps, though a model would mint new
    call ids; once settled it goes on; once finished, a start under its key says so."""
    sent: list[str] = []

    def agent(*call_ids: str) -> Agent[Any]:
        @function_tool(needs_approval=True)
        def send(to: str) -> str:
            """Send a message."""
            sent.append(to)
            return f"sent to {to}"

        pairs = zip(("bob", "carol"), call_ids, strict=True)
        calls = [function_call("send", {"to": to}, call_id=call_id) for to, call_id in pairs]
        model = ScriptedModel([calls, [assistant_message("done")]])
        return Agent(name="mailer", model=model, tools=[send])

    first = agent("c1", "c2")
    ids = await oa.start(first, "go", handler=handler, run_key="job-9")
    assert len(ids) == 2
    assert await oa.start(agent("d1", "d2"), "go", handler=handler, run_key="job-9") == ids
    assert sorted(r.pending_id for r in await handler.list_pending()) == sorted(ids)
    for pending_id in ids:
        assert await handler.aresolve(pending_id, approve())
    assert await oa.start(first, "go", handler=handler, run_key="job-9") == []
    assert sent == ["bob", "carol"]
    assert await oa.final_output("job-9", handler=handler) == "done"
    with pytest.raises(ValueError, match=r"has finished.*new run_key"):
        await oa.start(first, "go", handler=handler, run_key="job-9")
    assert sent == ["bob", "carol"]


async def test_a_run_goes_on_past_as_many_pauses_as_one_read_covers(
    handler: HumanInputHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger is read for its pauses a batch at a time (256 a batch; 2 here): a run
    with more is read in as many batches, never taken for finished."""
    from roomkit.adapters.openai_agents import _saved

    monkeypatch.setattr(_saved, "GENERATIONS", 2)
    sent: list[str] = []
    agent = build(sent, calls=5)
    ids = await oa.start(agent, "go", handler=handler, run_key="long", actor="alice")
    while ids:
        for pending_id in ids:
            assert await handler.aresolve(pending_id, approve(), by="alice")
        ids = await oa.resume(agent, "long", handler=handler, actor="alice")
    assert sent == [f"bob{n}" for n in range(5)]


async def test_start_runs_at_once_a_call_its_rule_leaves_to_no_one(
    handler: HumanInputHandler,
) -> None:
    """``Approval(when=...)`` holds for ``start`` as for ``run``: a payment the rule leaves
    to no one runs, the run goes on, and only the large one is asked about."""
    paid: list[int] = []

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    model = ScriptedModel(
        [
            [function_call("pay", {"amount": 5}, call_id="small")],
            [function_call("pay", {"amount": 500}, call_id="large")],
            [assistant_message("done")],
        ]
    )
    agent: Agent[Any] = Agent(name="payer", model=model, tools=[pay])
    rules = {"pay": Approval(when=lambda name, arguments: arguments["amount"] > 100)}
    ids = await oa.start(agent, "pay", handler=handler, run_key="r-when", approvals=rules)
    assert paid == [5]
    [held] = await handler.list_pending()
    assert (held.pending_id, held.arguments) == (ids[0], {"amount": 500})
    assert await handler.aresolve(held.pending_id, approve(), by="alice")
    assert await oa.resume(agent, "r-when", handler=handler, approvals=rules) == []
    assert paid == [5, 500]


async def test_start_asks_only_about_the_calls_of_a_turn_its_rule_holds(
    handler: HumanInputHandler,
) -> None:
    """One turn, two payments: the small one the rule leaves to no one is approved without a
    request, the large one is asked about; the resume runs both, as ``run`` would."""
    paid: list[int] = []

    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    turn = [
        function_call("pay", {"amount": 5}, call_id="small"),
        function_call("pay", {"amount": 500}, call_id="large"),
    ]
    model = ScriptedModel([turn, [assistant_message("done")]])
    agent: Agent[Any] = Agent(name="payer", model=model, tools=[pay])
    rules = {"pay": Approval(when=lambda name, arguments: arguments["amount"] > 100)}
    ids = await oa.start(agent, "pay", handler=handler, run_key="r-mixed", approvals=rules)
    [held] = await handler.list_pending()
    assert (ids, held.arguments) == ([held.pending_id], {"amount": 500})
    assert await oa.resume(agent, "r-mixed", handler=handler, approvals=rules) == ids
    assert paid == []
    assert await handler.aresolve(held.pending_id, approve(), by="alice")
    assert await oa.resume(agent, "r-mixed", handler=handler, approvals=rules) == []
    assert sorted(paid) == [5, 500]


async def test_a_resumer_killed_before_the_next_pause_is_kept_leaves_the_run_resumable(
    tmp_path: Path,
) -> None:
    """SIGKILL after the run went on past its pause and before its next pause was kept: the
    dead resumer's claim lapses with its lease and the next resumer continues the run from
    the pause kept last (the approved call runs again), up to its next pause."""
    import signal

    from tests.adapters import framework_resumers
    from tests.adapters.framework_resumers import RUN_KEY, openai_agent_sending
    from tests.forked_processes import start as start_peer

    from roomkit.stores.sqlite import SQLiteStore

    ran = tmp_path / "ran.txt"
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    (held,) = await oa.start(
        openai_agent_sending(ran, "bob", "carol"), "go", handler=handler, run_key=RUN_KEY
    )
    assert await handler.aresolve(held, approve(), by="alice")
    child = await start_peer(framework_resumers.main, ROOT, "openai_agents_next", str(tmp_path))
    assert await child.wait() == -signal.SIGKILL
    assert ran.read_text() == "bob\n"
    resumed = openai_agent_sending(ran, "carol")
    assert await oa.resume(resumed, RUN_KEY, handler=handler) == []  # the lease still holds
    later = SQLiteStore(tmp_path / "requests.db", clock=lambda: time.time() + 301)
    try:
        after = HumanInputHandler(store=later)
        (carol,) = await oa.resume(resumed, RUN_KEY, handler=after)
        assert ran.read_text() == "bob\nbob\n"
        request = await after.get_request(carol)
        assert request is not None
        assert request.arguments == {"to": "carol"}
        assert await after.aresolve(carol, approve(), by="alice")
        assert await oa.resume(openai_agent_sending(ran), RUN_KEY, handler=after) == []
    finally:
        await later.close()
        await store.close()
    assert ran.read_text() == "bob\nbob\ncarol\n"


async def test_the_expiry_the_model_reads_names_the_requests_own_deadline(
    tmp_path: Path,
) -> None:
    """A resumer with another timeout than the start's: the model reads how long the
    person had, from the request's own deadline. The deadline is stamped a moment after the
    request is made (here 40 ms, as on a busy machine): the model still reads the timeout
    asked, not the timeout and that moment."""
    from roomkit.stores.sqlite import SQLiteStore

    sent: list[str] = []
    agent = build(sent)
    store = SQLiteStore(tmp_path / "requests.db", clock=lambda: time.time() + 0.04)
    first = HumanInputHandler(store=store)
    await oa.start(agent, "go", handler=first, run_key="r-late", actor="alice", timeout=30)
    later = SQLiteStore(tmp_path / "requests.db", clock=lambda: time.time() + 60)
    try:
        handler = HumanInputHandler(store=later)
        assert await oa.resume(agent, "r-late", handler=handler, actor="alice") == []
    finally:
        await later.close()
        await store.close()
    assert sent == []
    said = agent.model.last_call.input  # type: ignore[attr-defined]
    (output,) = [i["output"] for i in said if isinstance(i, dict) and "output" in i]
    assert "within 30s" in output


@pytest.mark.parametrize("written", ['{"to": NaN}', '{"to": -Infinity}', '{"to": 1e999}'])
async def test_arguments_only_python_reads_as_json_are_shown_as_written(
    handler: HumanInputHandler, desk: Desk, written: str
) -> None:
    """A model's NaN or infinity made the run fail at its request, with a message telling
    the caller to send a finite number; the person is shown the text the model wrote, and
    decides."""

    @function_tool(needs_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    steps = [[function_call("send", written, call_id="c1")], [assistant_message("done")]]
    agent = Agent(name="mailer", model=ScriptedModel(steps), tools=[send])
    running = asyncio.create_task(oa.run(agent, "go", handler=handler, run_key="r-odd"))
    held = await desk.next_of(running)
    assert held.arguments == {"arguments": written}
    assert await handler.aresolve(held.pending_id, reject("not that"), by="alice")
    assert outputs(await running) == ["not that"]
