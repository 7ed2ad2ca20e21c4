"""A durable LangGraph thread keeps the actor, room and store its start ran under: starts at
the same moment under different ones, and resumes under others, are refused."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from tests.servers.stores import Ahead, fresh_prefix
from tests.tools.human_input.stores.redis_relay import Relay

from roomkit.adapters import langgraph as lg
from roomkit.adapters._resumes import LEASE
from roomkit.core.exceptions import RunUnderWayError
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

CONFIG = {"configurable": {"thread_id": "t-scope"}}
ANOTHER = r"langgraph.{}\(\): thread 't-scope' was started under another actor or room"


class State(TypedDict, total=False):
    colour: Any


class Gate(InMemorySaver):
    """LangGraph's saver, whose first ``reads`` reads wait until all of them arrived: the
    callers that made them go on from the same moment."""

    def __init__(self, reads: int) -> None:
        super().__init__()
        self.reads = reads
        self.arrived = asyncio.Event()

    async def aget_tuple(self, config: Any) -> Any:
        if self.reads:
            self.reads -= 1
            if not self.reads:
                self.arrived.set()
            await self.arrived.wait()
        return await super().aget_tuple(config)


def asking(saver: Any) -> Any:
    """A graph whose one node asks a question."""

    def node(state: State) -> State:
        return {"colour": interrupt("Which colour?")}

    graph = StateGraph(State).add_node("node", node)
    return graph.add_edge(START, "node").add_edge("node", END).compile(checkpointer=saver)


async def at_once(graph: Any, handler: HumanInputHandler, *actors: str) -> tuple[Any, str]:
    """Two starts of the thread at once, under ``actors``: what the one that took it
    returned, and the actor of the other, which ran nothing."""
    both = await asyncio.gather(
        *(lg.start(graph, {}, CONFIG, handler=handler, actor=actor) for actor in actors),
        return_exceptions=True,
    )
    (won,) = [i for i, out in enumerate(both) if isinstance(out, list)]
    lost = both[1 - won]
    assert isinstance(lost, RunUnderWayError), lost
    assert "nothing was run and nobody was asked" in str(lost)
    return both[won], actors[1 - won]


async def test_starts_at_once_under_two_actors_keep_one_scope(tmp_path: Path) -> None:
    """Both starts read the thread before either kept its scope: both kept theirs, and a
    resume under the second actor opened a request of its own, asking again. Now one takes
    the thread, the other is told another start is taking it, and started again is refused
    as a later start under another actor is."""
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    graph = asking(Gate(reads=2))
    try:
        (question,), loser = await at_once(graph, handler, "alice", "bob")
        with pytest.raises(ValueError, match=ANOTHER.format("start")):
            await lg.start(graph, {}, CONFIG, handler=handler, actor=loser)
        with pytest.raises(ValueError, match=ANOTHER.format("resume")):
            await lg.resume(graph, CONFIG, handler=handler, actor=loser)
        assert [request.pending_id for request in await handler.list_pending()] == [question]
    finally:
        await store.close()


async def test_another_graphs_thread_of_the_same_id_is_told_to_take_an_id_of_its_own(
    tmp_path: Path,
) -> None:
    """Two graphs, each on its own checkpointer, share a handler's store and LangGraph's
    example thread id: the second, under another actor, was told to pass the first's actor,
    which would mix their people; it is told to give its thread an id of its own."""
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    one = {"configurable": {"thread_id": "1"}}
    try:
        assert len(await lg.start(asking(InMemorySaver()), {}, one, handler=handler, actor="al"))
        billing = asking(InMemorySaver())
        with pytest.raises(ValueError, match=r"thread_id of its own, .* \('billing:1'\)"):
            await lg.start(billing, {}, one, handler=handler, actor="bo")
        own = {"configurable": {"thread_id": "billing:1"}}
        (asked,) = await lg.start(billing, {}, own, handler=handler, actor="bo")
        request = await handler.get_request(asked)
        assert request is not None
        assert request.actor_id == "bo"
    finally:
        await store.close()


async def test_a_resume_on_another_store_is_refused_and_asks_nobody(tmp_path: Path) -> None:
    """A handler over another store found no mark of the thread's scope, took the thread for
    one started before the marks were kept, and asked again about its interrupt."""
    first = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=first)
    try:
        await _refused_on_another_store(handler, tmp_path)
    finally:
        await first.close()


async def _refused_on_another_store(handler: HumanInputHandler, tmp_path: Path) -> None:
    graph = asking(InMemorySaver())
    (question,) = await lg.start(graph, {}, CONFIG, handler=handler, actor="alice")
    store = SQLiteStore(tmp_path / "other.db")
    other = HumanInputHandler(store=store)
    says = r"langgraph.{}\(\): thread 't-scope' was started on another store than this handler's"
    try:
        with pytest.raises(ValueError, match=says.format("resume")):
            await lg.resume(graph, CONFIG, handler=other, actor="alice")
        with pytest.raises(ValueError, match=says.format("start")):
            await lg.start(graph, {}, CONFIG, handler=other, actor="alice")
        assert await other.list_pending() == []
    finally:
        await store.close()
    assert await handler.aresolve(question, "blue", by="alice")
    assert await lg.resume(graph, CONFIG, handler=handler, actor="alice") == []
    assert (await graph.aget_state(CONFIG)).values == {"colour": "blue"}


async def test_a_thread_started_on_the_memory_store_asks_again_after_a_restart() -> None:
    """The memory store's marks and requests end with its process: a thread it started,
    resumed on a new memory store (the process restarted, the checkpointer kept), is not
    refused for good as one started on another store; it asks again, as nothing is left."""
    graph = asking(InMemorySaver())
    (question,) = await lg.start(graph, {}, CONFIG, handler=HumanInputHandler(), actor="alice")
    restarted = HumanInputHandler()
    (again,) = await lg.resume(graph, CONFIG, handler=restarted, actor="alice")
    assert again != question
    assert await restarted.aresolve(again, "blue", by="alice")
    assert await lg.resume(graph, CONFIG, handler=restarted, actor="alice") == []
    assert (await graph.aget_state(CONFIG)).values == {"colour": "blue"}


async def test_a_thread_started_before_its_scope_was_kept_goes_on_as_asked(
    handler: HumanInputHandler,
) -> None:
    """Its checkpoints say nothing of a scope and its store keeps none: resumes open its
    requests and re-attach to them, and its resumed checkpoints still say nothing."""

    def node(state: State) -> State:
        return {"colour": [interrupt("Which colour?"), interrupt("Which shade?")]}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node")
    app = graph.add_edge("node", END).compile(checkpointer=InMemorySaver())
    await app.ainvoke({}, CONFIG)  # where a start that kept no scope left the thread
    (colour,) = await lg.resume(app, CONFIG, handler=handler, actor="alice")
    assert await lg.resume(app, CONFIG, handler=handler, actor="alice") == [colour]
    assert await handler.aresolve(colour, "blue", by="alice")
    (shade,) = await lg.resume(app, CONFIG, handler=handler, actor="alice")
    assert await handler.aresolve(shade, "dark", by="alice")
    assert await lg.resume(app, CONFIG, handler=handler, actor="alice") == []
    state = await app.aget_state(CONFIG)
    assert state.values == {"colour": ["blue", "dark"]}
    assert not [key for key in state.metadata if key.startswith("roomkit")]


async def test_starts_at_once_under_one_actor_run_the_graph_once(tmp_path: Path) -> None:
    """The second took the first's scope for another actor's, in the moment between the
    first's claim and its marks, and said the thread was started under another actor or
    room. Now it says another start is taking the thread, and re-attaches once it returned."""
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    graph = asking(Gate(reads=2))
    try:
        won, _ = await at_once(graph, handler, "alice", "alice")
        assert await lg.start(graph, {}, CONFIG, handler=handler, actor="alice") == won
    finally:
        await store.close()


def kept_write(prefix: str) -> bytes:
    """What the write keeping the thread's scope for good, on a Redis store at ``prefix``,
    sends to the server."""
    key = f"{prefix}:ledger:resume:lg-scoped:t-scope".encode()
    return b"$3\r\nSET\r\n$%d\r\n%s\r\n" % (len(key), key)


async def start_ended(relay: Relay, prefix: str, ending: str) -> None:
    """Alice's start, ended by ``ending`` (``"cancelled"`` or ``"killed"``, in a process of
    its own) while its write keeping the thread's scope for good is on its way."""
    held = relay.hold(kept_write(prefix))
    if ending == "killed":
        script = Path(__file__).with_name("langgraph_starter.py")
        child = await asyncio.create_subprocess_exec(
            sys.executable, str(script), relay.url, prefix, cwd=Path(__file__).parents[2]
        )
        waits = asyncio.ensure_future(held.wait()), asyncio.ensure_future(child.wait())
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        assert held.is_set(), f"the start ended first ({child.returncode})"
        child.kill()
        assert await child.wait() == -signal.SIGKILL
        return
    store = RedisStore(relay.url, prefix=prefix)
    try:
        handler = HumanInputHandler(store=store)
        graph = asking(InMemorySaver())
        start = asyncio.ensure_future(lg.start(graph, {}, CONFIG, handler=handler, actor="alice"))
        await held.wait()
        start.cancel()
        with pytest.raises(asyncio.CancelledError):
            await start
    finally:
        await store.close()


class Ended(NamedTuple):
    """A handler on the store where Alice's start ended, a graph, and the store's clock."""

    handler: HumanInputHandler
    graph: Any
    clock: Ahead


@pytest.fixture(params=["cancelled", "killed"])
async def ended(relay: Relay, request: pytest.FixtureRequest) -> AsyncIterator[Ended]:
    """Alice's start ended while its write keeping the thread's scope for good was on its
    way: cancelled, or killed in a process of its own."""
    prefix, clock = fresh_prefix(), Ahead()
    await start_ended(relay, prefix, request.param)
    store = RedisStore(relay.url, prefix=prefix, clock=clock)
    try:
        yield Ended(HumanInputHandler(store=store), asking(InMemorySaver()), clock)
    finally:
        await store.close()


async def test_a_start_ended_before_its_scope_was_kept_leaves_it_to_the_next(
    ended: Ended,
) -> None:
    """It kept Alice's mark for good and the thread's for a lease only: once the lease
    lapsed, Bob's start kept his too, and a resume under Alice asked again about what was
    Bob's."""
    handler, graph, clock = ended
    await clock.move(LEASE + 1)
    (question,) = await lg.start(graph, {}, CONFIG, handler=handler, actor="bob")
    with pytest.raises(ValueError, match=ANOTHER.format("resume")):
        await lg.resume(graph, CONFIG, handler=handler, actor="alice")
    assert [request.pending_id for request in await handler.list_pending()] == [question]


async def test_a_start_ended_before_its_scope_was_kept_is_kept_by_the_next_one(
    ended: Ended,
) -> None:
    """Alice's start again found her mark and left the thread's on its lease: once it
    lapsed, Bob was told the thread was started on another store."""
    handler, graph, clock = ended
    (question,) = await lg.start(graph, {}, CONFIG, handler=handler, actor="alice")
    await clock.move(LEASE + 1)
    with pytest.raises(ValueError, match=ANOTHER.format("resume")):
        await lg.resume(graph, CONFIG, handler=handler, actor="bob")
    with pytest.raises(ValueError, match=ANOTHER.format("start")):
        await lg.start(graph, {}, CONFIG, handler=handler, actor="bob")
    assert [request.pending_id for request in await handler.list_pending()] == [question]
