"""A durable OpenAI Agents run whose start or resume dies while it opens the requests of a
pause: the next start or resume keeps the pause that one's model decided, opening only the
requests it lacks. Nobody is asked twice about a call, and the model is not run again."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import RunHooks, Runner, set_tracing_disabled
from tests.adapters import framework_resumers
from tests.adapters.framework_resumers import RUN_KEY, openai_agent_turns
from tests.forked_processes import ROOT
from tests.forked_processes import start as start_peer

from roomkit.adapters import openai_agents as oa
from roomkit.adapters._asking import asking
from roomkit.adapters._keys import pause_key
from roomkit.adapters._pauses import Pause
from roomkit.adapters.openai_agents._saved import SavedRuns
from roomkit.models.pending_input import PendingInput
from roomkit.stores import new_entry
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


class ModelCalls(RunHooks[Any]):
    """Counts the calls to the model."""

    def __init__(self) -> None:
        self.calls = 0

    async def on_llm_start(self, *args: Any) -> None:
        self.calls += 1


async def killed(folder: Path, mode: str) -> None:
    """Run ``framework_resumers.py mode`` on ``folder``; it dies of a SIGKILL."""
    child = await start_peer(framework_resumers.main, ROOT, mode, str(folder))
    assert await child.wait() == -signal.SIGKILL


def lapsed(folder: Path) -> SQLiteStore:
    """The store in ``folder``, read once the dead process's claim has lapsed."""
    return SQLiteStore(folder / "requests.db", clock=lambda: time.time() + 301)


async def asked(handler: HumanInputHandler, ids: list[str]) -> list[str]:
    """Whom the open requests are about, once they are ``ids``, each made for a call of the
    dead process's model."""
    pending = await handler.list_pending()
    assert sorted(request.pending_id for request in pending) == sorted(ids)
    assert all(request.tool_call_id.startswith("dead") for request in pending)
    return sorted(request.arguments["to"] for request in pending)


async def approve_all(handler: HumanInputHandler, ids: list[str]) -> None:
    for pending_id in ids:
        assert await handler.aresolve(pending_id, approve(), by="alice")


async def test_a_start_killed_while_opening_its_requests_is_kept_by_the_next_start(
    tmp_path: Path,
) -> None:
    """SIGKILL after the start opened two of its pause's three requests: the next start
    opens the third and keeps the pause, with the dead start's calls."""
    ran = tmp_path / "ran.txt"
    await killed(tmp_path, "openai_agents_start")
    store = lapsed(tmp_path)
    try:
        handler = HumanInputHandler(store=store)
        model = ModelCalls()
        again = openai_agent_turns(ran, "again", ("bob", "carol", "dave"))
        ids = await oa.start(again, "go", handler=handler, run_key=RUN_KEY, hooks=model)
        assert await asked(handler, ids) == ["bob", "carol", "dave"]
        assert model.calls == 0
        assert await oa.start(again, "go", handler=handler, run_key=RUN_KEY) == ids
        await approve_all(handler, ids)
        finish = openai_agent_turns(ran, "again")
        assert await oa.resume(finish, RUN_KEY, handler=handler) == []
    finally:
        await store.close()
    assert sorted(ran.read_text().split()) == ["bob", "carol", "dave"]


async def test_a_resume_killed_while_opening_its_next_requests_is_kept_by_the_next_resume(
    tmp_path: Path,
) -> None:
    """SIGKILL after the resume ran the approved call and opened two of its next pause's
    three requests: the next resume opens the third and keeps the pause; the approved call
    does not run again."""
    ran = tmp_path / "ran.txt"
    store = SQLiteStore(tmp_path / "requests.db")
    handler = HumanInputHandler(store=store)
    first = openai_agent_turns(ran, "first", ("bob",))
    (held,) = await oa.start(first, "go", handler=handler, run_key=RUN_KEY)
    await approve_all(handler, [held])
    await killed(tmp_path, "openai_agents_opened")
    assert ran.read_text() == "bob\n"
    later = lapsed(tmp_path)
    try:
        after = HumanInputHandler(store=later)
        model = ModelCalls()
        again = openai_agent_turns(ran, "again", ("carol", "erin", "dave"))
        ids = await oa.resume(again, RUN_KEY, handler=after, hooks=model)
        assert await asked(after, ids) == ["carol", "dave", "erin"]
        assert (model.calls, ran.read_text()) == (0, "bob\n")
        await approve_all(after, ids)
        finish = openai_agent_turns(ran, "again")
        assert await oa.resume(finish, RUN_KEY, handler=after) == []
        assert await oa.final_output(RUN_KEY, handler=after) == "done"
    finally:
        await later.close()
        await store.close()
    assert sorted(ran.read_text().split()) == ["bob", "carol", "dave", "erin"]


async def test_a_draft_a_dead_start_left_on_its_anchor_is_kept_by_the_next_start(
    handler: HumanInputHandler, tmp_path: Path
) -> None:
    """A start died once it made its anchor, before it marked its pause; the next start's
    model calls another tool first, whose anchor the key refuses: the dead start's pause is
    kept, and nobody is asked about the new start's calls."""
    ran = tmp_path / "ran.txt"
    dead = openai_agent_turns(ran, "dead", ("bob", "carol"))
    state = (await Runner.run(dead, "go")).to_state()
    asker, _ = asking(handler, oa.CHANNEL, {}, where="test")
    first = Pause(
        pause_key("oa", RUN_KEY, "dead-bob"),
        "approval",
        "send",
        {"to": "bob"},
        tool_call_id="dead-bob",
    )
    opened: list[PendingInput] = []
    await SavedRuns(asker, RUN_KEY).open(0, [first], opened)
    # The draft the dead start made its anchor with.
    draft = new_entry(
        "saved",
        run=RUN_KEY,
        attempt="dead",
        part=0,
        parts=1,
        generation=0,
        asked=[True, True],
        draft=state.to_string(),
    )
    await handler.record(opened[0].pending_id, draft)
    again = openai_agent_turns(ran, "again", ("mallory", "carol"))
    ids = await oa.start(again, "go", handler=handler, run_key=RUN_KEY)
    assert await asked(handler, ids) == ["bob", "carol"]
    await approve_all(handler, ids)
    assert await oa.resume(openai_agent_turns(ran, "again"), RUN_KEY, handler=handler) == []
    assert sorted(ran.read_text().split()) == ["bob", "carol"]
