"""A ladder's escalation worked out again (its notifier stopped, or killed, after adding the
manager and before marking the step done) adds the manager it added the first time, not the
manager's manager."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from tests.notify.recorder import Recorder

from roomkit.models.enums import ChannelType
from roomkit.notify import Directory, Ladder, Notifier, Person, escalate
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
from roomkit.tools.human_input.tool_handler import HumanInputCall

PEOPLE = Directory(
    {
        "alice": Person(email="alice@example.com", manager="bob"),
        "bob": Person(email="bob@example.com", manager="carol"),
    }
)
# The escalation's step cannot be marked done: its notifier stops with the manager added.
UNFINISHED = (
    "CREATE TRIGGER unfinished BEFORE UPDATE OF done ON roomkit_outbox "
    "WHEN NEW.item_id LIKE '%.escalate%' AND NEW.done = 1 "
    "BEGIN SELECT RAISE(ABORT, 'the step is not marked done'); END"
)


def change(path: Path, statement: str) -> None:
    with sqlite3.connect(path, timeout=30) as db:
        db.execute(statement)


async def asked_on_a_ladder(
    store: SQLiteStore, path: Path, trigger: str
) -> tuple[HumanInputHandler, asyncio.Task[str]]:
    """Alice asked, on a ladder escalating to her manager, with ``trigger`` on the outbox;
    the handler, and the task that waits for the answer."""
    handler = HumanInputHandler(store=store)
    ladder = Ladder(escalate(after=0.05, to="manager"))
    human = HumanInputToolHandler({"ask"}, timeout=60, handler=handler, ladder=ladder)
    call = HumanInputCall("room", "agent", ChannelType.AI, "tc-1", "alice")
    await store.outbox.purge(0.0)  # the outbox table, made at its first change
    await asyncio.to_thread(change, path, trigger)
    return handler, asyncio.create_task(human.ask("ask", {"question": "Merge?"}, call=call))


async def test_an_escalation_worked_out_again_adds_the_same_manager(tmp_path: Path) -> None:
    path = tmp_path / "kit.db"
    async with SQLiteStore(path) as store:
        handler, asking = await asked_on_a_ladder(store, path, UNFINISHED)
        first = Recorder()
        async with Notifier(handler, [first], directory=PEOPLE, poll=0.05):
            await first.wait_until(lambda seen: ("question_escalated", "bob") in seen)
        await asyncio.to_thread(change, path, "DROP TRIGGER unfinished")
        second = Recorder()
        async with Notifier(handler, [second], directory=PEOPLE, poll=0.05) as notifier:
            await notifier.wait_idle()
            [request] = await handler.list_pending()
            assert request.approvers == ("alice", "bob")
            assert [e["type"] for e in await handler.history(request.pending_id)].count(
                "escalated"
            ) == 1
            assert await handler.aresolve(request.pending_id, "merged", by="bob")
            assert await asking == "merged"
        assert ("question_escalated", "carol") not in first.seen() + second.seen()


# Another notifier takes the escalation's step as soon as this one claims it.
STOLEN = (
    "CREATE TRIGGER stolen AFTER UPDATE OF owner ON roomkit_outbox "
    "WHEN NEW.item_id LIKE '%.escalate%' AND NEW.owner IS NOT NULL AND NEW.owner != 'other' "
    "BEGIN UPDATE roomkit_outbox SET owner = 'other' WHERE item_id = NEW.item_id; END"
)


async def test_an_escalation_whose_step_another_notifier_took_adds_nobody(tmp_path: Path) -> None:
    """Its receipt could not be kept: the notifier holding the step now works it out from
    the request as it stands, and would go a level further past whom this one added."""
    path = tmp_path / "kit.db"
    async with SQLiteStore(path) as store:
        handler, asking = await asked_on_a_ladder(store, path, STOLEN)
        recorder = Recorder()
        async with Notifier(handler, [recorder], directory=PEOPLE, poll=0.05):
            await recorder.wait_until(lambda seen: ("question_escalated", "alice") in seen)
            [request] = await handler.list_pending()
            assert request.approvers == ()  # nobody added: still asked of alice alone
            assert await handler.aresolve(request.pending_id, "merged", by="alice")
            assert await asking == "merged"
        assert ("question_escalated", "bob") not in recorder.seen()
